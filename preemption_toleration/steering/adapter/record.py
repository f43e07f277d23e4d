"""What this replica's steering did, in its memory: the preemptors it steered (in progress while a victim
it deleted is still there), when it last acted for each, those whose room another pod took, and when it
last cleared each blocking nomination. Each kept within KEPT_ENTRIES, the oldest going first; what the
other replicas did is read from their Leases (`replicas`)."""

from __future__ import annotations

import logging
from typing import Any

from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.pod import SlimPod
from preemption_toleration.steering.plan import Declined, NotSteered, SteeringPlan, fits_on

logger = logging.getLogger("preemption_toleration.steering")
QUEUE_LIMIT = 1000  # refused victims waiting for steering
KEPT_ENTRIES = 10 * QUEUE_LIMIT

Victims = tuple[tuple[str, str, str], ...]  # (namespace, name, UID) of each


def remember(memory: dict[str, Any], key: str, value: Any) -> None:
    """Kept within KEPT_ENTRIES entries: the oldest goes first."""
    memory.pop(key, None)
    memory[key] = value
    if len(memory) > KEPT_ENTRIES:
        del memory[next(iter(memory))]


class SteeringRecord:
    def __init__(self) -> None:
        self.recent: dict[str, float] = {}  # preemptor UID -> when this replica last acted or audited
        # preemptor UID -> (node, victims) this replica steered it to: in progress while a victim is there
        self.steered: dict[str, tuple[str, Victims]] = {}
        self.cleared: dict[str, float] = {}  # pod UID -> when its blocking nomination was last cleared
        self.room_taken: set[str] = set()  # preemptors steered whose room another pod took: their Lease is retaken

    def acted(self, uid: str, at: float) -> None:
        remember(self.recent, uid, at)

    def in_progress(self, plan: SteeringPlan) -> None:
        """The plan's first write is made: in progress while its victims are there (`still_terminating`)."""
        victims = tuple((pod.namespace, pod.name, pod.uid) for pod in plan.to_delete)
        remember(self.steered, plan.preemptor.uid, (plan.node, victims))

    def forget(self, uid: str) -> None:
        """An action given up: neither in progress nor lately steered."""
        self.steered.pop(uid, None)
        self.recent.pop(uid, None)

    def still_terminating(self, preemptor_uid: str, view: ClusterView) -> NotSteered | None:
        """In progress: victims this replica deleted for the preemptor are still in the cache."""
        steered = self.steered.get(preemptor_uid)
        if steered is None:
            return None
        node, victims = steered
        left = [f"{n}/{v}" for n, v, uid in victims if (pod := view.pods.get((n, v))) is not None and pod.uid == uid]
        if not left:
            return None
        return NotSteered(Declined.IN_PROGRESS, f"its victims on {node} are still terminating: {', '.join(left)}")

    def room_was_taken(self, preemptor: SlimPod, view: ClusterView) -> bool:
        """Steered by this replica, its victims gone, and yet the preemptor, still pending, does not fit on the
        node it was steered to beside the pods placed there: another pod took the room (the stock scheduler may
        have preempted the same victims for a pod it served first). Forgotten, to be planned again without
        waiting for the window, its Lease retaken."""
        steered = self.steered.get(preemptor.uid)
        if steered is None or self.still_terminating(preemptor.uid, view) is not None:
            return False
        node = steered[0]
        if fits_on(preemptor, node, view):
            return False
        logger.info(
            "a steered preemptor's room was taken: planned again",
            extra={"preemptor": f"{preemptor.namespace}/{preemptor.name}", "node": node},
        )
        self.forget(preemptor.uid)
        self.room_taken.add(preemptor.uid)
        if len(self.room_taken) > KEPT_ENTRIES:
            self.room_taken.clear()
        return True

    def retaken(self, uid: str) -> bool:
        """Whether the preemptor's Lease is to be retaken (its room was taken); asked once."""
        retake = uid in self.room_taken
        self.room_taken.discard(uid)
        return retake
