"""The server registers its own webhook configurations, once it is ready to answer them.

A configuration that calls a server that never started refuses every write it covers (failurePolicy Fail):
an image that cannot be pulled would stop every annotated PriorityClass and every policy. So no install
ships them: the server applies them once its caches are listed, as Kyverno's does, and applies them again
every few minutes (a caBundle renewed, an upgrade's changed settings). Until a server has been ready, the
cluster's writes go on as if the project were not installed.

In a cluster (`--register-service`) the configurations call the Service and stay when a replica stops,
since the others still serve; each is owned by the server's ClusterRole (`--register-owner`), so the
garbage collector deletes them with the rest of the install. Locally (`--register-url`, `ptol run`) they
call a URL and go when the process stops.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.guard.verdicts import DEFAULT_PREEMPTOR_IDENTITIES
from preemption_toleration.kube.client import APPLY_PATCH
from preemption_toleration.manifests.webhook_configurations import (
    GUARD_NAME,
    KUEUE_NAME,
    NAME,
    guard_configuration,
    kueue_configuration,
    mutating_configuration,
    service_client_config,
    url_client_config,
    validating_configuration,
)
from preemption_toleration.serving.periodic import every

logger = logging.getLogger("preemption_toleration.webhooks.registration")
FIELD_MANAGER = "preemption-toleration-webhook"
# How often a registered server applies its configurations again (a no-op apply writes nothing).
REAPPLY_SECONDS = 300.0

ClientConfig = Callable[[str], dict[str, Any]]


@dataclass(frozen=True)
class Registration:
    """Which configurations this server registers, and how the API server reaches it."""

    url: str | None = None  # locally: the server's URL; removed on exit
    service: tuple[str, str] | None = None  # in a cluster: (namespace, name) of the Service; kept on exit
    admission: bool = True  # the PriorityClass and policy webhooks
    guard: bool = True
    guard_failure_policy: str = "Ignore"
    preemptor_identities: Sequence[str] = field(default_factory=lambda: list(DEFAULT_PREEMPTOR_IDENTITIES))
    every_eviction: bool = False
    # namespaces the guard never judges, by name: kube-system by default, and in a cluster the server's own
    guard_skipped_namespaces: tuple[str, ...] = ("kube-system",)
    owner_cluster_role: str | None = None  # the ClusterRole whose deletion deletes the configurations
    kueue: bool = False  # the webhook on Kueue's Workloads' creation (`--kueue on`)

    @property
    def kept_on_exit(self) -> bool:
        return self.service is not None

    def client_config(self, ca_bundle: bytes) -> ClientConfig:
        if self.service is not None:
            namespace, name = self.service
            return lambda path: service_client_config(namespace, name, path, ca_bundle)
        assert self.url is not None, "a Registration calls a Service or a URL"
        url = self.url
        return lambda path: url_client_config(url, path, ca_bundle)


def wanted_configurations(
    registration: Registration, ca_bundle: bytes, owner: Mapping[str, Any] | None = None
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The configurations to apply, and the (kind, name) of those to delete: a component turned off since an
    earlier registration (pure)."""
    client_config = registration.client_config(ca_bundle)
    wanted: list[dict[str, Any]] = []
    unwanted: list[tuple[str, str]] = []
    if registration.admission:
        wanted += [validating_configuration(client_config), mutating_configuration(client_config)]
    else:
        unwanted += [("ValidatingWebhookConfiguration", NAME), ("MutatingWebhookConfiguration", NAME)]
    if registration.guard:
        guard = guard_configuration(
            client_config,
            registration.preemptor_identities,
            registration.every_eviction,
            registration.guard_failure_policy,
            registration.guard_skipped_namespaces,
        )
        wanted.append(guard)
    else:
        unwanted.append(("ValidatingWebhookConfiguration", GUARD_NAME))
    if registration.kueue:
        wanted.append(kueue_configuration(client_config))
    else:
        unwanted.append(("ValidatingWebhookConfiguration", KUEUE_NAME))
    if owner is not None:
        for configuration in wanted:
            configuration["metadata"]["ownerReferences"] = [dict(owner)]
    return wanted, unwanted


def owner_reference(cluster_role: Any) -> dict[str, Any]:
    """An ownerReference to `cluster_role` (a V1ClusterRole) for the garbage collector (pure)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "name": cluster_role.metadata.name,
        "uid": cluster_role.metadata.uid,
    }


class Registrar:
    """Applies this server's configurations, with the caBundle of the moment; removes them on exit when
    they were registered for a URL."""

    def __init__(self, api: ApiClient, registration: Registration, ca_bundle: Callable[[], bytes]) -> None:
        self.api = api
        self.registration = registration
        self.ca_bundle = ca_bundle
        self.admission = client.AdmissionregistrationV1Api(api)
        self.applied = False

    async def _owner(self) -> dict[str, Any] | None:
        name = self.registration.owner_cluster_role
        if name is None:
            return None
        role = await client.RbacAuthorizationV1Api(self.api).read_cluster_role(name)
        return owner_reference(role)

    async def apply(self) -> None:
        wanted, unwanted = wanted_configurations(self.registration, self.ca_bundle(), await self._owner())
        for configuration in wanted:
            patch = (
                self.admission.patch_validating_webhook_configuration
                if configuration["kind"] == "ValidatingWebhookConfiguration"
                else self.admission.patch_mutating_webhook_configuration
            )
            await patch(
                configuration["metadata"]["name"],
                configuration,
                field_manager=FIELD_MANAGER,
                force=True,
                _content_type=APPLY_PATCH,
            )
        for kind, name in unwanted:
            delete = (
                self.admission.delete_validating_webhook_configuration
                if kind == "ValidatingWebhookConfiguration"
                else self.admission.delete_mutating_webhook_configuration
            )
            with contextlib.suppress(ApiException):  # already absent (404), or never ours to delete
                await delete(name)
        self.applied = True

    async def maintain(self, interval: float = REAPPLY_SECONDS) -> None:
        """Applies again every `interval` seconds; a failure is logged (the configurations registered stay)
        and tried again next round."""
        await every(interval, self.apply, _registration_failed)

    async def withdraw(self) -> None:
        """On exit: removes what a URL registration applied (a Service's stay for the other replicas)."""
        if not self.applied or self.registration.kept_on_exit:
            return
        await unregister(self.api)


def _registration_failed(error: Exception) -> None:
    logger.warning("registering the webhook configurations failed", extra={"problem": repr(error)})


class RegistrationConflict(RuntimeError):
    """The project's configurations call another live server; the message names it and what to do."""


def caller_of(configuration: Mapping[str, Any]) -> str | None:
    """What a registered configuration calls: its first webhook's server (scheme and host:port of its URL), or
    "Service NAMESPACE/NAME" (pure)."""
    webhooks = configuration.get("webhooks") or []
    if not webhooks:
        return None
    client_config = webhooks[0].get("clientConfig") or {}
    if client_config.get("url"):
        parts = urlsplit(str(client_config["url"]))
        return f"{parts.scheme}://{parts.netloc}"  # the server, whichever webhook's path
    service = client_config.get("service") or {}
    return f"Service {service.get('namespace')}/{service.get('name')}" if service else None


async def _answers(base: str) -> bool:
    """Whether a server answers at `base` (its /healthz), whatever its certificate."""
    try:
        timeout = aiohttp.ClientTimeout(total=2)
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(f"{base}/healthz", ssl=False):
            return True
    except (aiohttp.ClientError, TimeoutError, OSError):
        return False


async def check_free(api: ApiClient) -> None:
    """Before a local registration (`ptol run`): RegistrationConflict when the project's configurations are
    registered for an installed release (a Service) or for another server that still answers (another
    `ptol run`). A registration whose server is gone (a process killed) is taken over."""
    admission = client.AdmissionregistrationV1Api(api)
    for read, kind, name in (
        (admission.read_validating_webhook_configuration, "validatingwebhookconfiguration", NAME),
        (admission.read_mutating_webhook_configuration, "mutatingwebhookconfiguration", NAME),
        (admission.read_validating_webhook_configuration, "validatingwebhookconfiguration", GUARD_NAME),
        (admission.read_validating_webhook_configuration, "validatingwebhookconfiguration", KUEUE_NAME),
    ):
        try:
            found = api.sanitize_for_serialization(await read(name))
        except ApiException as error:
            if error.status == 404:
                continue
            raise
        caller = caller_of(found)
        if caller is None:
            continue
        if caller.startswith("Service "):
            raise RegistrationConflict(
                f"{kind} {name} is registered for {caller}: an installed release (Helm chart or config/) runs on "
                "this cluster. Use it, or uninstall it before running `ptol run` here"
            )
        if await _answers(caller):
            raise RegistrationConflict(
                f"{kind} {name} is registered for {caller}, where a server still answers: another `ptol run` "
                "on this control plane. Stop it first (Ctrl-C; it removes its registrations and restores the "
                "scheduler)"
            )
        logger.warning("taking over a registration whose server is gone", extra={"configuration": name, "url": caller})


async def unregister(api: ApiClient) -> None:
    admission = client.AdmissionregistrationV1Api(api)
    for delete, name in (
        (admission.delete_validating_webhook_configuration, GUARD_NAME),
        (admission.delete_validating_webhook_configuration, KUEUE_NAME),
        (admission.delete_validating_webhook_configuration, NAME),
        (admission.delete_mutating_webhook_configuration, NAME),
    ):
        with contextlib.suppress(ApiException):
            await delete(name)
