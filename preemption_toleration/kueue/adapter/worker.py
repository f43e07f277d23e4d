"""Kueue's part of a webhook server, assembled in one place: the watches of Workloads, WorkloadPriorityClasses and
ClusterQueues, the booster that plans and writes each Workload's boost, the endpoint that holds a Workload's
creation until the boosts it needs are written, and the policies' `PriorityBoost` condition. The server hands it
what it shares (the pod index, the PriorityClasses and policies, the Event recorder, the metrics), runs its tasks
and serves its endpoint."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.resources import CLUSTER_QUEUES, ClassKind
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.kube import listers
from preemption_toleration.kube.events import EventRecorder
from preemption_toleration.kube.informer import CacheStats, DictStore, Informer
from preemption_toleration.kueue.adapter.booster import Booster
from preemption_toleration.kueue.adapter.cluster_queues import ClusterQueueStore
from preemption_toleration.kueue.adapter.hold import HoldEndpoint
from preemption_toleration.kueue.adapter.policy_conditions import PolicyConditions
from preemption_toleration.kueue.adapter.workloads import WorkloadStore
from preemption_toleration.kueue.adapter.writes import BoostWrites
from preemption_toleration.records.policy import PolicyView
from preemption_toleration.records.priority_class import ClassView, class_view
from preemption_toleration.serving.handling import Endpoint
from preemption_toleration.serving.webhook_metrics import WebhookMetrics

KIND = ClassKind.WORKLOAD_PRIORITY_CLASS
NOT_PLANNED = "the booster has not planned every Workload yet"


class KueueWorker:
    """The Workloads', WorkloadPriorityClasses' and ClusterQueues' caches and the booster that reads them."""

    def __init__(
        self,
        api: ApiClient,
        logger: logging.Logger,
        *,
        pods: PodIndex,
        classes: Callable[[], Mapping[str, ClassView]],
        policies: Callable[[], Mapping[str, PolicyView]],
        class_generation: Callable[[], int],
        server_problems: Callable[[], list[str]],
        metrics: WebhookMetrics,
        events: EventRecorder,
        page_size: int,
        stale_after: float,
        served: bool = True,
    ) -> None:
        """`classes`, `policies` and `class_generation`: the server's PriorityClasses and policies, and a count
        that changes with either; `server_problems`: what keeps the server's own caches from deciding; `served`:
        whether the API server served Kueue's Workloads when the server started (Kueue installed)."""
        self.stale_after = stale_after
        # while the server starts, its readiness waits for Kueue's caches and the booster's first plan of every
        # Workload (`starting_problems`): a replica that takes a Workload's creation before holds nothing (it knows
        # no protected Workload to boost), and Kueue tries the Workload at once
        self.starting = served
        self.server_problems = server_problems
        store = WorkloadStore()
        self.workloads = Informer("workloads", listers.workloads(api), store, logger, page_size=page_size)
        workload_classes: DictStore[ClassView] = DictStore(lambda raw: class_view(raw, None, KIND))
        self.classes = Informer(
            KIND.plural, listers.workload_priority_classes(api), workload_classes, logger, page_size=page_size
        )
        queues = ClusterQueueStore()
        self.queues = Informer(CLUSTER_QUEUES, listers.cluster_queues(api), queues, logger, page_size=page_size)
        self.booster = Booster(
            BoostWrites(api),
            store,
            pods,
            classes,
            lambda: class_generation() + self.classes.changes + queues.revision,
            self.problems,
            metrics.kueue_boosted,
            events,
            workload_classes=lambda: workload_classes.items,
            count_protected_eviction=metrics.kueue_protected_evicted,
            cluster_queues=lambda: queues.items,
        )
        self.conditions = PolicyConditions(api, lambda: self.booster.unwritten, policies, self._conditions_wait, events)

    def problems(self) -> list[str]:
        """What keeps the booster from planning: the server's caches' problems and its own watches'."""
        return [*self.server_problems(), *self._own_problems()]

    def _own_problems(self) -> list[str]:
        """Why Kueue's own caches may not be planned from (not listed yet, or stale)."""
        return [problem for informer in self.informers() if (problem := informer.health(self.stale_after))]

    def informers(self) -> tuple[Informer, ...]:
        return (self.workloads, self.classes, self.queues)

    async def started(self) -> None:
        """Returns once Kueue's caches are listed and the booster has planned every Workload from them."""
        await self.booster.planned.wait()

    def starting_problems(self) -> list[str]:
        """While the server starts (its /readyz), Kueue's caches not listed yet, or the booster's first plan of
        every Workload not made yet; none once it started."""
        if not self.starting:
            return []
        return self._own_problems() or ([] if self.booster.planned_all else [NOT_PLANNED])

    def _conditions_wait(self) -> list[str]:
        """What keeps the policies' conditions from being written: the caches, or a booster that has not planned
        every Workload since it started (a condition written then would say of the rest that all is well)."""
        if not self.booster.planned_all:
            return [*self.problems(), NOT_PLANNED]
        return self.problems()

    def stats(self) -> list[CacheStats]:
        return [self.workloads.stats(), self.classes.stats(), self.queues.stats()]

    def endpoint(self) -> Endpoint[Any]:
        """The endpoint that holds a Workload's creation until the boosts it needs are written."""
        return HoldEndpoint(self.booster).endpoint()

    def start(self) -> list[asyncio.Task[Any]]:
        """The watches and the booster, running."""
        return [
            asyncio.create_task(self.workloads.run(), name="watch-workloads"),
            asyncio.create_task(self.classes.run(), name=f"watch-{KIND.plural}"),
            asyncio.create_task(self.queues.run(), name=f"watch-{CLUSTER_QUEUES}"),
            asyncio.create_task(self.booster.run(), name="kueue-boost"),
            asyncio.create_task(self.conditions.run(), name="kueue-policy-conditions"),
        ]
