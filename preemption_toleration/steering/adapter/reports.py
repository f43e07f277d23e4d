"""What steering tells: a preemption it declined to steer (logged and counted, reported at most once per
window), and the Events it posts on the pods it acts on, all under its own component name."""

from __future__ import annotations

import logging
import time

from preemption_toleration.api.resources import ObjectRef, pod_ref
from preemption_toleration.kube.events import EventRecorder
from preemption_toleration.records.pod import SlimPod
from preemption_toleration.serving.webhook_metrics import SteeringMetrics
from preemption_toleration.steering.adapter.record import KEPT_ENTRIES
from preemption_toleration.steering.plan import Declined, NotSteered, SteeringPlan

logger = logging.getLogger("preemption_toleration.steering")
COMPONENT = "preemption-toleration-steering"
ACROSS_NODES = " (the scheduler preempts groups across nodes; steering makes a pod's preemption on one node)"


def plan_fields(plan: SteeringPlan) -> dict[str, str]:
    """A plan's log fields."""
    preemptor = plan.preemptor
    victims = ", ".join(f"{pod.namespace}/{pod.name}" for pod in plan.victims)
    return {"preemptor": f"{preemptor.namespace}/{preemptor.name}", "node": plan.node, "victims": victims}


class SteeringReports:
    def __init__(self, events: EventRecorder, metrics: SteeringMetrics, window: float) -> None:
        self.events = events
        self.metrics = metrics
        self.window = window
        self.declined: dict[tuple[str, Declined], float] = {}  # (preemptor or victim, reason) -> last report

    def not_steered(self, subject: str, result: NotSteered, preemptor: SlimPod | None) -> None:
        """Counted each time; logged at most once per window and subject, with a Warning Event on the
        preemptor when the guard alone stands for it (unjudged, or a pod group)."""
        self.metrics.count(result.reason)
        now = time.monotonic()
        key = (subject, result.reason)
        if now - self.declined.get(key, -1e9) < self.window:
            return
        if len(self.declined) > KEPT_ENTRIES:
            self.declined.clear()
        self.declined[key] = now
        logger.info(
            "preemption not steered", extra={"subject": subject, "reason": result.reason.value, "detail": result.detail}
        )
        if preemptor is not None and result.reason in (Declined.UNJUDGED, Declined.POD_GROUP):
            self.on_pod(
                preemptor, "PreemptionNotSteered", f"Not steered: {result.detail}; the guard alone stands", "Warning"
            )

    def on_pod(self, pod: SlimPod, reason: str, message: str, kind: str, related: ObjectRef | None = None) -> None:
        self.events.post(
            pod_ref(pod.namespace, pod.name, pod.uid), kind, reason, message, related=related, component=COMPONENT
        )
