"""Self-managed TLS against the real API server: the Secret, the caBundle, renewal, several replicas."""

from __future__ import annotations

import base64
import datetime

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.webhooks.configurations import GUARD_NAME, NAME, service_manifests
from preemption_toleration.webhooks.secret_tls import SecretCertificates
from preemption_toleration.webhooks.tls import not_after

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def _delete_configurations(admission: client.AdmissionregistrationV1Api) -> None:
    for delete, name in (
        (admission.delete_validating_webhook_configuration, NAME),
        (admission.delete_mutating_webhook_configuration, NAME),
        (admission.delete_validating_webhook_configuration, GUARD_NAME),
    ):
        try:
            await delete(name)
        except ApiException as error:
            if error.status != 404:
                raise


async def test_secret_holds_the_pair_and_the_ca_reaches_every_webhook(api: ApiClient, namespace: str) -> None:
    admission = client.AdmissionregistrationV1Api(api)
    validating, mutating, guard = service_manifests(namespace, "webhook")
    # These point at a Service that does not exist here: they are removed at once after the checks.
    await admission.create_validating_webhook_configuration(validating)
    await admission.create_mutating_webhook_configuration(mutating)
    await admission.create_validating_webhook_configuration(guard)
    try:
        first = SecretCertificates(api, namespace, "webhook-tls", ["webhook.ns.svc"])
        await first.setup()
        await first.publish_ca_bundle()
        secret = await client.CoreV1Api(api).read_namespaced_secret("webhook-tls", namespace)
        assert sorted(secret.data) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
        expected = base64.b64encode(first.ca_bundle).decode()
        for read, name in (
            (admission.read_validating_webhook_configuration, NAME),
            (admission.read_mutating_webhook_configuration, NAME),
            (admission.read_validating_webhook_configuration, GUARD_NAME),
        ):
            configuration = api.sanitize_for_serialization(await read(name))
            assert {w["clientConfig"]["caBundle"] for w in configuration["webhooks"]} == {expected}

        # a second replica uses the same CA and serving pair
        second = SecretCertificates(api, namespace, "webhook-tls", ["webhook.ns.svc"])
        await second.setup()
        assert (second.ca_bundle, second.serving) == (first.ca_bundle, first.serving)

        # the first renews when due and stores it; the second picks the renewal up
        due = not_after(first.serving_pem) - datetime.timedelta(days=1)
        await first.renew_or_reload(now=due)
        assert first.serving != second.serving
        await second.renew_or_reload()
        assert second.serving == first.serving and second.ca_bundle == first.ca_bundle
    finally:
        await _delete_configurations(admission)
