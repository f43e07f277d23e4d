"""Running the webhook server, the composition root: its caches, certificates, hooks and aiohttp site, its
registration once the caches are listed, and its closing. Each job is a module of its own: certificates,
self_registration, draining, heap, metrics_site."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.admission.decisions import AdmissionConfig, Needs
from preemption_toleration.core.quantities import LATEST_RULES, ResizeRules, resize_rules
from preemption_toleration.extender.adapter.extender_endpoint import ExtenderEndpoint, ExtenderHooks
from preemption_toleration.guard.adapter.group_leases import GroupClaims, LeaseStore
from preemption_toleration.guard.adapter.guard_endpoint import GuardEndpoint, GuardHooks
from preemption_toleration.guard.adapter.nudger import Nudger
from preemption_toleration.guard.adapter.partial_groups import PartialGroups
from preemption_toleration.guard.adapter.refusal_events import COMPONENT as GUARD_COMPONENT
from preemption_toleration.guard.adapter.refusal_events import RefusalEvents
from preemption_toleration.guard.verdicts import GuardConfig
from preemption_toleration.kube.client import API_ERRORS, make_api_client
from preemption_toleration.kube.events import EventRecorder
from preemption_toleration.kube.listers import serves_pod_groups, serves_workloads
from preemption_toleration.kube.version import server_minor
from preemption_toleration.kueue.adapter.worker import KueueWorker
from preemption_toleration.records.pod import PodRecord
from preemption_toleration.serving.handling import Endpoint, HeldBack, not_kept
from preemption_toleration.serving.webhook_metrics import WebhookMetrics
from preemption_toleration.steering.adapter.steerer import Steerer
from preemption_toleration.webhooks.caches import AdmissionCaches
from preemption_toleration.webhooks.certificates import serving_certificates, trust_extender_clients
from preemption_toleration.webhooks.draining import drain
from preemption_toleration.webhooks.heap import REFREEZE_EVERY_PAGES, PageFreezer, freeze_heap
from preemption_toleration.webhooks.metrics_site import serve_metrics
from preemption_toleration.webhooks.registration import Registrar
from preemption_toleration.webhooks.self_registration import guard_skipped_namespaces, register, registrar_of
from preemption_toleration.webhooks.server import WebhookApp, admission_endpoints
from preemption_toleration.webhooks.settings import WebhookSettings

logger = logging.getLogger("preemption_toleration.webhooks")


# How long a starting server waits for the PodGroups once the other caches are listed: it is ready without
# them after that (a role that misses them, say after an upgrade of the image alone, must not keep it unready).
GROUPS_START_WAIT_SECONDS = 10.0
# How long it waits for Kueue's caches and the boost's first plan of every Workload, where Kueue is installed,
# once its own caches are listed: long enough for a large cluster's Workloads; ready without them after that (its
# role may miss a kind of Kueue's, say after an upgrade of the image alone), each hold and boost waiting meanwhile.
KUEUE_START_WAIT_SECONDS = 120.0


async def _unless_stopped(work: Coroutine[Any, Any, Any], stop: asyncio.Event, timeout: float | None = None) -> None:
    """Awaits `work`, no longer than `timeout` seconds (None: however long) and not once `stop` is set."""
    done = asyncio.create_task(work)
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({done, stopped}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    for waiter in (done, stopped):
        waiter.cancel()


async def _synced_or_stopped(caches: AdmissionCaches, kueue: KueueWorker | None, stop: asyncio.Event) -> bool:
    """Waits, however long it takes (a GitOps sync may apply the CRD after us), until every cache is listed, then
    a while for the PodGroups and for Kueue's boost (`kueue`, where Kueue is installed); False if stopped first.
    Meanwhile /readyz says what is missing and each failure is logged once."""

    async def all_synced() -> None:
        for informer in caches.required():
            await informer.synced.wait()

    await _unless_stopped(all_synced(), stop)
    if not caches.synced:
        return False
    if (groups := caches.groups) is not None:
        await _unless_stopped(groups.synced.wait(), stop, GROUPS_START_WAIT_SECONDS)
        if not groups.synced.is_set():
            logger.warning(
                "podgroups not listed yet: ready without them; no decision is made about a pod that names one"
                " until they are",
                extra={"problem": caches.groups_problem()},
            )
    if kueue is not None and kueue.starting:
        await _unless_stopped(kueue.started(), stop, KUEUE_START_WAIT_SECONDS)
        if problems := kueue.starting_problems():
            logger.warning(
                "kueue's boost not started yet: ready without it; no boost is written and no Workload's creation"
                " is held until it is",
                extra={"problems": problems},
            )
        kueue.starting = False
    if stop.is_set():
        return False
    stats = [*caches.stats(), *(kueue.stats() if kueue is not None else [])]
    logger.info("caches synced", extra={"objects": {s.resource: s.objects for s in stats}})
    freeze_heap()
    if caches.pods is not None:
        caches.pods.page_listed = PageFreezer(REFREEZE_EVERY_PAGES).page_listed
    return True


@dataclass(frozen=True)
class _Shared:
    """What the server hands the features it runs: its client, caches, settings, metrics and Event recorder,
    and the list of tasks it cancels when it stops."""

    api: ApiClient
    caches: AdmissionCaches
    settings: WebhookSettings
    metrics: WebhookMetrics
    recorder: EventRecorder
    tasks: list[asyncio.Task[Any]]


def _start_steering(shared: _Shared) -> Callable[[PodRecord, str | None], asyncio.Event | None]:
    """The steerer's worker, when steering is on or in audit; what the guard calls with a refused victim."""
    settings, caches = shared.settings, shared.caches
    if settings.steering == "off":
        return lambda victim, preemptor: None
    steerer = Steerer(
        shared.api,
        caches.view,
        settings.steering,
        settings.lease_namespace,
        _holder(),
        shared.metrics.steering,
        problems=lambda: caches.problems("all"),
        generation=caches.generation,
        events=shared.recorder,
    )
    shared.tasks.append(asyncio.create_task(steerer.run_supervised(), name="steering"))
    return steerer.refused


async def _kueue_served(api: ApiClient) -> bool:
    """Whether the API server serves Kueue's Workloads, asked once, at start: the server's readiness then waits
    for their caches."""
    unknown = "could not learn whether Kueue is installed: ready without waiting for its caches"
    return await _served(serves_workloads(api), "kueue workloads", unknown)


async def _start_kueue(shared: _Shared) -> KueueWorker | None:
    """Kueue's boost, when on (`kueue.adapter.worker`), its caches counted with the server's."""
    settings, caches = shared.settings, shared.caches
    if not settings.kueue:
        return None
    kueue = KueueWorker(
        shared.api,
        logger,
        pods=caches.pod_index,
        classes=lambda: caches.view().classes,
        policies=lambda: caches.policy_store.items,
        class_generation=lambda: caches.classes.changes + caches.policies.changes,
        server_problems=lambda: caches.problems("all"),
        metrics=shared.metrics,
        events=shared.recorder,
        page_size=settings.list_page_size,
        stale_after=settings.stale_after,
        served=await _kueue_served(shared.api),
    )
    shared.metrics.track_caches(lambda: [*caches.stats(), *kueue.stats()])
    shared.tasks.extend(kueue.start())
    return kueue


def _holder() -> str:
    """This replica, as its Leases name it."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}-{os.getpid()}"


def _group_claims(shared: _Shared) -> GroupClaims:
    """Where the guard settles its decisions for victim groups with the other replicas: the Leases of the
    server's namespace (swept while PodGroups are served; none is written otherwise)."""
    namespace = shared.settings.lease_namespace
    store = LeaseStore(shared.api, namespace)
    if shared.caches.groups is not None:
        shared.tasks.append(asyncio.create_task(store.sweep_forever(), name="group-claims-sweep"))
    return GroupClaims(store, namespace, _holder(), shared.metrics.group_decided)


def _watch_partial_groups(shared: _Shared) -> None:
    """Pod groups the scheduler's preemption leaves in part, from the pod cache's watch (hooked before the
    cache's tasks first run), reported as `guard.adapter.partial_groups` says."""
    skipped = guard_skipped_namespaces(shared.settings)
    partial = PartialGroups(shared.caches.view, shared.recorder, shared.metrics.groups_left_in_part.inc, skipped)
    shared.caches.pod_index.member_preempted = partial.member_preempted


async def _resize_rules(api: ApiClient) -> ResizeRules:
    """How the cluster's scheduler counts a pod resized in place: by the API server's release."""
    minor = await server_minor(api)
    rules = LATEST_RULES if minor is None else resize_rules(minor)
    if minor is None:
        logger.warning("the API server's release is unknown: pods resized in place are counted as 1.37 does")
    logger.info("requests of pods resized in place counted", extra={"as_release": rules.release, "minor": minor})
    return rules


async def _pod_groups_served(api: ApiClient) -> bool:
    """Whether the guard caches PodGroups: the API server serves them (1.37, `GenericWorkload`). Asked once, at
    start: a cluster that turns the gate on later needs the webhook restarted."""
    unknown = "could not learn whether the API server serves PodGroups; no decision is made about a pod that names one"
    return await _served(serves_pod_groups(api), "pod groups", unknown)


async def _served(asked: Awaitable[bool], what: str, unknown: str) -> bool:
    """What discovery answered `asked` (logged as `what`); False, `unknown` logged, when it could not be learnt."""
    try:
        served = await asked
    except API_ERRORS as error:
        logger.warning(unknown, extra={"problem": str(error)})
        return False
    logger.info(what, extra={"served": served})
    return served


def _readiness(caches: AdmissionCaches, kueue: KueueWorker | None) -> Callable[[Needs], list[str]]:
    """What /readyz reports: the caches every decision needs and, while the server starts, Kueue's (not after:
    a Kueue watch that fails must not take the guard out of service)."""
    if kueue is None:
        return caches.problems
    return lambda needs: [*caches.problems(needs), *kueue.starting_problems()]


async def run_webhook(settings: WebhookSettings, stop: asyncio.Event, ready: asyncio.Event | None = None) -> None:
    api = await make_api_client(settings.kubeconfig)
    try:
        certificates = await serving_certificates(api, settings)
    except BaseException:  # unreadable files, an API server that cannot be reached: nothing else runs yet
        await api.close()
        raise
    metrics = WebhookMetrics()
    guard_enabled = settings.guard_mode != "off"
    caches = AdmissionCaches(
        api,
        logger,
        guard=guard_enabled,
        page_size=settings.list_page_size,
        stale_after=settings.stale_after,
        rules=await _resize_rules(api),
        pod_groups=guard_enabled and await _pod_groups_served(api),
        jobs=guard_enabled and settings.kueue,
    )
    metrics.track_caches(caches.stats)
    tasks = caches.tasks()
    guard: GuardHooks | None = None
    extender: ExtenderHooks | None = None
    kueue: KueueWorker | None = None
    guard_config = GuardConfig(
        preemptor_identities=tuple(settings.preemptor_identities),
        audit=settings.guard_mode == "audit",
        eviction_preemptor_priority=settings.eviction_preemptor_priority,
        refuse_in_vain=settings.steering == "on",
    )
    if guard_enabled:
        # the server's one Event recorder: the guard's refusals, steering's actions, groups left in part
        recorder = EventRecorder(client.CoreV1Api(api), GUARD_COMPONENT, logger, instance=_holder())
        tasks.append(asyncio.create_task(recorder.run(), name="events"))
        events = RefusalEvents(recorder)
        held_back: HeldBack = not_kept
        if settings.extender:
            # The expiry nudge re-queues a preemptor the extender left unschedulable when the toleration that
            # held it back ends. Without the extender the scheduler retries on its own (paced by the guard's
            # hold), so no nudge is needed, and the server writes no pod.
            nudger = Nudger(api, caches.pod_index, metrics.nudged)
            tasks.append(asyncio.create_task(nudger.run(), name="expiry-nudges"))
            held_back = nudger.hold
            # The extender reads the guard's caches and tells it the preemptor of each victim it saw.
            trust_extender_clients(settings, certificates, api.configuration.ssl_ca_cert)
            extender = ExtenderHooks(caches.view, caches.preemptors, nudger.hold, authenticated=True)
        shared = _Shared(api, caches, settings, metrics, recorder, tasks)
        steer = _start_steering(shared)
        kueue = await _start_kueue(shared)
        _watch_partial_groups(shared)
        claims = _group_claims(shared)
        guard = GuardHooks(
            caches.view,
            guard_config,
            events.record,
            held_back,
            settings.retry_hold,
            steer,
            claims,
            memory=caches.guard_memory,
        )
    tasks.append(asyncio.create_task(certificates.maintain(), name="certificates"))
    config = AdmissionConfig(operator_identities=tuple(settings.operator_identities))
    routes: list[Endpoint[Any]] = [*admission_endpoints(config, caches.view, caches.problems)]
    if guard is not None:
        routes.append(GuardEndpoint(guard, metrics, caches.problems).endpoint())
    if extender is not None:
        routes.append(ExtenderEndpoint(extender, metrics, caches.problems).endpoint())
    if kueue is not None:
        routes.append(kueue.endpoint())
    app = WebhookApp(
        routes, _readiness(caches, kueue), metrics, settings.max_body_bytes, settings.metrics_address is not None
    )
    runner = web.ServerRunner(app.build())
    await runner.setup()
    metrics_runner: web.ServerRunner | None = None
    registrar: Registrar | None = None
    try:
        site = web.TCPSite(runner, settings.host, settings.port, ssl_context=certificates.context)
        await site.start()
        if settings.metrics_address is not None:
            metrics_runner = await serve_metrics(app, settings.metrics_address)
        bound_port = runner.addresses[0][1]  # the one chosen, when settings.port is 0
        logger.info("webhook server listening", extra={"host": settings.host, "port": bound_port})
        if not await _synced_or_stopped(caches, kueue, stop):
            return
        registrar = registrar_of(api, settings, certificates, bound_port)
        if registrar is not None:
            await register(api, registrar, settings, certificates, extender is not None, tasks)
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
