"""Running the webhook server: caches, TLS, the aiohttp site, and (locally) its registration."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import socket
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from aiohttp import web
from kubernetes_asyncio.client import ApiClient

from preemption_toleration import pki
from preemption_toleration.admission.decisions import AdmissionConfig
from preemption_toleration.guard.decisions import GuardConfig
from preemption_toleration.kube.client import make_api_client
from preemption_toleration.logs import REGISTERED
from preemption_toleration.manifests.scheduler_extender import scheduler_extender_of
from preemption_toleration.manifests.webhook_configurations import guard_configuration, url_client_config
from preemption_toleration.webhooks.caches import AdmissionCaches
from preemption_toleration.webhooks.events import RefusalEvents
from preemption_toleration.webhooks.extender_endpoint import ExtenderHooks
from preemption_toleration.webhooks.guard_endpoint import GuardHooks
from preemption_toleration.webhooks.handling import HeldBack, not_kept
from preemption_toleration.webhooks.metrics import WebhookMetrics
from preemption_toleration.webhooks.nudger import Nudger
from preemption_toleration.webhooks.registration import Registrar, Registration, RegistrationConflict, check_free
from preemption_toleration.webhooks.secret_tls import SecretCertificates
from preemption_toleration.webhooks.server import WebhookApp
from preemption_toleration.webhooks.settings import WebhookError, WebhookSettings
from preemption_toleration.webhooks.steerer import Steerer
from preemption_toleration.webhooks.tls import (
    FileCertificates,
    GeneratedCertificates,
    ServingCertificates,
    covers,
    trust_clients,
)

logger = logging.getLogger("preemption_toleration.webhooks")
FIELD_MANAGER = "preemption-toleration-webhook"


async def _certificates(api: ApiClient, settings: WebhookSettings) -> ServingCertificates:
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


def _registrable(certificates: ServingCertificates, url: str) -> bytes:
    """The caBundle to register `url` with; WebhookError if the API server could not trust the server there."""
    ca_bundle = _ca_bundle_of(certificates)
    host = urlsplit(url).hostname or ""
    if not covers(certificates.serving_pem, host):
        raise WebhookError(
            f"the serving certificate does not cover {host}, the host of {url}, so the API server "
            "would refuse it; add it to the certificate (--dns-name, or the certificate's SANs) "
            "or register another URL"
        )
    return ca_bundle


# After the drain: how long connections accepted before the listener closed get to send their request.
LAST_REQUESTS_SECONDS = 1.0


async def drain(
    app: WebhookApp, runner: web.BaseRunner, delay: float, last_requests: float = LAST_REQUESTS_SECONDS
) -> None:
    """Before closing: not ready (a Service stops sending), and for up to `delay` seconds every answer
    closes its connection, until no client connection is left. Then the server stops listening and, for up
    to `last_requests` seconds more, answers the connections it had already accepted: one opened just before
    is about to send its request, which closing it then would fail. Then closing drops no request."""
    app.draining = True
    if delay <= 0:
        return
    logger.info("draining", extra={"seconds": delay})
    server = runner.server
    await _until_no_connection(server, delay)
    for site in runner.sites:
        await site.stop()
    # a connection accepted just now may still be in its TLS handshake, which aiohttp does not count yet
    await asyncio.sleep(0.05)
    await _until_no_connection(server, last_requests)


async def _until_no_connection(server: web.Server | None, seconds: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    # aiohttp signals no event when a connection ends: poll
    while loop.time() < deadline and server is not None and server.connections:  # noqa: ASYNC110
        await asyncio.sleep(0.05)


async def _synced_or_stopped(caches: AdmissionCaches, stop: asyncio.Event) -> bool:
    """Waits, however long it takes (a GitOps sync may apply the CRD after us), until every cache is listed;
    False if stopped first. Meanwhile /readyz says what is missing and each failure is logged once."""

    async def all_synced() -> None:
        for informer in caches.required():
            await informer.synced.wait()

    synced = asyncio.create_task(all_synced())
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({synced, stopped}, return_when=asyncio.FIRST_COMPLETED)
    for waiter in (synced, stopped):
        waiter.cancel()
    if not caches.synced:
        return False
    logger.info("caches synced", extra={"objects": {s.resource: s.objects for s in caches.stats()}})
    freeze_heap()
    if caches.pods is not None:
        caches.pods.page_listed = PageFreezer(REFREEZE_EVERY_PAGES).page_listed
    return True


def freeze_heap() -> int:
    """Moves every object alive now (modules, schemas, the objects just listed) out of the cyclic garbage
    collector's reach, after one last collection, and returns how many. A full collection, which Python
    runs whenever the long-lived heap has grown by a quarter, blocks the event loop for as long as it takes
    to traverse the heap: 175 ms with 150,000 cached pods, on the scheduler's hot path
    (benchmarks/gc_pause.py). Frozen objects are still freed when their last reference goes (a pod
    replaced or deleted); later collections traverse only what came after, so the pause grows back with the
    pods replaced since (a later listing of every pod is frozen as it comes: PageFreezer). A frozen object
    that becomes garbage in a reference cycle is never collected: the start-up heap, once, at most (slim
    pods hold no cycles)."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    logger.info("heap frozen", extra={"objects": frozen})
    return frozen


# A listing of pods after start-up (a watch that expired, an API server that lost it) replaces every pod
# record; freezing the new ones as they come keeps full collections away, as freeze_heap did at start.
REFREEZE_EVERY_PAGES = 20


class PageFreezer:
    """Every `every` pages listed: collects the young generations (about 1 ms: only what came since the
    last collection of them) and freezes what is alive. A full collection is not needed first: the old
    records a listing replaces are freed as soon as they are replaced (they hold no reference cycles), and
    the young collection frees the cyclic garbage that is not yet old. What is frozen besides the new
    records is what happened to be alive then (requests in flight, connections); those of them that become
    cyclic garbage later are never collected, a bounded cost per listing, and listings after start-up are
    rare. The last pages of a listing (fewer than `every`) stay unfrozen. benchmarks/gc_pause.py measures
    a listing of 150,000 pods with and without it."""

    def __init__(self, every: int, freeze: Callable[[], None] | None = None) -> None:
        self.every = every
        self.freeze = freeze or _collect_young_and_freeze
        self.pages = 0

    def page_listed(self) -> None:
        self.pages += 1
        if self.pages % self.every == 0:
            self.freeze()


def _collect_young_and_freeze() -> None:
    gc.collect(1)
    gc.freeze()


async def _serve_metrics(app: WebhookApp, address: str) -> web.ServerRunner:
    """/metrics alone on `address` ("host:port", plain HTTP); the runner to clean up."""
    runner = web.ServerRunner(app.metrics_server())
    await runner.setup()
    host, _, port = address.rpartition(":")
    try:
        await web.TCPSite(runner, host, int(port)).start()
    except BaseException:  # e.g. the port is taken: nothing of it left behind
        await runner.cleanup()
        raise
    bound = runner.addresses[0][1] if runner.addresses else port  # the port given for port 0
    logger.info("metrics served apart", extra={"address": f"{host}:{bound}", "url": f"http://{host}:{bound}/metrics"})
    return runner


def with_bound_port(url: str, port: int) -> str:
    """`url` with the port the server was given when it asked for port 0 (only the port: a `:0` elsewhere
    in the URL, such as in its path, is left as it is)."""
    parts = urlsplit(url)
    if parts.port != 0:
        return url
    host = parts.netloc.rsplit(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{host}:{port}"))


def _start_steering(
    api: ApiClient,
    caches: AdmissionCaches,
    settings: WebhookSettings,
    metrics: WebhookMetrics,
    tasks: list[asyncio.Task[Any]],
) -> Callable[[Mapping[str, Any], str | None], None]:
    """The steerer's worker, when steering is on or in audit; what the guard calls with a refused victim."""
    if settings.steering == "off":
        return lambda victim, preemptor: None
    holder = f"{os.environ.get('POD_NAME') or socket.gethostname()}-{os.getpid()}"
    steerer = Steerer(
        api,
        caches.extender_view,
        settings.steering,
        settings.steering_namespace,
        holder,
        lambda outcome: metrics.steering.labels(outcome).inc(),
    )
    tasks.append(asyncio.create_task(steerer.run(), name="steering"))
    return steerer.refused


def _trust_extender_clients(
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
        # in a cluster the server's own namespace too: the guard never judges the deletion of its own pods
        guard_skipped_namespaces=tuple(sorted({*settings.guard_skip_namespaces, *(service[:1] if service else ())})),
        owner_cluster_role=settings.register_owner,
    )


def _registrar(
    api: ApiClient, settings: WebhookSettings, certificates: ServingCertificates, bound_port: int
) -> Registrar | None:
    """What registers this server's configurations, when its settings ask for it."""
    registration = registration_of(settings, bound_port)
    if registration is None:
        return None
    if registration.url is not None:
        ca_bundle = _registrable(certificates, registration.url)
        return Registrar(api, registration, lambda: ca_bundle)
    return Registrar(api, registration, lambda: _ca_bundle_of(certificates))


async def _check_registration_free(api: ApiClient) -> None:
    """A local registration (`ptol run`) does not take over another's: WebhookError naming it, before this
    server registers anything (and so before `ptol run --dev-cluster` touches the scheduler)."""
    try:
        await check_free(api)
    except RegistrationConflict as conflict:
        raise WebhookError(str(conflict)) from None


def _ca_bundle_of(certificates: ServingCertificates) -> bytes:
    ca_bundle = certificates.ca_bundle
    if ca_bundle is None:
        raise WebhookError(
            "registering webhook configurations needs the CA that signed --cert-file: give it "
            "with --ca-file (PTOL_TLS_CA_FILE)"
        )
    return ca_bundle


def _log_extender_entry(registrar: Registrar, certificates: ServingCertificates, extender: bool) -> None:
    """For a local registration: the extender entry a KubeSchedulerConfiguration needs to call this server."""
    url = registrar.registration.url
    if not extender or url is None:
        return
    ca_bundle = _ca_bundle_of(certificates)
    registered_guard = guard_configuration(lambda path: url_client_config(url, path, ca_bundle))
    logger.info(
        "scheduler extender entry (KubeSchedulerConfiguration `extenders`)",
        extra={"extender": scheduler_extender_of(registered_guard)},
    )


async def run_webhook(settings: WebhookSettings, stop: asyncio.Event, ready: asyncio.Event | None = None) -> None:
    api = await make_api_client(settings.kubeconfig)
    try:
        certificates = await _certificates(api, settings)
    except BaseException:  # unreadable files, an API server that cannot be reached: nothing else runs yet
        await api.close()
        raise
    metrics = WebhookMetrics()
    guard_enabled = settings.guard_mode != "off"
    caches = AdmissionCaches(
        api, logger, guard=guard_enabled, page_size=settings.list_page_size, stale_after=settings.stale_after
    )
    metrics.track_caches(caches.stats)
    tasks = caches.tasks()
    guard: GuardHooks | None = None
    extender: ExtenderHooks | None = None
    guard_config = GuardConfig(
        preemptor_identities=tuple(settings.preemptor_identities),
        audit=settings.guard_mode == "audit",
        eviction_preemptor_priority=settings.eviction_preemptor_priority,
        refuse_in_vain=settings.steering == "on",
    )
    if guard_enabled:
        events = RefusalEvents(api)
        tasks.append(asyncio.create_task(events.run(), name="guard-events"))
        held_back: HeldBack = not_kept
        if settings.extender:
            # The expiry nudge re-queues a preemptor the extender left unschedulable when the toleration that
            # held it back ends. Without the extender the scheduler retries on its own (paced by the guard's
            # hold), so no nudge is needed, and the server writes no pod.
            nudger = Nudger(api, caches.pod_index, lambda outcome: metrics.nudges.labels(outcome).inc())
            tasks.append(asyncio.create_task(nudger.run(), name="expiry-nudges"))
            held_back = nudger.hold
            # The extender reads the guard's caches and tells it the preemptor of each victim it saw.
            _trust_extender_clients(settings, certificates, api.configuration.ssl_ca_cert)
            extender = ExtenderHooks(caches.extender_view, caches.preemptors, nudger.hold, authenticated=True)
        steer = _start_steering(api, caches, settings, metrics, tasks)
        guard = GuardHooks(caches.guard_snapshot, guard_config, events.record, held_back, settings.retry_hold, steer)
    tasks.append(asyncio.create_task(certificates.maintain(), name="certificates"))
    app = WebhookApp(
        caches.snapshot,
        caches.problems,
        AdmissionConfig(operator_identities=tuple(settings.operator_identities)),
        metrics,
        settings.max_body_bytes,
        guard,
        extender,
        metrics_apart=settings.metrics_address is not None,
    )
    runner = web.ServerRunner(app.build())
    await runner.setup()
    metrics_runner: web.ServerRunner | None = None
    registrar: Registrar | None = None
    try:
        site = web.TCPSite(runner, settings.host, settings.port, ssl_context=certificates.context)
        await site.start()
        if settings.metrics_address is not None:
            metrics_runner = await _serve_metrics(app, settings.metrics_address)
        bound_port = runner.addresses[0][1]  # the one chosen, when settings.port is 0
        logger.info("webhook server listening", extra={"host": settings.host, "port": bound_port})
        if not await _synced_or_stopped(caches, stop):
            return
        registrar = _registrar(api, settings, certificates, bound_port)
        if registrar is not None:
            if not registrar.registration.kept_on_exit:
                await _check_registration_free(api)
            await registrar.apply()
            tasks.append(asyncio.create_task(registrar.maintain(), name="registration"))
            logger.info(REGISTERED, extra={"calls": settings.register_service or registrar.registration.url})
            _log_extender_entry(registrar, certificates, extender is not None)
        if ready is not None:
            ready.set()
        await stop.wait()
    finally:
        if registrar is not None:
            await registrar.withdraw()
        await drain(app, runner, settings.shutdown_delay)
        await runner.cleanup()
        if metrics_runner is not None:
            await metrics_runner.cleanup()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await api.close()
