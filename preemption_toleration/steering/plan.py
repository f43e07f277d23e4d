"""Steering: the preemption upstream's plugin would make, planned for a preemptor whose scheduler's choice
the guard refused, on a cluster whose scheduler calls no extender.

Evidence: the scheduler writes the node it preempts on into the preemptor's `status.nominatedNodeName`
(kube-scheduler's `handleSchedulingFailure`, after its PostFilter chose a candidate; an asynchronous
preemption that fails keeps it). So the preemptor of a refused victim is the pending pod nominated to the
victim's node whose priority is above the victim's and for whom the guard refuses the victim. Several such
pods: the one the scheduler's queue serves first (highest priority, then the oldest), as the guard's
inference takes, unless it was steered lately: then the next, for whom the scheduler preempts while the
first waits for its node.

The plan: the nodes where the preemptor can be shown to fit once victims are gone (node selector,
required node affinity, taints, a cordon, resources and the pod count; nothing else is judged, so a
preemptor with other constraints is declined), the victims upstream's `SelectVictimsOnNode` chooses there
(`extender.victims`), and the node kube-scheduler's `pickOneNodeForPreemption` picks among them. A
preemptor that fits somewhere without preemption is declined: the scheduler will place it itself.

The search is bounded as the scheduler bounds its own dry run (`GetOffsetAndNumCandidates`,
`DryRunPreemption`): nodes are tried from an offset, and the search stops once it has max(10 % of the
nodes, 100) candidates, one of them without a budget violation. It is a generator that yields after each
node, so that its caller can give the event loop back between slices of the work: each node is read whole
within one step, and the chosen node is read again at the end, since the others may have changed meanwhile.
So is every search steering makes for a refusal (`Steps`): a step reads one node, or judges one pod nominated
to one, never more, however many pods are nominated there.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from types import MappingProxyType
from typing import Any, TypeVar

from preemption_toleration.core.exemption import PriorityClassNotFound
from preemption_toleration.extender.decisions import ExemptionCheck
from preemption_toleration.extender.victims import NodeVictims, fits_as_is, importance, select_victims
from preemption_toleration.guard.matching import could_run_on
from preemption_toleration.inventory.budgets import split_by_budget_violation
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.node import NodeRecord
from preemption_toleration.records.pod import NO_CONSTRAINTS, SlimPod

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
INT32_OFFSET = 2**31  # kube-scheduler adds MaxInt32+1 to each priority before summing them
# DefaultPreemption's defaults (`minCandidateNodesPercentage`, `minCandidateNodesAbsolute`)
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
NOTHING_STEERED: Mapping[str, str] = MappingProxyType({})  # no pod nominated by steering itself
# every nomination may be steering's own (a replica that cannot see the others' Leases): none is cleared
EVERY_NOMINATION: Mapping[str, str] = MappingProxyType({})

T = TypeVar("T")
Steps = Generator[None, None, T]  # a search in bounded steps (`next()`); its result is the return value


def completed(steps: Steps[T]) -> T:
    """A search's result, its steps taken at once."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


class Declined(str, Enum):
    NO_EVIDENCE = "no-evidence"  # no pending pod nominated to the victim's node that the victim tolerates
    UNJUDGED = "unjudged"  # the preemptor has constraints the project does not judge
    FITS = "fits"  # it fits somewhere as the cluster is: the scheduler will place it
    IN_PROGRESS = "in-progress"  # a pod on its nominated node terminates by preemption: the scheduler waits there
    NO_NODE = "no-node"  # no node where it fits without a pod that tolerates it
    CHANGED = "changed"  # the chosen node changed while the plan was made: planned again at the next refusal
    STALE_CACHE = "stale-cache"  # a cache is not current (`problems()`): nothing is planned or done from it
    # a preemption of or for a pod group (workload-aware preemption takes groups across nodes; a plan is a
    # pod's, on one node): never acted for, in part or whole
    POD_GROUP = "pod-group"


@dataclass(frozen=True)
class NotSteered:
    reason: Declined
    detail: str


@dataclass(frozen=True)
class RefusedFor:
    """The pods the guard refused a victim for, in the scheduler's queue order: those steered lately, then the
    one to steer now (None: every one was steered lately)."""

    steered_lately: tuple[SlimPod, ...]
    to_steer: SlimPod | None

    @property
    def first(self) -> SlimPod:
        """The one the scheduler's queue serves first."""
        found = self.steered_lately[0] if self.steered_lately else self.to_steer
        assert found is not None
        return found


@dataclass(frozen=True)
class SteeringPlan:
    preemptor: SlimPod
    node: str
    victims: tuple[SlimPod, ...]  # most important first
    pdb_violations: int
    # pods nominated to the node by nominations upstream would not have made (`hopeless`): cleared
    cleared: tuple[SlimPod, ...] = ()

    @property
    def to_delete(self) -> tuple[SlimPod, ...]:
        """The victims to mark and delete: not those terminating already (kube-scheduler's executor skips
        them too), though they count, since they hold their room until they are gone."""
        return tuple(pod for pod in self.victims if pod.deletion is None)


def preemptor_of_refusal(
    victim_node: str,
    victim_priority: int,
    pods: Iterable[SlimPod],
    refused_for: Callable[[SlimPod], bool],
    steered_lately: Callable[[SlimPod], bool] = lambda pod: False,
) -> RefusedFor | NotSteered:
    """`refusal_search`, at once."""
    return completed(refusal_search(victim_node, victim_priority, pods, refused_for, steered_lately))


def refusal_search(
    victim_node: str,
    victim_priority: int,
    pods: Iterable[SlimPod],
    refused_for: Callable[[SlimPod], bool],
    steered_lately: Callable[[SlimPod], bool] = lambda pod: False,
) -> Steps[RefusedFor | NotSteered]:
    """The pod the scheduler is preempting for, from its own write: the pending pod nominated to the
    victim's node (`pods`: those nominated there) above the victim's priority, for which the guard refused
    the victim (it tolerates the pod, or would be deleted in vain for it); of several, the one the
    scheduler's queue serves first. A pod steered lately is passed over for the next: the scheduler, which
    counts each nominated pod against the others, preempts for that one while the first waits for its node.
    """
    found = sorted(
        (
            pod
            for pod in pods
            if pod.pending_candidate and pod.nominated_node == victim_node and pod.priority > victim_priority
        ),
        key=SlimPod.queue_order,  # the scheduler's queue: highest priority, then the oldest
    )
    passed_over: list[SlimPod] = []
    for pod in found:
        yield  # one judgement a step (`refused_for` reads the victim's node)
        if not refused_for(pod):
            continue
        if not steered_lately(pod):
            return RefusedFor(tuple(passed_over), pod)
        passed_over.append(pod)
    if passed_over:
        return RefusedFor(tuple(passed_over), None)
    return NotSteered(Declined.NO_EVIDENCE, f"no pending pod nominated to {victim_node} refused this victim")


def eligible(preemptor: SlimPod, node: NodeRecord) -> bool:
    """The filters a preemption cannot change: node selector, required node affinity, taints, a cordon."""
    pod = (preemptor.constraints or NO_CONSTRAINTS).pod
    if not could_run_on(pod, node):
        return False
    if node.unschedulable:
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


def candidates_wanted(nodes: int) -> int:
    """How many candidate nodes kube-scheduler's dry run looks for (`GetOffsetAndNumCandidates`): 10 % of
    the nodes, at least 100, at most all of them."""
    wanted = nodes * MIN_CANDIDATE_NODES_PERCENTAGE // 100
    return min(max(wanted, MIN_CANDIDATE_NODES_ABSOLUTE), nodes)


NodeResult = NodeVictims | NotSteered | None  # victims there; FITS (no preemption needed); no candidate


def hopeless(other: SlimPod, preemptor: SlimPod, name: str, view: ClusterView, now: datetime) -> bool:
    """Whether `other`, nominated to node `name`, is there by a nomination upstream's plugin would not have
    made: it counts against the preemptor (at least its priority) and cannot fit there itself whatever pods
    that do not tolerate it go, counting the preemptor only where the scheduler's queue serves the preemptor
    first (upstream nominates a pod counting the pods nominated before it, of at least its priority: a pod
    served first, nominated while the preemptor waited or before it existed, made its nomination without it).
    The stock scheduler makes such nominations for preemptions the guard refuses, again at each attempt."""
    if other.priority < preemptor.priority or not other.pending_candidate:
        return False
    if (other.constraints or NO_CONSTRAINTS).unjudged:
        return False
    placed = [pod for pod in view.pods.nominated_to(name) if pod.uid not in (other.uid, preemptor.uid)]
    if preemptor.queue_order() < other.queue_order():
        placed.append(preemptor)
    found = completed(_on_node(other, name, view, ExemptionCheck(other, view, now), placed))  # one step
    return found is None


def _nominations(
    preemptor: SlimPod, name: str, view: ClusterView, now: datetime, ours: Mapping[str, str] = NOTHING_STEERED
) -> Steps[tuple[list[SlimPod], list[SlimPod]]]:
    """The other pods nominated to node `name`, as (those that count against the preemptor there, those
    there by nominations upstream would not have made: `hopeless`). A pod steering nominated there itself
    (`ours`: UID -> the node) is never hopeless: that nomination is the one upstream's plugin made; nor is a
    member of a pod group."""
    counted: list[SlimPod] = []
    cleared: list[SlimPod] = []
    for pod in list(view.pods.nominated_to(name)):  # the pods of the moment; each judged at its step
        if pod.uid == preemptor.uid:
            continue
        yield  # `hopeless` reads the node once
        # a group's member is nominated by the scheduler's preemption for its group: never cleared, in part
        keep = ours is EVERY_NOMINATION or ours.get(pod.uid) == name or pod.pod_group is not None
        (cleared if not keep and hopeless(pod, preemptor, name, view, now) else counted).append(pod)
    return counted, cleared


def _on_node(
    preemptor: SlimPod,
    name: str,
    view: ClusterView,
    exempt: ExemptionCheck,
    nominated: list[SlimPod] | None = None,
    ours: Mapping[str, str] = NOTHING_STEERED,
) -> Steps[NodeResult]:
    """The preemptor on one node, the node read in one step (the pods nominated there are judged one a step
    before it). The pods nominated there count, but for those whose nominations upstream would not have made
    (`hopeless`); or, given, `nominated`."""
    node = view.nodes.get(name)
    if node is None or not eligible(preemptor, node):
        return None
    if nominated is None:
        nominated, cleared = yield from _nominations(preemptor, name, view, exempt.now, ours)
        if nominated or cleared:  # judged a step each: the node is read in a step of its own
            yield
            node = view.nodes.get(name)
            if node is None:
                return None
    on_node = view.pods.on_node(name)
    node_allocatable = node.allocatable
    requests = dict(preemptor.requests)
    if fits_as_is(preemptor.priority, requests, on_node, nominated, node_allocatable):
        return NotSteered(Declined.FITS, f"it fits on {name} without preemption")
    try:
        return select_victims(
            preemptor.priority,
            requests,
            on_node,
            nominated,
            node_allocatable,
            exempt,
            lambda pods: split_by_budget_violation(pods, view.budgets),
        )
    except PriorityClassNotFound:  # upstream leaves such a node out
        return None


Search = Generator[None, None, "SteeringPlan | NotSteered"]


def search_plan(
    preemptor: SlimPod,
    view: ClusterView,
    now: datetime,
    offset: int = 0,
    preempted_for_others: Collection[str] = (),
    ours: Mapping[str, str] = NOTHING_STEERED,
) -> Search:
    """The plan, one node per step (`next()`), as the scheduler's bounded dry run would find it starting at
    node `offset` of the cache's nodes; the plan or the reason it declines is the generator's return value.
    `preempted_for_others`: UIDs of pods steering preempted for other preemptors; their termination does not
    make this one wait (the scheduler's refused attempt for it came before its nomination there). `ours`: the
    pods steering nominated, by UID, to the node of each (`_nominations`)."""
    unjudged = (preemptor.constraints or NO_CONSTRAINTS).unjudged
    if unjudged:
        return NotSteered(
            Declined.UNJUDGED, f"the preemptor has {', '.join(unjudged)}, which the project does not judge"
        )
    nominated_node = preemptor.nominated_node
    if nominated_node and any(
        pod.preempted and pod.priority < preemptor.priority and pod.uid not in preempted_for_others
        for pod in view.pods.on_node(nominated_node)
    ):
        # kube-scheduler's PodEligibleToPreemptOthers: a pod terminating by preemption on its nominated node
        # (a pod terminating for another reason does not count): it waits for that node and binds it there
        return NotSteered(
            Declined.IN_PROGRESS, f"a pod on its nominated node {nominated_node} is terminating by preemption"
        )
    exempt = ExemptionCheck(preemptor, view, now)
    names = list(view.nodes)  # the node names of the moment; each node is read when its turn comes
    wanted = candidates_wanted(len(names))
    candidates: dict[str, NodeVictims] = {}
    without_violation = 0
    for step in range(len(names)):
        yield
        name = names[(offset + step) % len(names)]
        found = yield from _on_node(preemptor, name, view, exempt, ours=ours)
        if isinstance(found, NotSteered):
            return found
        if found is not None:
            candidates[name] = found
            without_violation += found.num_pdb_violations == 0
            if without_violation and len(candidates) >= wanted:
                break
    if not candidates:
        return NotSteered(Declined.NO_NODE, "no node where it fits without a pod that tolerates it")
    yield
    chosen_node = pick_node(candidates)
    counted, cleared = yield from _nominations(preemptor, chosen_node, view, now, ours)
    if counted or cleared:
        yield
    now_there = completed(_on_node(preemptor, chosen_node, view, exempt, counted))  # one step
    if isinstance(now_there, NotSteered):
        return now_there
    if now_there is None or [pod.uid for pod in now_there.victims] != [
        pod.uid for pod in candidates[chosen_node].victims
    ]:
        return NotSteered(Declined.CHANGED, f"node {chosen_node} changed while the plan was made")
    return SteeringPlan(preemptor, chosen_node, now_there.victims, now_there.num_pdb_violations, tuple(cleared))


def fits_on(preemptor: SlimPod, name: str, view: ClusterView) -> bool:
    """Whether the preemptor fits on node `name` beside the pods placed there, nominations aside: a pod
    nominated there is the scheduler's next preemptor (`preemptor_of_refusal`), not one that took the room."""
    node = view.nodes.get(name)
    if node is None:
        return False
    return fits_as_is(preemptor.priority, dict(preemptor.requests), view.pods.on_node(name), [], node.allocatable)


def blocking_nominations(
    preemptor: SlimPod, view: ClusterView, now: datetime, ours: Mapping[str, str] = NOTHING_STEERED
) -> list[SlimPod]:
    """`blocking_search`, at once."""
    return completed(blocking_search(preemptor, view, now, ours))


def blocking_search(
    preemptor: SlimPod, view: ClusterView, now: datetime, ours: Mapping[str, str] = NOTHING_STEERED
) -> Steps[list[SlimPod]]:
    """The pods nominated to the preemptor's nominated node that alone keep it from fitting there, where
    upstream's plugin would not have nominated them: of at least its priority (so the scheduler counts them
    against it), and unable to fit there themselves, with the preemptor counted where the scheduler's queue
    serves it first (`hopeless`), whatever pods that do not tolerate them go. The stock scheduler nominates
    such a pod for a preemption the guard refuses, again at each attempt; two pods of one priority nominated
    to a node with room for one then wait for each other. Empty unless the preemptor fits there as the node
    is once those nominations are gone."""
    name = preemptor.nominated_node
    node = view.nodes.get(name) if name else None
    if name is None or node is None:
        return []
    kept, found = yield from _nominations(preemptor, name, view, now, ours)
    if not found:
        return []
    yield
    node = view.nodes.get(name)
    if node is None:
        return []
    on_node = view.pods.on_node(name)
    if not fits_as_is(preemptor.priority, dict(preemptor.requests), on_node, kept, node.allocatable):
        return []
    return found
