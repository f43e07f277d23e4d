"""The certificate builders: chain, SANs, usages and the Kubernetes identity in client certificates."""

from __future__ import annotations

import ipaddress
import ssl
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from preemption_toleration import pki


def test_ca_is_a_self_signed_ec_p256_ca() -> None:
    ca = pki.generate_ca("test-ca")
    cert = x509.load_pem_x509_certificate(ca.cert_pem)
    assert cert.subject == cert.issuer
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    key = cert.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"
    cert.verify_directly_issued_by(cert)


def test_serving_cert_has_sans_and_server_usage() -> None:
    ca = pki.generate_ca()
    pair = pki.issue_serving_cert(
        ca, "webhook", dns_names=pki.service_dns_names("ptol", "sys"), ip_addresses=["127.0.0.1"]
    )
    cert = x509.load_pem_x509_certificate(pair.cert_pem)
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca.cert_pem))
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["ptol", "ptol.sys", "ptol.sys.svc", "ptol.sys.svc.cluster.local"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_serving_cert_needs_a_name() -> None:
    with pytest.raises(ValueError):
        pki.issue_serving_cert(pki.generate_ca(), "nameless")


def test_client_cert_carries_user_and_groups() -> None:
    ca = pki.generate_ca()
    cert = x509.load_pem_x509_certificate(pki.issue_client_cert(ca, "system:kube-scheduler", ["g1", "g2"]).cert_pem)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:kube-scheduler"
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["g1", "g2"]
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_python_tls_accepts_the_chain(tmp_path: Path) -> None:
    """A server with the serving certificate and a client trusting only the CA complete a handshake."""
    ca = pki.generate_ca()
    serving = pki.issue_serving_cert(ca, "srv", dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    (tmp_path / "srv.crt").write_bytes(serving.cert_pem)
    (tmp_path / "srv.key").write_bytes(serving.key_pem)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(tmp_path / "srv.crt", tmp_path / "srv.key")
    client_ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))

    import socket

    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(b"ok")

        thread = threading.Thread(target=serve)
        thread.start()
        with socket.create_connection(("127.0.0.1", port)) as raw:
            with client_ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                assert tls.recv(2) == b"ok"
        thread.join(5)


def test_public_key_pem_matches_private_key() -> None:
    private = pki.generate_private_key_pem()
    public = pki.public_key_pem(private)
    assert public.startswith(b"-----BEGIN PUBLIC KEY-----")
