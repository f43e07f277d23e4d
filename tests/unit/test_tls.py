"""Serving certificates: names, TLS versions, renewal and reload without a restart."""

import asyncio
import datetime
import os
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from cryptography import x509

from preemption_toleration import pki
from preemption_toleration.webhooks.tls import FileCertificates, GeneratedCertificates, covers, not_after


async def serve(context: ssl.SSLContext) -> tuple[web.AppRunner, int]:
    app = web.Application()

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    return runner, runner.addresses[0][1]


async def peer_certificate(port: int, ca_pem: bytes, maximum: ssl.TLSVersion | None = None) -> x509.Certificate:
    context = ssl.create_default_context(cadata=ca_pem.decode())
    if maximum is not None:
        context.minimum_version = maximum
        context.maximum_version = maximum
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost")
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    await writer.wait_closed()
    return x509.load_der_x509_certificate(der)


@pytest.fixture
async def generated() -> AsyncIterator[tuple[GeneratedCertificates, int]]:
    certificates = GeneratedCertificates(["localhost"], ["127.0.0.1"], valid_days=90)
    runner, port = await serve(certificates.context)
    yield certificates, port
    await runner.cleanup()


async def test_generated_certificate_covers_the_names_and_verifies(generated) -> None:
    certificates, port = generated
    certificate = await peer_certificate(port, certificates.ca_bundle)
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]


async def test_tls_1_2_is_the_minimum(generated) -> None:
    certificates, port = generated
    assert certificates.context.minimum_version is ssl.TLSVersion.TLSv1_2
    # a client limited to TLS 1.2 still connects
    assert await peer_certificate(port, certificates.ca_bundle, maximum=ssl.TLSVersion.TLSv1_2)


async def test_renewal_before_expiry_serves_the_new_certificate_without_restart(generated) -> None:
    certificates, port = generated
    before = await peer_certificate(port, certificates.ca_bundle)
    now = datetime.datetime.now(datetime.UTC)
    assert certificates.renew_if_due(now) is False  # fresh: 90 days left
    assert certificates.renew_if_due(not_after(certificates.serving.cert_pem) - datetime.timedelta(days=29))
    after = await peer_certificate(port, certificates.ca_bundle)  # same server, same CA bundle
    assert after.serial_number != before.serial_number


def later(*paths: Path) -> None:
    """Each file dated a second after it was written: a file rewritten within the filesystem's timestamp
    granularity of its last write would otherwise look unchanged to `FileCertificates` (no sleep needed)."""
    for path in paths:
        written = path.stat()
        os.utime(path, ns=(written.st_atime_ns, written.st_mtime_ns + 1_000_000_000))


async def test_files_are_reloaded_when_they_change(tmp_path: Path) -> None:
    ca = pki.generate_ca("test-ca")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"

    def write_pair() -> pki.CertKeyPair:
        pair = pki.issue_serving_cert(ca, "localhost", dns_names=["localhost"])
        cert.write_bytes(pair.cert_pem)
        key.write_bytes(pair.key_pem)
        return pair

    write_pair()
    certificates = FileCertificates(str(cert), str(key))
    runner, port = await serve(certificates.context)
    try:
        first = await peer_certificate(port, ca.cert_pem)
        assert certificates.reload_if_changed() is False
        second_pair = write_pair()
        later(cert, key)
        assert certificates.reload_if_changed() is True
        second = await peer_certificate(port, ca.cert_pem)
        assert second.serial_number != first.serial_number
        assert second == x509.load_pem_x509_certificate(second_pair.cert_pem)
    finally:
        await runner.cleanup()


async def test_a_certificate_written_before_its_key_keeps_the_old_pair_serving(tmp_path: Path) -> None:
    ca = pki.generate_ca("test-ca")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    first = pki.issue_serving_cert(ca, "localhost", dns_names=["localhost"])
    cert.write_bytes(first.cert_pem)
    key.write_bytes(first.key_pem)
    certificates = FileCertificates(str(cert), str(key))
    runner, port = await serve(certificates.context)
    try:
        cert.write_bytes(pki.issue_serving_cert(ca, "localhost", dns_names=["localhost"]).cert_pem)  # key not yet
        later(cert)
        with pytest.raises(ssl.SSLError):
            certificates.reload_if_changed()
        served = await peer_certificate(port, ca.cert_pem)
        assert served == x509.load_pem_x509_certificate(first.cert_pem)
    finally:
        await runner.cleanup()


async def test_files_of_a_secret_volume_are_reloaded_when_the_kubelet_swaps_them(tmp_path: Path) -> None:
    """A Secret volume (as cert-manager's Certificate gives): tls.crt -> ..data/tls.crt, where ..data links
    to a timestamped directory that the kubelet replaces atomically on each renewal."""
    ca = pki.generate_ca("test-ca")

    def publish(version: str) -> pki.CertKeyPair:
        pair = pki.issue_serving_cert(ca, "localhost", dns_names=["localhost"])
        directory = tmp_path / f"..{version}"
        directory.mkdir()
        (directory / "tls.crt").write_bytes(pair.cert_pem)
        (directory / "tls.key").write_bytes(pair.key_pem)
        (tmp_path / "..data_tmp").symlink_to(directory.name)
        (tmp_path / "..data_tmp").replace(tmp_path / "..data")  # the kubelet's atomic swap
        return pair

    first = publish("2026_11_22_01")
    for name in ("tls.crt", "tls.key"):
        (tmp_path / name).symlink_to(f"..data/{name}")
    certificates = FileCertificates(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    runner, port = await serve(certificates.context)
    try:
        assert await peer_certificate(port, ca.cert_pem) == x509.load_pem_x509_certificate(first.cert_pem)
        assert certificates.reload_if_changed() is False
        old_times = [(tmp_path / name).stat().st_mtime_ns for name in ("tls.crt", "tls.key")]
        renewed = publish("2026_11_22_02")
        for name, mtime in zip(
            ("tls.crt", "tls.key"), old_times, strict=True
        ):  # a renewal within the clock's resolution
            os.utime(tmp_path / name, ns=(mtime, mtime))
        assert certificates.reload_if_changed() is True
        assert await peer_certificate(port, ca.cert_pem) == x509.load_pem_x509_certificate(renewed.cert_pem)
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(
    ("rule", "host", "covered"),
    [
        ("an IP address in the SANs", "127.0.0.1", True),
        ("another IP address", "10.0.0.1", False),
        ("a DNS name in the SANs", "webhook.ns.svc", True),
        ("a DNS name in another case, with the root dot", "WEBHOOK.ns.svc.", True),
        ("one label under a wildcard", "a.apps.example.com", True),
        ("two labels under a wildcard", "a.b.apps.example.com", False),
        ("the wildcard's own domain", "apps.example.com", False),
        ("a DNS name not in the SANs", "webhook.other.svc", False),
    ],
)
def test_covers_checks_the_host_as_a_tls_client_would(rule: str, host: str, covered: bool) -> None:
    ca = pki.generate_ca("test-ca")
    serving = pki.issue_serving_cert(
        ca, "webhook", dns_names=["webhook.ns.svc", "*.apps.example.com"], ip_addresses=["127.0.0.1"]
    )
    assert covers(serving.cert_pem, host) is covered, rule
