"""The server's registration of its own webhook configurations, as its settings ask: what to register
(`registration_of`, pure), with which caBundle, and applying it once the server is ready."""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kubernetes_asyncio.client import ApiClient

from preemption_toleration.logs import REGISTERED
from preemption_toleration.manifests.scheduler_extender import scheduler_extender_of
from preemption_toleration.manifests.webhook_configurations import guard_configuration, url_client_config
from preemption_toleration.webhooks.certificates import ca_bundle_of
from preemption_toleration.webhooks.registration import Registrar, Registration, RegistrationConflict, check_free
from preemption_toleration.webhooks.settings import WebhookError, WebhookSettings
from preemption_toleration.webhooks.tls import ServingCertificates, covers

logger = logging.getLogger("preemption_toleration.webhooks")


def with_bound_port(url: str, port: int) -> str:
    """`url` with the port the server was given when it asked for port 0 (only the port: a `:0` elsewhere
    in the URL, such as in its path, is left as it is)."""
    parts = urlsplit(url)
    if parts.port != 0:
        return url
    host = parts.netloc.rsplit(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{host}:{port}"))


def registration_of(settings: WebhookSettings, bound_port: int | None = None) -> Registration | None:
    """What the settings ask this server to register, if anything (pure). `bound_port`: the port it was given
    when it asked for port 0."""
    url = settings.register_url
    if url is not None and bound_port is not None:
        url = with_bound_port(url, bound_port)
    service = None
    if settings.register_service:
        namespace, _, name = settings.register_service.partition("/")
        service = (namespace, name)
    if url is None and service is None:
        return None
    return Registration(
        url=url,
        service=service,
        admission=settings.admission_webhooks,
        guard=settings.guard_mode != "off",
        guard_failure_policy=settings.guard_failure_policy,
        preemptor_identities=list(settings.preemptor_identities),
        every_eviction=settings.eviction_preemptor_priority is not None,
        guard_skipped_namespaces=guard_skipped_namespaces(settings),
        owner_cluster_role=settings.register_owner,
        kueue=settings.kueue and settings.guard_mode != "off",  # Kueue's boost runs beside the guard's caches
    )


def guard_skipped_namespaces(settings: WebhookSettings) -> tuple[str, ...]:
    """The namespaces the guard is never sent, by name: `--guard-skip-namespace`, and in a cluster the server's
    own namespace too (the guard never judges the deletion of its own pods)."""
    own = settings.register_service.partition("/")[0] if settings.register_service else None
    return tuple(sorted({*settings.guard_skip_namespaces, *([own] if own else [])}))


def registrar_of(
    api: ApiClient, settings: WebhookSettings, certificates: ServingCertificates, bound_port: int
) -> Registrar | None:
    """What registers this server's configurations, when its settings ask for it."""
    registration = registration_of(settings, bound_port)
    if registration is None:
        return None
    if registration.url is not None:
        ca_bundle = _registrable_at(certificates, registration.url)
        return Registrar(api, registration, lambda: ca_bundle)
    return Registrar(api, registration, lambda: ca_bundle_of(certificates))


async def check_registration_free(api: ApiClient) -> None:
    """A local registration (`ptol run`) does not take over another's: WebhookError naming it, before this
    server registers anything (and so before `ptol run --dev-cluster` touches the scheduler)."""
    try:
        await check_free(api)
    except RegistrationConflict as conflict:
        raise WebhookError(str(conflict)) from None


def _registrable_at(certificates: ServingCertificates, url: str) -> bytes:
    """The caBundle to register `url` with; WebhookError if the API server could not trust the server there."""
    ca_bundle = ca_bundle_of(certificates)
    host = urlsplit(url).hostname or ""
    if not covers(certificates.serving_pem, host):
        raise WebhookError(
            f"the serving certificate does not cover {host}, the host of {url}, so the API server "
            "would refuse it; add it to the certificate (--dns-name, or the certificate's SANs) "
            "or register another URL"
        )
    return ca_bundle


async def register(
    api: ApiClient,
    registrar: Registrar,
    settings: WebhookSettings,
    certificates: ServingCertificates,
    extender: bool,
    tasks: list[asyncio.Task[Any]],
) -> None:
    """Applies the configurations and keeps them applied (a task added to `tasks`); a local registration
    (`ptol run`) first checks that it takes over no other's. `extender`: the extender endpoint is served."""
    if not registrar.registration.kept_on_exit:
        await check_registration_free(api)
    await registrar.apply()
    tasks.append(asyncio.create_task(registrar.maintain(), name="registration"))
    logger.info(REGISTERED, extra={"calls": settings.register_service or registrar.registration.url})
    _log_extender_entry(registrar, certificates, extender)


def _log_extender_entry(registrar: Registrar, certificates: ServingCertificates, extender: bool) -> None:
    """For a local registration: the extender entry a KubeSchedulerConfiguration needs to call this server."""
    url = registrar.registration.url
    if not extender or url is None:
        return
    ca_bundle = ca_bundle_of(certificates)
    registered_guard = guard_configuration(lambda path: url_client_config(url, path, ca_bundle))
    logger.info(
        "scheduler extender entry (KubeSchedulerConfiguration `extenders`)",
        extra={"extender": scheduler_extender_of(registered_guard)},
    )
