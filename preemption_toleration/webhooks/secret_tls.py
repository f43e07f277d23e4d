"""Self-managed TLS for an in-cluster install: a CA and serving certificate kept in a Secret, the serving
certificate renewed before expiry (the CA goes into the configurations the server registers, registration.py).

Replicas share the Secret: the first one creates it (a replica that loses the creation race reads the
winner's), each one loads what the Secret holds and picks up a renewal made by another.
"""

from __future__ import annotations

import base64
import datetime
import logging
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration import pki
from preemption_toleration.manifests.webhook_configurations import NAME
from preemption_toleration.serving.periodic import every
from preemption_toleration.webhooks.tls import Issuer, load_pair, not_after, server_context

logger = logging.getLogger("preemption_toleration.webhooks.tls")

KEYS = ("ca.crt", "ca.key", "tls.crt", "tls.key")


def _decode(secret: Any) -> dict[str, bytes] | None:
    data = (secret.data or {}) if secret is not None else {}
    if not all(key in data for key in KEYS):
        return None
    return {key: base64.b64decode(data[key]) for key in KEYS}


def secret_body(name: str, namespace: str, ca: pki.CertKeyPair, serving: pki.CertKeyPair) -> dict[str, Any]:
    values = {"ca.crt": ca.cert_pem, "ca.key": ca.key_pem, "tls.crt": serving.cert_pem, "tls.key": serving.key_pem}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/name": NAME}},
        "data": {key: base64.b64encode(value).decode() for key, value in values.items()},
    }


class SecretCertificates:
    """The CA and serving pair in Secret `namespace/secret_name`, for `dns_names` and `ip_addresses`."""

    def __init__(
        self,
        api: ApiClient,
        namespace: str,
        secret_name: str,
        dns_names: list[str],
        ip_addresses: list[str] | None = None,
        valid_days: int = 90,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.secret_name = secret_name
        self.core = client.CoreV1Api(api)
        self.dns_names = dns_names
        self.ip_addresses = list(ip_addresses or [])
        self.valid_days = valid_days
        self.context = server_context()  # loaded by setup(), which must run before serving
        self.issuer: Issuer | None = None
        self.serving: pki.CertKeyPair | None = None

    @property
    def ca_bundle(self) -> bytes:
        assert self.issuer is not None, "setup() first"
        return self.issuer.ca.cert_pem

    @property
    def serving_pem(self) -> bytes:
        assert self.serving is not None, "setup() first"
        return self.serving.cert_pem

    def _issuer(self, ca: pki.CertKeyPair) -> Issuer:
        return Issuer(ca, self.dns_names, self.ip_addresses, self.valid_days)

    async def setup(self) -> None:
        stored = _decode(await self._read())
        if stored is None:
            self.issuer = self._issuer(pki.generate_ca("preemption-toleration-webhook-ca", valid_days=3650))
            serving = self.issuer.issue()
            try:
                await self.core.create_namespaced_secret(
                    self.namespace, secret_body(self.secret_name, self.namespace, self.issuer.ca, serving)
                )
                logger.info("certificate secret created", extra={"secret": f"{self.namespace}/{self.secret_name}"})
                self._load(serving)
                return
            except ApiException as error:
                if error.status != 409:
                    raise
                stored = _decode(await self._read())  # another replica was first: use its certificates
                if stored is None:
                    raise
        self._use(stored)

    async def _read(self) -> Any:
        try:
            return await self.core.read_namespaced_secret(self.secret_name, self.namespace)
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def _use(self, stored: dict[str, bytes]) -> None:
        self.issuer = self._issuer(pki.CertKeyPair(stored["ca.crt"], stored["ca.key"]))
        self._load(pki.CertKeyPair(stored["tls.crt"], stored["tls.key"]))

    def _load(self, serving: pki.CertKeyPair) -> None:
        load_pair(self.context, serving.cert_pem, serving.key_pem)
        self.serving = serving

    async def renew_or_reload(self, now: datetime.datetime | None = None) -> None:
        """Load a renewal another replica stored, or renew ourselves when due and store it."""
        assert self.issuer is not None and self.serving is not None, "setup() first"
        stored = _decode(await self._read())
        if stored is not None and stored["tls.crt"] != self.serving.cert_pem:
            self._use(stored)
        if self.issuer.due(self.serving, now):
            renewed = self.issuer.issue()
            secret = secret_body(self.secret_name, self.namespace, self.issuer.ca, renewed)
            await self.core.replace_namespaced_secret(self.secret_name, self.namespace, secret)
            self._load(renewed)  # stored first: a replica that reloads finds what we serve
            logger.info("serving certificate renewed", extra={"notAfter": not_after(renewed.cert_pem).isoformat()})

    async def maintain(self, interval: float = 600) -> None:
        await every(interval, self.renew_or_reload, _maintenance_failed)


def _maintenance_failed(error: Exception) -> None:
    logger.warning("certificate maintenance failed", extra={"problem": repr(error)})


__all__ = ["SecretCertificates", "not_after", "secret_body"]
