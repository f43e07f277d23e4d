"""What a Lease left "acting" may still make a replica do: ask, never order.

A replica that stopped in the middle of a steered preemption leaves its Lease "acting", naming the preemptor
(by the Lease's name: its UID), the node and the victims. Anyone who may write Leases in that namespace can
write one too, and an old one describes a cluster that has moved on. So a Lease only says which preemptor a
replica was acting for. It is looked at within its window (the Lease's duration, from its last renewal), for
a preemptor that is still the same pending pod and is nominated to the Lease's node (an action's first write;
only the scheduler or steering, with the right to write pods' status, can make it). The victims are then what
a fresh plan from the caches chooses, under the rules, claim and rate limit of a live action; a fresh plan on
another node, or with a victim the Lease does not name, does not bear the left one out: it is refused, and
the next refusal of the guard plans the preemption again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.pod import SlimPod
from preemption_toleration.steering.plan import SteeringPlan

PodRef = tuple[str, str, str]  # (namespace, name, uid)


@dataclass(frozen=True)
class LeftPlan:
    """What a Lease left acting claims."""

    preemptor: PodRef
    node: str
    victims: tuple[PodRef, ...]
    renewed: datetime
    window_seconds: int
    version: str = ""  # the Lease's resourceVersion: taking it over is a write on that version alone


def preemptor_of_left_plan(left: LeftPlan, view: ClusterView, now: datetime) -> SlimPod | str:
    """The preemptor a replica was acting for, as the cache holds it; or why the Lease asks for nothing."""
    if left.renewed + timedelta(seconds=left.window_seconds) < now:
        return f"it was renewed at {left.renewed.isoformat()}, longer ago than its window of {left.window_seconds} s"
    namespace, name, uid = left.preemptor
    preemptor = view.pods.get((namespace, name))
    if preemptor is None or preemptor.uid != uid or not preemptor.pending_candidate:
        return f"its preemptor {namespace}/{name} (UID {uid}) is not a pending pod of the cache"
    if preemptor.pod_group is not None:  # as a live action: the scheduler preempts for its group, across nodes
        return f"its preemptor {namespace}/{name} is a member of PodGroup {namespace}/{preemptor.pod_group}"
    if not left.node or preemptor.nominated_node != left.node:
        return (
            f"its preemptor {namespace}/{name} is nominated to {preemptor.nominated_node or 'no node'}, not to its "
            f"node {left.node!r}: no action was begun there"
        )
    return preemptor


def borne_out(left: LeftPlan, plan: SteeringPlan) -> str | None:
    """Why a fresh plan does not bear the left one out (None when it does): it preempts on another node, or a
    victim the Lease does not name. A fresh plan may need fewer victims (some are gone already)."""
    if plan.node != left.node:
        return f"a fresh plan preempts on {plan.node}, not on its node {left.node}"
    named = {uid for *_, uid in left.victims}
    unnamed = [f"{pod.namespace}/{pod.name}" for pod in plan.to_delete if pod.uid not in named]
    if unnamed:
        return f"a fresh plan also preempts {', '.join(unnamed)}, which it does not name"
    return None
