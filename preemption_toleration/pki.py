"""Pure certificate builders (EC P-256, `cryptography`): a CA, serving and client certificates.

Nothing here touches files or the network; every function returns PEM bytes, so the local control plane, the
webhook server and tests can write them wherever they need.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_VALID_DAYS = 365
# Backdate certificates a little so a clock that is slightly behind does not reject them.
_CLOCK_SKEW = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class CertKeyPair:
    """A certificate and its private key, both PEM (key in unencrypted PKCS#8)."""

    cert_pem: bytes
    key_pem: bytes


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    """Signing for every certificate (ECDSA keys); signing certificates and CRLs for the CA only."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def generate_private_key_pem() -> bytes:
    """A fresh EC P-256 private key as unencrypted PKCS#8 PEM (e.g. a service-account signing key)."""
    return _key_to_pem(ec.generate_private_key(ec.SECP256R1()))


def public_key_pem(private_key_pem: bytes) -> bytes:
    """The SubjectPublicKeyInfo PEM of a PEM private key."""
    key = serialization.load_pem_private_key(private_key_pem, password=None)
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def generate_ca(common_name: str = "preemption-toleration-ca", *, valid_days: int = DEFAULT_VALID_DAYS) -> CertKeyPair:
    """A self-signed CA certificate that may sign leaf certificates (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + datetime.timedelta(days=valid_days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertKeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_to_pem(key))


def issue_serving_cert(
    ca: CertKeyPair,
    common_name: str,
    *,
    dns_names: Sequence[str] = (),
    ip_addresses: Sequence[str] = (),
    valid_days: int = DEFAULT_VALID_DAYS,
) -> CertKeyPair:
    """A TLS server certificate signed by `ca`, valid for the given DNS names and IP addresses.

    Clients check only the SANs, so at least one DNS name or IP address is required.
    """
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
    return _issue(
        ca,
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]),
        usages=[ExtendedKeyUsageOID.SERVER_AUTH],
        sans=sans,
        valid_days=valid_days,
    )


def issue_client_cert(
    ca: CertKeyPair,
    common_name: str,
    organizations: Sequence[str] = (),
    *,
    valid_days: int = DEFAULT_VALID_DAYS,
) -> CertKeyPair:
    """A TLS client certificate: Kubernetes reads CN as the user name and each O as a group."""
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return _issue(
        ca,
        x509.Name(attributes),
        usages=[ExtendedKeyUsageOID.CLIENT_AUTH],
        sans=[],
        valid_days=valid_days,
    )


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The DNS names under which an in-cluster Service is reached."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def _issue(
    ca: CertKeyPair,
    subject: x509.Name,
    *,
    usages: list[x509.ObjectIdentifier],
    sans: list[x509.GeneralName],
    valid_days: int,
) -> CertKeyPair:
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise TypeError("the CA key must be an EC key")
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + datetime.timedelta(days=valid_days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return CertKeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_to_pem(key))


def _key_to_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)
