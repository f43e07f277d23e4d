"""Serving certificates for the webhook server, made with `cryptography`; TLS 1.2 or newer only.

Three modes, one interface (`ServingCertificates`):
- `GeneratedCertificates`: a CA and a serving certificate made in memory (the local control plane);
  renewed from the same CA before expiry, without a restart.
- `FileCertificates`: files written by someone else (cert-manager), reloaded when they change; the CA
  that signed them comes from a file too, when configurations are registered with it.
- `SecretCertificates` (secret_tls.py): self-managed in a cluster, kept in a Secret that replicas share.

`SSLContext.load_cert_chain()` on the live context makes new connections use the new certificate.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import logging
import os
import ssl
import tempfile
from pathlib import Path
from typing import Protocol

from cryptography import x509

from preemption_toleration import pki

logger = logging.getLogger("preemption_toleration.webhooks.tls")


def server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def trust_clients(context: ssl.SSLContext, ca_file: str) -> None:
    """Ask every client for a certificate, and verify one it gives against the CA in `ca_file`: a certificate
    that does not verify ends the handshake. A client that gives none still connects (the API server calls
    the webhooks without one); the endpoints that need one (the scheduler extender's) check that there was."""
    context.verify_mode = ssl.CERT_OPTIONAL
    context.load_verify_locations(cafile=ca_file)


def not_after(cert_pem: bytes) -> datetime.datetime:
    return x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc


def load_pair(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    # load_cert_chain reads files: write both to a private temporary directory, then remove it.
    with tempfile.TemporaryDirectory(prefix="ptol-tls-") as directory:
        cert_path, key_path = Path(directory, "tls.crt"), Path(directory, "tls.key")
        cert_path.write_bytes(cert_pem)
        key_path.touch(mode=0o600)
        key_path.write_bytes(key_pem)
        context.load_cert_chain(cert_path, key_path)


class ServingCertificates(Protocol):
    """What the server needs of a TLS mode: the live context, the CA that clients must trust (None when
    unknown), and a task that keeps the certificate current."""

    context: ssl.SSLContext

    @property
    def ca_bundle(self) -> bytes | None: ...

    @property
    def serving_pem(self) -> bytes: ...

    async def maintain(self) -> None: ...


def covers(cert_pem: bytes, host: str) -> bool:
    """Whether a certificate's subject alternative names include `host` (an IP address or a DNS name;
    one leading `*.` wildcard label allowed), as a TLS client checks it."""
    try:
        names = (
            x509.load_pem_x509_certificate(cert_pem)
            .extensions.get_extension_for_class(x509.SubjectAlternativeName)
            .value
        )
    except x509.ExtensionNotFound:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        wanted = host.lower().rstrip(".")
        for name in names.get_values_for_type(x509.DNSName):
            name = name.lower().rstrip(".")
            if name == wanted or (name.startswith("*.") and wanted.partition(".")[2] == name[2:]):
                return True
        return False
    return address in names.get_values_for_type(x509.IPAddress)


class Issuer:
    """Issues serving certificates for fixed names from a CA, and says when one is due for renewal (a
    third of its validity left). Shared by the generated and the Secret mode."""

    def __init__(
        self, ca: pki.CertKeyPair, dns_names: list[str], ip_addresses: list[str], valid_days: int = 90
    ) -> None:
        self.ca = ca
        self.dns_names = dns_names
        self.ip_addresses = ip_addresses
        self.valid_days = valid_days

    def issue(self) -> pki.CertKeyPair:
        return pki.issue_serving_cert(
            self.ca,
            (self.dns_names or self.ip_addresses)[0],
            dns_names=self.dns_names,
            ip_addresses=self.ip_addresses,
            valid_days=self.valid_days,
        )

    def due(self, serving: pki.CertKeyPair, now: datetime.datetime | None = None) -> bool:
        now = now or datetime.datetime.now(datetime.UTC)
        return not_after(serving.cert_pem) - now <= datetime.timedelta(days=self.valid_days / 3)


class GeneratedCertificates:
    """A CA and a serving certificate made in memory, for `dns_names` and `ip_addresses`."""

    def __init__(self, dns_names: list[str], ip_addresses: list[str], valid_days: int = 90) -> None:
        self.issuer = Issuer(
            pki.generate_ca("preemption-toleration-webhook-ca", valid_days=3650), dns_names, ip_addresses, valid_days
        )
        self.context = server_context()
        self.serving = self.issuer.issue()
        load_pair(self.context, self.serving.cert_pem, self.serving.key_pem)

    @property
    def ca_bundle(self) -> bytes:
        return self.issuer.ca.cert_pem

    @property
    def serving_pem(self) -> bytes:
        return self.serving.cert_pem

    def renew_if_due(self, now: datetime.datetime | None = None) -> bool:
        """Renew once less than a third of the validity is left."""
        if not self.issuer.due(self.serving, now):
            return False
        self.serving = self.issuer.issue()
        load_pair(self.context, self.serving.cert_pem, self.serving.key_pem)
        logger.info("serving certificate renewed", extra={"notAfter": not_after(self.serving.cert_pem).isoformat()})
        return True

    async def maintain(self, interval: float = 3600) -> None:
        while True:
            await asyncio.sleep(interval)
            self.renew_if_due()


class FileCertificates:
    """A certificate and key in files, written by someone else, and the CA that signed them if known."""

    def __init__(self, cert_path: str, key_path: str, ca_path: str | None = None) -> None:
        self.cert_path = cert_path
        self.key_path = key_path
        self.ca_path = ca_path
        self.context = server_context()
        self._seen: tuple[tuple[int, int, int], ...] | None = None
        self.reload_if_changed()

    @property
    def ca_bundle(self) -> bytes | None:
        return Path(self.ca_path).read_bytes() if self.ca_path else None

    @property
    def serving_pem(self) -> bytes:
        return Path(self.cert_path).read_bytes()

    def _stamp(self) -> tuple[tuple[int, int, int], ...]:
        # A Secret volume swaps a `..data` link to a new directory: the files' inodes change, and stat()
        # follows the links to them. A file rewritten in place changes its time or size.
        return tuple(
            (found.st_ino, found.st_mtime_ns, found.st_size)
            for found in (os.stat(self.cert_path), os.stat(self.key_path))
        )

    def reload_if_changed(self) -> bool:
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        # Try the pair on a scratch context first: a certificate written before its key would fail
        # half-way and leave the live context with a certificate but no matching key.
        server_context().load_cert_chain(self.cert_path, self.key_path)
        self.context.load_cert_chain(self.cert_path, self.key_path)
        self._seen = stamp
        logger.info("serving certificate loaded", extra={"path": self.cert_path})
        return True

    async def maintain(self, interval: float = 10) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                self.reload_if_changed()
            except (OSError, ssl.SSLError, ValueError) as error:  # half-written files: keep the old pair
                logger.warning("certificate reload failed", extra={"problem": repr(error)})
