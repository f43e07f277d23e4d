"""Which pending pod is the scheduler deleting this victim for?

The scheduler names no preemptor when it deletes a victim, so the guard looks for pods that could be the
one being scheduled: unbound, not terminating, of higher priority than the victim, allowed to preempt,
and able to run on the victim's node, and placed by the scheduler that marked the victim (its
`DisruptionTarget` message names it). A pod already nominated to that node comes first; when candidates
disagree, the highest priority wins (the scheduler's queue order), then the oldest.

It reads the pod index, never every pod: the pods nominated to the node, then the groups of pending
candidates (one per priority and set of constraints) from the highest priority down to the victim's.

When no pending pod could be the one, a candidate deleted in the last DEPARTED_SECONDS may be
(`infer_departed_preemptor`): the scheduler's asynchronous preemption goes on deleting the victims it chose
for a pod that is gone, a job cancelled at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass

from preemption_toleration.guard.matching import could_run_on
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.records.node import NodeRecord
from preemption_toleration.records.pod import DEFAULT_SCHEDULER, Constraints, SlimPod


def _scheduled_by(constraints: Constraints | None, scheduler: str | None) -> bool:
    """Whether `scheduler` (None: any) places a pod of these constraints."""
    if scheduler is None or constraints is None:
        return True
    return (constraints.pod["spec"].get("schedulerName") or DEFAULT_SCHEDULER) == scheduler


def _fits(pod: SlimPod, node: NodeRecord | None, scheduler: str | None) -> bool:
    return _scheduled_by(pod.constraints, scheduler) and (
        node is None or pod.constraints is None or could_run_on(pod.constraints.pod, node)
    )


def _could_be(pod: SlimPod, victim_priority: int, node: NodeRecord | None, scheduler: str | None) -> bool:
    """A pod the scheduler could be preempting the victim for, priority and placement alone."""
    return pod.priority > victim_priority and _fits(pod, node, scheduler)


DEPARTED_SECONDS = 30.0  # as long as the guard trusts a recorded preemptor


# Built on every judged request: a plain slotted class (a frozen one sets each field through
# object.__setattr__, several times slower to build). Never mutated.
@dataclass(slots=True)
class VictimPlace:
    """What inference reads of a victim: its priority, its node (by name, and its record when the cache has
    it), and the scheduler whose mark it carries (None: any scheduler may be preempting it)."""

    priority: int
    node_name: str | None
    node: NodeRecord | None = None
    scheduler: str | None = None


def infer_preemptor(place: VictimPlace, pods: PodIndex) -> SlimPod | None:
    """The pending pod the scheduler most likely preempts for, on the victim's node; only pods its
    scheduler places, when the request says which scheduler preempts (its mark's message)."""
    victim_priority, node_name, node, scheduler = place.priority, place.node_name, place.node, place.scheduler
    if node_name:
        nominated = [
            pod
            for pod in pods.nominated_to(node_name)
            if pod.pending_candidate and _could_be(pod, victim_priority, node, scheduler)
        ]
        if nominated:
            return min(nominated, key=SlimPod.queue_order)
    best: SlimPod | None = None
    for group in pods.pending_groups():
        if group.priority <= victim_priority or (best is not None and group.priority < best.priority):
            break
        if not _scheduled_by(group.constraints, scheduler):
            continue
        if node is not None and not could_run_on(group.constraints.pod, node):
            continue
        head = pods.get(group.oldest())
        if head is not None and (best is None or head.queue_order() < best.queue_order()):
            best = head
    return best


def infer_departed_preemptor(place: VictimPlace, pods: PodIndex) -> SlimPod | None:
    """Among the candidates deleted lately, the one the scheduler would have served first that could run on
    the victim's node: one nominated to it first, then the highest priority, then the oldest."""
    found = [
        pod for pod in pods.departed(DEPARTED_SECONDS) if _could_be(pod, place.priority, place.node, place.scheduler)
    ]
    if not found:
        return None
    return min(found, key=lambda pod: (pod.nominated_node != place.node_name, pod.queue_order()))
