"""What a Lease left "acting" may still have done: the cluster, not the Lease, decides.

A replica that stopped in the middle of a steered preemption leaves its Lease "acting", naming the preemptor
(by the Lease's name: its UID), the node and the victims. Anyone who may write Leases in that namespace can
write one too, and an old one describes a cluster that has moved on. So a left plan is finished only within
its window (the Lease's duration, from its last renewal), for a preemptor that is still the same pending pod,
and each victim still in the cache must be the pod the Lease names (same UID), on the Lease's node, of lower
priority than the preemptor and not exempt from it now. Anything else refuses the whole plan: the next
refusal of the guard plans the preemption again from the cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from preemption_toleration.core.exemption import PriorityClassNotFound
from preemption_toleration.extender.decisions import ExemptionCheck
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.pod import SlimPod

PodRef = tuple[str, str, str]  # (namespace, name, uid)


@dataclass(frozen=True)
class LeftPlan:
    """What a Lease left acting claims."""

    preemptor: PodRef
    node: str
    victims: tuple[PodRef, ...]
    renewed: datetime
    window_seconds: int


@dataclass(frozen=True)
class Resumable:
    preemptor: SlimPod
    victims: tuple[PodRef, ...]  # those still in the cache; the others are gone already


def check_left_plan(left: LeftPlan, view: ClusterView, now: datetime) -> Resumable | str:
    """The victims still to delete, each checked against the cache; or why nothing may be done."""
    if left.renewed + timedelta(seconds=left.window_seconds) < now:
        return f"it was renewed at {left.renewed.isoformat()}, longer ago than its window of {left.window_seconds} s"
    namespace, name, uid = left.preemptor
    preemptor = view.pods.get((namespace, name))
    if preemptor is None or preemptor.uid != uid or not preemptor.pending_candidate:
        return f"its preemptor {namespace}/{name} (UID {uid}) is not a pending pod of the cache"
    if not left.node or left.node not in view.nodes:
        return f"its node {left.node!r} is not a node of the cache"
    exempt = ExemptionCheck(preemptor, view, now)
    kept: list[PodRef] = []
    for ref in left.victims:
        pod = view.pods.get((ref[0], ref[1]))
        if pod is None or pod.uid != ref[2]:
            continue  # gone, or another pod of that name now (left alone): nothing to delete
        problem = _victim_problem(pod, left.node, preemptor, exempt)
        if problem:
            return problem
        if pod.deletion is None:  # one terminating already needs no DELETE
            kept.append(ref)
    return Resumable(preemptor, tuple(kept))


def _victim_problem(pod: SlimPod, node: str, preemptor: SlimPod, exempt: ExemptionCheck) -> str | None:
    where = f"victim {pod.namespace}/{pod.name}"
    if pod.node_name != node:
        return f"{where} is on {pod.node_name or 'no node'}, not on {node}"
    if pod.priority >= preemptor.priority:
        return f"{where} has priority {pod.priority}, not below the preemptor's {preemptor.priority}"
    try:
        if exempt(pod):
            return f"{where} tolerates the preemptor"
    except PriorityClassNotFound:
        return f"{where}'s PriorityClass is not in the cache"
    return None
