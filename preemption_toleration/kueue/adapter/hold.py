"""The webhook on Workloads' creation: a Workload that may take protected ones below their minimum is created
only once their boosts are written (`Booster.before_pending`, at most HOLD_SECONDS), so that Kueue, which tries a
new Workload at once, never tries it against an unboosted victim. It always allows: it holds, never refuses
(registered with failurePolicy Ignore: while it is down, the worker's own plans write the boosts once the
Workload is seen, racing Kueue's first try, which the backstop reports)."""

from __future__ import annotations

import logging
import time

from preemption_toleration.api.admission import ALLOWED, AdmissionReview
from preemption_toleration.api.paths import KUEUE_WORKLOADS_PATH
from preemption_toleration.api.resources import KUEUE_GROUP, WORKLOADS
from preemption_toleration.kueue.adapter.booster import Booster
from preemption_toleration.kueue.adapter.workloads import is_pending
from preemption_toleration.records.workload import workload_record
from preemption_toleration.serving.handling import Endpoint, Reply, admission_answer, review_reader

logger = logging.getLogger("preemption_toleration.kueue")

NAME = "kueue-workloads"  # the endpoint's name, in the server's metrics
_ALLOW = Reply(ALLOWED)


class HoldEndpoint:
    def __init__(self, booster: Booster) -> None:
        self.booster = booster

    def endpoint(self) -> Endpoint[AdmissionReview]:
        read = review_reader(KUEUE_WORKLOADS_PATH, (KUEUE_GROUP, WORKLOADS))
        return Endpoint(KUEUE_WORKLOADS_PATH, NAME, read, self.handle, admission_answer)

    async def handle(self, review: AdmissionReview) -> Reply:
        request = review.request
        if request.operation != "CREATE" or request.dry_run or request.object is None:
            return _ALLOW  # a dry run writes nothing (sideEffects: NoneOnDryRun)
        workload = workload_record(request.object)
        if not is_pending(workload):
            return _ALLOW
        priority = workload.effective_priority()
        started = time.monotonic()
        written = await self.booster.before_pending(priority)
        if written:
            logger.info(
                "kueue workload's creation held for the boosts it needs",
                extra={
                    "workload": f"{request.namespace or ''}/{workload.name}",
                    "effective_priority": priority,
                    "boosts_written": written,
                    "seconds": round(time.monotonic() - started, 3),
                },
            )
        return _ALLOW
