"""kopf wiring: the operator's start and stop, its peering and probes, and the triggers of a reconcile.

Every trigger asks for the same global reconcile (see reconciler.py): a change of a policy or of a class, as
the operator's one watch of each reports it (caches.py; the policies' comes from kopf, policy_stream.py), a
failed reconcile's retry, and the resync (resync.py). Triggers are coalesced: those that arrive while a
reconcile waits or runs share the next one, which reads the operator's caches as they are then. An event that
shows an object as the last reconcile saw it (the echo of our own write) asks for nothing. No reconcile runs
before both caches have listed everything, so the first one never mistakes a not-yet-listed policy for a
deleted one and releases its classes.

The policies have one kopf handler, of events (`policy_event`), which keeps kopf's watch of them and has it
paused on a standby replica. kopf's handlers of changes (create, update, delete) would cost two patches of
every new policy, its finalizer and its last-handled configuration, which the reconcile needs neither of
(docs/operator.md): it plans from the caches, releases the classes of a policy that is gone (at once, or at
the operator's next start), and retries what failed itself.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import kopf
from kubernetes_asyncio import client

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.api.resources import ClassKind
from preemption_toleration.kube.client import make_api_client
from preemption_toleration.kube.events import EventRecorder
from preemption_toleration.kube.identity import RUN_OPERATOR_GROUP, impersonating
from preemption_toleration.kube.informer import DEFAULT_PAGE_SIZE as LIST_PAGE_SIZE
from preemption_toleration.kube.kopf_login import connection_info
from preemption_toleration.operator.caches import OperatorCaches, PolicyFeed
from preemption_toleration.operator.coalescer import Coalescer
from preemption_toleration.operator.config import OperatorConfig
from preemption_toleration.operator.reconciler import Reconciler, ReconcileResult
from preemption_toleration.operator.resync import (
    ResyncClock,
    Retry,
    reconcile_on_changes,
    resync_forever,
    standby_reason,
)

EVENTS_COMPONENT = "preemption-toleration-operator"  # the "From" of its Events in kubectl describe
POLICIES = (GROUP, VERSION, PLURAL)
FORMER_FINALIZER = f"{GROUP}/finalizer"
POLICY_EVENT_HANDLER = "policy_event"  # kopf's id of the policies' one handler, in its log lines

logger = logging.getLogger("preemption_toleration.operator")
registry = kopf.OperatorRegistry()


@dataclass
class OperatorState:
    """What the operator holds while it runs (set up by the startup handler, kept in kopf's memo)."""

    api: Any
    caches: OperatorCaches
    reconciler: Reconciler
    coalescer: Coalescer[ReconcileResult]
    tasks: list[asyncio.Task[None]]
    retry: Retry


# kopf's delays between retries of a failed API request (5xx, 403, 429, connection errors). With its
# default ones (54 s in all) an API server answering 503 for a minute, as during an upgrade, made kopf give
# the error up: measured with a proxy, its CRD observer then failed and the whole operator exited. kopf
# restarts a watch that stayed silent for 70 s, with its count of attempts back at the first, so with more
# than 70 s of delays a watch never gives up; any other request (a listing at start or after an expired
# watch, a patch) gives up after about 11 minutes, which stops the operator: a lasting error, such as a
# permission removed from its role, shows as a crash loop.
API_RETRY_BACKOFFS: tuple[float, ...] = (1, 1, 2, 3, 5, 8, 13, 21) + (30,) * 20


# A failed reconcile (a class write or a status patch refused) runs again this long after.
RETRY_SECONDS = 10.0


def apply_settings(settings: kopf.OperatorSettings, config: OperatorConfig) -> None:
    # The finalizer earlier releases put on every policy: kopf removes it from each (no handler of ours needs
    # one), so that a policy of theirs is not kept from deletion.
    settings.persistence.finalizer = FORMER_FINALIZER
    settings.peering.priority = config.peering_priority
    # Our Events are posted by EventRecorder, where kubectl describe finds them (kube/events.py); kopf's own,
    # about its handlers, stay in the log.
    settings.posting.enabled = False
    settings.watching.server_timeout = 300  # re-establish long watches before proxies cut them
    settings.watching.client_timeout = 330
    settings.watching.chunk_size = LIST_PAGE_SIZE  # list the policies in pages, as the other caches do
    settings.networking.error_backoffs = API_RETRY_BACKOFFS


@kopf.on.startup(registry=registry)
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    config: OperatorConfig = memo.config
    apply_settings(settings, config)
    api = await make_api_client(config.kubeconfig)
    if config.impersonate is not None:
        impersonating(api, config.impersonate, RUN_OPERATOR_GROUP)
    events = EventRecorder(client.CoreV1Api(api), EVENTS_COMPONENT, logger)
    kinds = tuple(ClassKind) if config.kueue else (ClassKind.PRIORITY_CLASS,)  # with Kueue, its classes too
    reconciler = Reconciler(api, config.field_manager, events.post, logger, metrics=memo.metrics, kinds=kinds)
    changes = asyncio.Event()
    policies: PolicyFeed = memo.policies
    policies.follow(reconciler.is_known_policy, changes.set)
    caches = OperatorCaches(
        api,
        config.field_manager,
        logger,
        policies=policies,
        is_known=reconciler.is_known,
        class_changed=lambda _: changes.set(),
        kinds=kinds,
    )

    clock = ResyncClock()
    retry = Retry(RETRY_SECONDS, changes.set)

    async def reconcile() -> ReconcileResult:
        await caches.synced()
        clock.started()
        policies, classes = caches.contents()
        result = await reconciler.reconcile(policies, classes, kinds=caches.listed_kinds())
        retry.after(failed=bool(result.failures or result.superseded))  # a change's own event may come first
        return result

    coalescer = Coalescer(reconcile, config.settle_seconds)
    # kopf has set `standalone` from the operator's arguments (no peering name) before any startup handler
    paused = None if settings.peering.standalone else standby_reason(policies)
    resync = resync_forever(
        clock=clock,
        period=config.resync_seconds,
        pending=lambda: coalescer.pending,
        reconcile=coalescer.request,
        paused=paused,
        count=memo.metrics.resynced,
        logger=logger,
    )
    on_changes = reconcile_on_changes(changes=changes, reconcile=coalescer.request, paused=paused, logger=logger)
    tasks = [
        *caches.tasks(),
        asyncio.create_task(on_changes, name="changes"),
        asyncio.create_task(resync, name="resync"),
        asyncio.create_task(events.run(), name="events"),
    ]
    memo.state = OperatorState(api, caches, reconciler, coalescer, tasks, retry)


@kopf.on.login(registry=registry)
async def login(memo: kopf.Memo, **_: Any) -> kopf.ConnectionInfo:
    api = await make_api_client(memo.config.kubeconfig)
    try:
        return connection_info(api)
    finally:
        await api.close()


@kopf.on.cleanup(registry=registry)
async def close(memo: kopf.Memo, **_: Any) -> None:
    state: OperatorState | None = memo.get("state")
    if state is not None:
        # the tasks first: the resync could otherwise ask a closed coalescer for a run nobody awaits
        state.retry.cancel()
        for task in state.tasks:
            task.cancel()
        await asyncio.gather(*state.tasks, return_exceptions=True)
        await state.coalescer.close()
        await state.api.close()


@kopf.on.event(*POLICIES, id=POLICY_EVENT_HANDLER, registry=registry)
async def policy_event(**_: Any) -> None:
    """Nothing to do: the event has reached the policies' feed before kopf calls this, and asked for a
    reconcile there. This handler is what has kopf watch the policies (and pause that watch on a standby)."""


@kopf.on.probe(id="policies", registry=registry)
async def policy_count(memo: kopf.Memo, **_: Any) -> int:
    return len(memo.state.caches.policies.store)
