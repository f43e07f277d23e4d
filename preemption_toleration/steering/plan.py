"""Steering: the preemption upstream's plugin would make, planned for a preemptor whose scheduler's choice
the guard refused, on a cluster whose scheduler calls no extender.

Evidence: the scheduler writes the node it preempts on into the preemptor's `status.nominatedNodeName`
(kube-scheduler's `handleSchedulingFailure`, after its PostFilter chose a candidate; an asynchronous
preemption that fails keeps it). So the preemptor of a refused victim is the pending pod nominated to the
victim's node whose priority is above the victim's and whom the victim tolerates. Several such pods: no
evidence of which one, no steering.

The plan: every node where the preemptor can be shown to fit once victims are gone (node selector,
required node affinity, taints, a cordon, resources and the pod count; nothing else is judged, so a
preemptor with other constraints is declined), the victims upstream's `SelectVictimsOnNode` chooses there
(`extender.victims`), and the node kube-scheduler's `pickOneNodeForPreemption` picks among them. A
preemptor that fits somewhere without preemption is declined: the scheduler will place it itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from preemption_toleration.core.exemption import PriorityClassNotFound
from preemption_toleration.core.resources import allocatable
from preemption_toleration.extender.decisions import ExemptionCheck, ExtenderView
from preemption_toleration.extender.victims import NodeVictims, fits_as_is, importance, select_victims
from preemption_toleration.guard.matching import could_run_on
from preemption_toleration.inventory.budgets import split_by_budget_violation
from preemption_toleration.records.pod import NO_CONSTRAINTS, SlimPod

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
INT32_OFFSET = 2**31  # kube-scheduler adds MaxInt32+1 to each priority before summing them


class Declined(str, Enum):
    NO_EVIDENCE = "no-evidence"  # no pending pod nominated to the victim's node that the victim tolerates
    AMBIGUOUS = "ambiguous"  # several: which one the scheduler works on is not known
    UNJUDGED = "unjudged"  # the preemptor has constraints the project does not judge
    FITS = "fits"  # it fits somewhere as the cluster is: the scheduler will place it
    IN_PROGRESS = "in-progress"  # a victim on its nominated node is terminating: the scheduler is preempting
    NO_NODE = "no-node"  # no node where it fits without a pod that tolerates it


@dataclass(frozen=True)
class NotSteered:
    reason: Declined
    detail: str


@dataclass(frozen=True)
class SteeringPlan:
    preemptor: SlimPod
    node: str
    victims: tuple[SlimPod, ...]  # most important first
    pdb_violations: int


def preemptor_of_refusal(
    victim_node: str, victim_priority: int, pods: Iterable[SlimPod], refused_for: Callable[[SlimPod], bool]
) -> SlimPod | NotSteered:
    """The pod the scheduler is preempting for, from its own write: the pending pod nominated to the
    victim's node (`pods`: those nominated there) above the victim's priority, for which the guard refused
    the victim (it tolerates the pod, or would be deleted in vain for it)."""
    found = [
        pod
        for pod in pods
        if pod.pending_candidate
        and pod.nominated_node == victim_node
        and pod.priority > victim_priority
        and refused_for(pod)
    ]
    if not found:
        return NotSteered(Declined.NO_EVIDENCE, f"no pending pod nominated to {victim_node} refused this victim")
    if len(found) > 1:
        names = ", ".join(sorted(f"{pod.namespace}/{pod.name}" for pod in found))
        return NotSteered(Declined.AMBIGUOUS, f"several pending pods nominated to {victim_node}: {names}")
    return found[0]


def eligible(preemptor: SlimPod, node: Mapping[str, Any]) -> bool:
    """The filters a preemption cannot change: node selector, required node affinity, taints, a cordon."""
    pod = (preemptor.constraints or NO_CONSTRAINTS).pod
    if not could_run_on(pod, node):
        return False
    if (node.get("spec") or {}).get("unschedulable"):
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        return any(_tolerates_cordon(toleration) for toleration in tolerations)
    return True


def _tolerates_cordon(toleration: Mapping[str, Any]) -> bool:
    key, effect = toleration.get("key"), toleration.get("effect")
    if effect and effect != UNSCHEDULABLE_TAINT["effect"]:
        return False
    if (toleration.get("operator") or "Equal") == "Exists":
        return not key or key == UNSCHEDULABLE_TAINT["key"]
    return key == UNSCHEDULABLE_TAINT["key"] and not toleration.get("value")


def _earliest_start_of_most_important(victims: Sequence[SlimPod]) -> int:
    """`util.GetEarliestPodStartTime`: the earliest start among the victims of the highest priority."""
    top = max(pod.priority for pod in victims)
    return min(importance(pod)[1] for pod in victims if pod.priority == top)


def pick_node(candidates: Mapping[str, NodeVictims]) -> str:
    """kube-scheduler's `pickOneNodeForPreemption`: fewest budget violations, then the lowest highest
    victim priority, the lowest sum of priorities, the fewest victims, the latest start of the most
    important victims; a tie left after all of them goes to the first node by name."""
    scores: list[Callable[[NodeVictims], int]] = [
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(pod.priority + INT32_OFFSET for pod in c.victims),
        lambda c: -len(c.victims),
        lambda c: _earliest_start_of_most_important(c.victims),
    ]
    remaining = sorted(candidates)
    for score in scores:
        best = max(score(candidates[node]) for node in remaining)
        remaining = [node for node in remaining if score(candidates[node]) == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def plan_steering(preemptor: SlimPod, view: ExtenderView, now: datetime) -> SteeringPlan | NotSteered:
    unjudged = (preemptor.constraints or NO_CONSTRAINTS).unjudged
    if unjudged:
        return NotSteered(
            Declined.UNJUDGED, f"the preemptor has {', '.join(unjudged)}, which the project does not judge"
        )
    nominated_node = preemptor.nominated_node
    if nominated_node and any(
        pod.deletion is not None and pod.priority < preemptor.priority for pod in view.pods.on_node(nominated_node)
    ):
        # kube-scheduler's PodEligibleToPreemptOthers: it waits for that node, where it binds the preemptor
        return NotSteered(Declined.IN_PROGRESS, f"a pod on its nominated node {nominated_node} is terminating")
    exempt = ExemptionCheck(preemptor, view, now)
    requests = dict(preemptor.requests)
    candidates: dict[str, NodeVictims] = {}
    for name, node in view.nodes.items():
        if not eligible(preemptor, node):
            continue
        on_node = view.pods.on_node(name)
        nominated = [pod for pod in view.pods.nominated_to(name) if pod.uid != preemptor.uid]
        node_allocatable = allocatable(node)
        if fits_as_is(preemptor.priority, requests, on_node, nominated, node_allocatable):
            return NotSteered(Declined.FITS, f"it fits on {name} without preemption")
        try:
            chosen = select_victims(
                preemptor.priority,
                requests,
                on_node,
                nominated,
                node_allocatable,
                exempt,
                lambda pods: split_by_budget_violation(pods, view.budgets),
            )
        except PriorityClassNotFound:  # upstream leaves such a node out
            continue
        if chosen is not None:
            candidates[name] = chosen
    if not candidates:
        return NotSteered(Declined.NO_NODE, "no node where it fits without a pod that tolerates it")
    chosen_node = pick_node(candidates)
    best = candidates[chosen_node]
    return SteeringPlan(preemptor, chosen_node, best.victims, best.num_pdb_violations)
