"""Self-managed TLS against the real API server: the Secret, the caBundle, renewal, several replicas."""

from __future__ import annotations

import base64
import contextlib
import datetime
from dataclasses import replace
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.manifests.webhook_configurations import GUARD_NAME, NAME
from preemption_toleration.webhooks.registration import Registrar, Registration
from preemption_toleration.webhooks.secret_tls import SecretCertificates
from preemption_toleration.webhooks.tls import not_after
from tests.integration.helpers import START_SECONDS, eventually, unique_name

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


async def test_secret_holds_the_pair_and_the_ca_reaches_every_registered_webhook(
    api: ApiClient, namespace: str
) -> None:
    admission = client.AdmissionregistrationV1Api(api)
    rbac = client.RbacAuthorizationV1Api(api)
    owner = unique_name("registration-owner")
    await rbac.create_cluster_role({"metadata": {"name": owner}, "rules": []})
    try:
        first = SecretCertificates(api, namespace, "webhook-tls", ["webhook.ns.svc"])
        await first.setup()
        secret = await client.CoreV1Api(api).read_namespaced_secret("webhook-tls", namespace)
        assert sorted(secret.data) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
        # These call a Service that does not exist here; they are removed after the checks.
        registration = Registration(service=(namespace, "webhook"), owner_cluster_role=owner)
        registrar = Registrar(api, registration, lambda: first.ca_bundle)
        await registrar.apply()
        expected = base64.b64encode(first.ca_bundle).decode()
        for read, name in (
            (admission.read_validating_webhook_configuration, NAME),
            (admission.read_mutating_webhook_configuration, NAME),
            (admission.read_validating_webhook_configuration, GUARD_NAME),
        ):
            configuration = api.sanitize_for_serialization(await read(name))
            assert {w["clientConfig"]["caBundle"] for w in configuration["webhooks"]} == {expected}
            assert {w["clientConfig"]["service"]["namespace"] for w in configuration["webhooks"]} == {namespace}
            [reference] = configuration["metadata"]["ownerReferences"]
            assert (reference["kind"], reference["name"]) == ("ClusterRole", owner)
        # a replica that stops leaves the Service's configurations to the others
        await registrar.withdraw()
        assert await admission.read_validating_webhook_configuration(NAME)
        # the admission webhooks turned off (an upgrade): the next registration deletes theirs
        await Registrar(api, replace(registration, admission=False), lambda: first.ca_bundle).apply()
        with pytest.raises(ApiException) as gone:
            await admission.read_mutating_webhook_configuration(NAME)
        assert gone.value.status == 404
        # the install deleted: the garbage collector deletes what its ClusterRole owns
        await rbac.delete_cluster_role(owner)
        await eventually(
            lambda: _exists(admission.read_validating_webhook_configuration, GUARD_NAME),
            lambda exists: not exists,
            timeout=START_SECONDS,
            what="the guard's configuration collected with its owner",
        )

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
        with contextlib.suppress(ApiException):
            await rbac.delete_cluster_role(owner)


async def _exists(read: Any, name: str) -> bool:
    try:
        await read(name)
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True
