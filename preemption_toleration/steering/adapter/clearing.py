"""Clearing a nomination upstream's plugin would not have made: a pending pod nominated to a node where it
fits only if pods that tolerate it go, ahead of a preemptor placed there. The nomination is removed under
the pod's UID and only while it still names that node, at most once per CLEAR_AGAIN_SECONDS a pod."""

from __future__ import annotations

import logging
import time

from preemption_toleration.records.pod import SlimPod
from preemption_toleration.serving.webhook_metrics import SteeringMetrics
from preemption_toleration.steering.adapter.pod_writes import PodWrites
from preemption_toleration.steering.adapter.record import KEPT_ENTRIES, SteeringRecord
from preemption_toleration.steering.adapter.reports import SteeringReports
from preemption_toleration.telemetry.declared import SteeringOutcome

logger = logging.getLogger("preemption_toleration.steering")
# A blocking nomination cleared is cleared again, once the stock scheduler has made it again, no sooner. Well
# under the guard's retry hold (1 s), which paces both pods' attempts: the blocking pod nominates itself again
# at the start of each of its attempts and the preemptor tries a moment later; a limit as long as the hold
# locks the clearing in step with the preemptor's refusal, just after its attempt, and it never binds (1.35).
CLEAR_AGAIN_SECONDS = 0.25


class Clearing:
    def __init__(
        self, writes: PodWrites, record: SteeringRecord, reports: SteeringReports, metrics: SteeringMetrics, audit: bool
    ) -> None:
        self.writes = writes
        self.record = record
        self.reports = reports
        self.metrics = metrics
        self.audit = audit  # a nomination that would be cleared is logged, not cleared

    async def clear(self, pod: SlimPod, node: str, preemptor: str) -> None:
        """Clears one nomination upstream would not have made; counted, logged and told on the pod by an
        Event."""
        cleared = self.record.cleared
        last = cleared.get(pod.uid)
        if last is not None and time.monotonic() - last < CLEAR_AGAIN_SECONDS:
            return
        cleared[pod.uid] = time.monotonic()
        if len(cleared) > KEPT_ENTRIES:
            del cleared[next(iter(cleared))]
        fields = {"pod": f"{pod.namespace}/{pod.name}", "node": node, "preemptor": preemptor}
        if self.audit:
            logger.info("a blocking nomination would be cleared", extra=fields)
            return
        if not await self.writes.clear_nomination(pod, node):
            return
        self.metrics.count(SteeringOutcome.UNBLOCKED)
        logger.info("a blocking nomination cleared", extra=fields)
        self.reports.on_pod(
            pod,
            "NominationCleared",
            f"Nominated to node {node}, where it fits only if pods that tolerate it go, ahead of {preemptor}, "
            "which is placed there: cleared, as upstream's PreemptionToleration would not have nominated it",
            "Normal",
        )
