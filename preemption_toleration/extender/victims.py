"""Victims on one node, as upstream's `SelectVictimsOnNode` chooses them.

The potential victims are the node's pods of lower priority than the preemptor that are not exempt from
it, terminating ones included (they hold their room until they are gone; kube-scheduler's executor skips
their DELETE). If the preemptor does not fit with all of them gone, the node is no candidate.
Otherwise each potential victim, the PDB-violating ones first and then the most important first (higher
priority, then the earlier `status.startTime`), is put back if the preemptor still fits with it there; the
rest are the victims, most important first, as upstream sorts them again at the end (the scheduler reads the
first as the node's most important victim when it picks a node).

"Fits" is the scheduler's resource fit (NodeResourcesFit): for every resource the preemptor requests, its
request is at most the node's allocatable minus what the pods left on the node request, and the node has
room for one more pod. Pods nominated to the node with a priority at
least the preemptor's count as if they were there (`RunFilterPluginsWithNominatedPods`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from preemption_toleration.core.quantities import PODS
from preemption_toleration.records.pod import Requests, SlimPod

TERMINAL_PHASES = ("Succeeded", "Failed")  # the scheduler's cache holds no such pods
BudgetSplit = Callable[[Sequence[SlimPod]], tuple[list[SlimPod], list[SlimPod]]]


@dataclass(frozen=True)
class NodeVictims:
    victims: tuple[SlimPod, ...]
    num_pdb_violations: int


class _Usage:
    """What the pods on a node request, with pods taken off and put back."""

    def __init__(self, pods: Iterable[Requests]) -> None:
        self.totals: dict[str, int] = {}
        self.count = 0
        for requests in pods:
            self.add(requests)

    def add(self, requests: Requests, sign: int = 1) -> None:
        for name, value in requests:
            self.totals[name] = self.totals.get(name, 0) + sign * value
        self.count += sign

    def remove(self, requests: Requests) -> None:
        self.add(requests, -1)

    def fits(self, wanted: Mapping[str, int], allocatable: Mapping[str, int]) -> bool:
        """NodeResourcesFit's `fitsRequest`: room for one more pod, and for each resource the preemptor
        requests (a node overcommitted in a resource it does not request is no obstacle)."""
        if self.count + 1 > allocatable.get(PODS, 0):
            return False
        for name, value in wanted.items():
            if value > 0 and value > allocatable.get(name, 0) - self.totals.get(name, 0):
                return False
        return True


NOT_STARTED = sys.maxsize  # GetPodStartTime gives a pod without status.startTime the present: latest of all


def importance(pod: SlimPod) -> tuple[int, int]:
    """`util.MoreImportantPod` as a sort key: higher priority first, then the earlier `status.startTime`."""
    return -pod.priority, NOT_STARTED if pod.started is None else pod.started


def potential_victims(
    preemptor_priority: int, node_pods: Iterable[SlimPod], exempt: Callable[[SlimPod], bool]
) -> list[SlimPod]:
    """The node's pods upstream's plugin may preempt for this preemptor: lower priority (terminating ones
    too, as `SelectVictimsOnNode` counts them), not exempt, most important first."""
    found = [
        pod
        for pod in node_pods
        if pod.phase not in TERMINAL_PHASES and pod.priority < preemptor_priority and not exempt(pod)
    ]
    found.sort(key=importance)
    return found


def count_violations(victims: Iterable[SlimPod], potential: Sequence[SlimPod], split_by_budgets: BudgetSplit) -> int:
    """How many of `victims` upstream counts as violating a PodDisruptionBudget: the split runs over the
    potential victims only, so a pod that tolerates the preemptor uses none of a budget's disruptions."""
    violating, _ = split_by_budgets(potential)
    violating_uids = {pod.uid for pod in violating}
    return sum(1 for pod in victims if pod.uid in violating_uids)


def _usage_with_nominated(preemptor_priority: int, present: Iterable[SlimPod], nominated: Iterable[SlimPod]) -> _Usage:
    usage = _Usage(pod.requests for pod in present)
    for pod in nominated:
        if pod.priority >= preemptor_priority:
            usage.add(pod.requests)
    return usage


def fits_as_is(
    preemptor_priority: int,
    preemptor_requests: Mapping[str, int],
    node_pods: Iterable[SlimPod],
    nominated: Iterable[SlimPod],
    allocatable: Mapping[str, int],
) -> bool:
    """Whether the preemptor fits on the node without preempting anyone (terminating pods still hold room)."""
    present = [pod for pod in node_pods if pod.phase not in TERMINAL_PHASES]
    return _usage_with_nominated(preemptor_priority, present, nominated).fits(preemptor_requests, allocatable)


def select_victims(
    preemptor_priority: int,
    preemptor_requests: Mapping[str, int],
    node_pods: Iterable[SlimPod],
    nominated: Iterable[SlimPod],
    allocatable: Mapping[str, int],
    exempt: Callable[[SlimPod], bool],
    split_by_budgets: BudgetSplit = lambda pods: ([], list(pods)),
) -> NodeVictims | None:
    """The victims on one node, or None when the node is no candidate for this preemptor.

    `split_by_budgets` groups the potential victims, most important first, into those whose preemption
    would violate a PodDisruptionBudget and the others (`budgets.split_by_budget_violation`)."""
    present = [pod for pod in node_pods if pod.phase not in TERMINAL_PHASES]
    potential = potential_victims(preemptor_priority, present, exempt)
    if not potential:  # decided before the node's usage is summed: most nodes of a search end here
        return None
    usage = _usage_with_nominated(preemptor_priority, present, nominated)
    for pod in potential:
        usage.remove(pod.requests)
    if not usage.fits(preemptor_requests, allocatable):
        return None
    violating, others = split_by_budgets(potential)
    victims: list[SlimPod] = []
    violations = 0
    for group, counts in ((violating, True), (others, False)):
        for pod in group:
            usage.add(pod.requests)
            if not usage.fits(preemptor_requests, allocatable):
                usage.remove(pod.requests)
                victims.append(pod)
                violations += counts
    victims.sort(key=importance)  # the violating ones came first; upstream sorts the final list again
    return NodeVictims(tuple(victims), violations)
