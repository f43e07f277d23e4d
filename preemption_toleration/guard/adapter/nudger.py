"""The expiry nudge: once the toleration that held a pending preemptor back has ended, the preemptor is
nominated to that node and the nomination is withdrawn at once, so that the scheduler tries it again now
instead of at its periodic flush (5 minutes).

Why a nomination: with queueing hints (always on since Kubernetes 1.34), an update of a pending pod
re-queues it only when a plugin that rejected it deems the change relevant, and no plugin does for an
annotation. A pod whose `status.nominatedNodeName` changes from a node to another value is treated by the
scheduler as if it had been deleted from that node (it held resources there for lower-priority pods): pods
of lower or equal priority are moved back to the active or backoff queue, which NodeResourcesFit, the
plugin that rejects a preemptor short of room, deems relevant (kube-scheduler's
`updatePodInSchedulingQueue`, 1.35 to 1.37). The withdrawal is a JSON patch that tests for our own value,
so a nomination the scheduler wrote in between is never cleared.

The plan (`guard.nudges`) lives in memory: after a restart it is rebuilt from the next extender call or
refusal about each preemptor.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.core.times import rfc3339
from preemption_toleration.guard.nudges import Nudge, NudgePlan
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.kube.client import API_ERRORS, JSON_PATCH, MERGE_PATCH, api_problem, patch_pod_status
from preemption_toleration.records.pod import PodRecord
from preemption_toleration.telemetry.declared import NudgeOutcome

logger = logging.getLogger("preemption_toleration.guard")
MAX_WAIT_SECONDS = 60.0  # wakes at least this often, whatever the plan says
PATCH_TIMEOUT_SECONDS = 10


def nomination(nudge: Nudge) -> dict[str, Any]:
    """The first write: the preemptor nominated to the node whose toleration ended (a merge patch)."""
    return {"status": {"nominatedNodeName": nudge.node}}


def withdrawal(nudge: Nudge) -> list[dict[str, Any]]:
    """The second write: the nomination withdrawn, only if it is still ours (a JSON patch)."""
    path = "/status/nominatedNodeName"
    return [{"op": "test", "path": path, "value": nudge.node}, {"op": "remove", "path": path}]


class Nudger:
    def __init__(
        self, api: ApiClient, pods: PodIndex, count: Callable[[NudgeOutcome], None], plan: NudgePlan | None = None
    ) -> None:
        self.core = client.CoreV1Api(api)
        self.pods = pods
        self.count = count
        self.plan = plan or NudgePlan()
        self._wake = asyncio.Event()

    def hold(self, preemptor: PodRecord, node: str, until: datetime) -> None:
        """A time-limited toleration held `preemptor` back on `node` until `until` (on the request path)."""
        if self.plan.hold(preemptor, node, until, datetime.now(UTC)):
            self.count(NudgeOutcome.PLANNED)
            self._wake.set()

    def _still_pending(self, nudge: Nudge) -> bool:
        pod = self.pods.get((nudge.namespace, nudge.name))
        return pod is not None and pod.uid == nudge.uid and pod.node_name is None and pod.deletion is None

    async def _nominate_and_withdraw(self, nudge: Nudge) -> None:
        for body, content_type in ((nomination(nudge), MERGE_PATCH), (withdrawal(nudge), JSON_PATCH)):
            await patch_pod_status(self.core, nudge.namespace, nudge.name, body, content_type, PATCH_TIMEOUT_SECONDS)

    async def _send(self, nudge: Nudge) -> None:
        who = f"{nudge.namespace}/{nudge.name}"
        if not self._still_pending(nudge):
            self.count(NudgeOutcome.SKIPPED)
            logger.debug("preemptor no longer pending; no nudge", extra={"preemptor": who})
            return
        try:
            await self._nominate_and_withdraw(nudge)
        except API_ERRORS as error:
            if isinstance(error, ApiException) and error.status in (404, 422):
                # 404: deleted since the cache last saw it; 422: the test failed, the scheduler nominated it
                # itself in between (it is being scheduled)
                self.count(NudgeOutcome.SKIPPED)
                return
            self.count(NudgeOutcome.FAILED)
            again = self.plan.retry(nudge, datetime.now(UTC))
            logger.warning(
                "nudge failed",
                extra={"preemptor": who, "problem": api_problem(error), "attempt": nudge.attempt, "retrying": again},
            )
            return
        self.count(NudgeOutcome.NUDGED)
        logger.info(
            "pending preemptor nudged: a toleration that held it back has ended",
            extra={"preemptor": who, "node": nudge.node, "tolerationEnded": rfc3339(nudge.until)},
        )

    async def run(self) -> None:
        while True:
            now = datetime.now(UTC)
            for nudge in self.plan.due(now):
                try:
                    await self._send(nudge)
                except Exception:
                    self.count(NudgeOutcome.FAILED)
                    logger.exception("nudge failed", extra={"preemptor": f"{nudge.namespace}/{nudge.name}"})
            next_at = self.plan.next_at()
            wait = MAX_WAIT_SECONDS if next_at is None else (next_at - datetime.now(UTC)).total_seconds()
            self._wake.clear()
            if wait > 0:
                try:
                    await asyncio.wait_for(self._wake.wait(), min(wait, MAX_WAIT_SECONDS))
                except TimeoutError:
                    pass
