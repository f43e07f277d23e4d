"""The expiry nudge: an annotation written on a pending preemptor once the toleration that held it back
has ended, so that the scheduler tries it again at once instead of at its next periodic retry.

The plan (`guard.nudges`) lives in memory: after a restart it is rebuilt from the next extender call or
refusal about each preemptor.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.core.times import rfc3339
from preemption_toleration.guard.nudges import Nudge, NudgePlan
from preemption_toleration.inventory.pods import PodIndex
from preemption_toleration.kube.client import API_ERRORS

logger = logging.getLogger("preemption_toleration.guard")
ANNOTATION = "preemption-toleration.dev/toleration-ended"  # the end that held the preemptor back
MERGE_PATCH = "application/merge-patch+json"
MAX_WAIT_SECONDS = 60.0  # wakes at least this often, whatever the plan says
PATCH_TIMEOUT_SECONDS = 10


def nudge_patch(nudge: Nudge) -> dict[str, Any]:
    return {"metadata": {"annotations": {ANNOTATION: rfc3339(nudge.until)}}}


class Nudger:
    def __init__(
        self, api: ApiClient, pods: PodIndex, count: Callable[[str], None], plan: NudgePlan | None = None
    ) -> None:
        self.core = client.CoreV1Api(api)
        self.pods = pods
        self.count = count  # by outcome: planned, nudged, skipped, failed
        self.plan = plan or NudgePlan()
        self._wake = asyncio.Event()

    def hold(self, preemptor: Mapping[str, Any], until: datetime) -> None:
        """A time-limited toleration held `preemptor` back until `until` (called on the request path)."""
        if self.plan.hold(preemptor, until, datetime.now(UTC)):
            self.count("planned")
            self._wake.set()

    def _still_pending(self, nudge: Nudge) -> bool:
        pod = self.pods.get((nudge.namespace, nudge.name))
        return pod is not None and pod.uid == nudge.uid and pod.node_name is None and pod.deletion is None

    async def _send(self, nudge: Nudge) -> None:
        who = f"{nudge.namespace}/{nudge.name}"
        if not self._still_pending(nudge):
            self.count("skipped")
            logger.debug("preemptor no longer pending; no nudge", extra={"preemptor": who})
            return
        try:
            await self.core.patch_namespaced_pod(
                nudge.name,
                nudge.namespace,
                nudge_patch(nudge),
                _content_type=MERGE_PATCH,
                _request_timeout=PATCH_TIMEOUT_SECONDS,
            )
        except API_ERRORS as error:
            if isinstance(error, ApiException) and error.status == 404:
                self.count("skipped")  # deleted since the cache last saw it
                return
            self.count("failed")
            again = self.plan.retry(nudge, datetime.now(UTC))
            logger.warning(
                "nudge failed",
                extra={"preemptor": who, "problem": str(error)[:200], "attempt": nudge.attempt, "retrying": again},
            )
            return
        self.count("nudged")
        logger.info(
            "pending preemptor nudged: a toleration that held it back has ended",
            extra={"preemptor": who, "tolerationEnded": rfc3339(nudge.until)},
        )

    async def run(self) -> None:
        while True:
            now = datetime.now(UTC)
            for nudge in self.plan.due(now):
                try:
                    await self._send(nudge)
                except Exception:
                    self.count("failed")
                    logger.exception("nudge failed", extra={"preemptor": f"{nudge.namespace}/{nudge.name}"})
            next_at = self.plan.next_at()
            wait = MAX_WAIT_SECONDS if next_at is None else (next_at - datetime.now(UTC)).total_seconds()
            self._wake.clear()
            if wait > 0:
                try:
                    await asyncio.wait_for(self._wake.wait(), min(wait, MAX_WAIT_SECONDS))
                except TimeoutError:
                    pass
