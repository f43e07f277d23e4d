"""The server's certificates as its settings choose them (files, a Secret, or generated in memory), the CA
its registrations carry, and the CA its extender's callers are verified against."""

from __future__ import annotations

import logging

from kubernetes_asyncio.client import ApiClient

from preemption_toleration import pki
from preemption_toleration.webhooks.secret_tls import SecretCertificates
from preemption_toleration.webhooks.settings import WebhookError, WebhookSettings
from preemption_toleration.webhooks.tls import (
    FileCertificates,
    GeneratedCertificates,
    ServingCertificates,
    trust_clients,
)

logger = logging.getLogger("preemption_toleration.webhooks")


async def serving_certificates(api: ApiClient, settings: WebhookSettings) -> ServingCertificates:
    """The TLS mode the settings choose: files, a Secret, or generated in memory."""
    if settings.cert_file and settings.key_file:
        return FileCertificates(settings.cert_file, settings.key_file, settings.ca_file)
    if settings.tls_secret:
        namespace, _, secret = settings.tls_secret.partition("/")
        names = [*pki.service_dns_names(settings.service, namespace), *settings.dns_names]
        certificates = SecretCertificates(api, namespace, secret, names, settings.ip_addresses)
        await certificates.setup()
        return certificates
    return GeneratedCertificates(settings.dns_names, settings.ip_addresses)


def ca_bundle_of(certificates: ServingCertificates) -> bytes:
    ca_bundle = certificates.ca_bundle
    if ca_bundle is None:
        raise WebhookError(
            "registering webhook configurations needs the CA that signed --cert-file: give it "
            "with --ca-file (PTOL_TLS_CA_FILE)"
        )
    return ca_bundle


def trust_extender_clients(
    settings: WebhookSettings, certificates: ServingCertificates, cluster_ca: str | None
) -> None:
    """The TLS layer verifies client certificates against --extender-client-ca, by default the CA of the
    cluster this server talks to (its kubeconfig's, or in a pod its ServiceAccount's `ca.crt`), which signs
    kube-scheduler's own client certificate on kubeadm-style control planes. Without any, no caller can
    present a verified certificate, so the extender answers every call 403 (fails closed)."""
    ca_file = settings.extender_client_ca or cluster_ca
    if not ca_file:
        logger.warning(
            "the scheduler extender will refuse every call: no CA to verify its caller's client certificate "
            "(the kubeconfig names no certificate authority); give --extender-client-ca (PTOL_EXTENDER_CLIENT_CA)"
        )
        return
    trust_clients(certificates.context, str(ca_file))
    logger.info("scheduler extender callers verified", extra={"clientCA": str(ca_file)})
