"""Steering's plan: whose preemption, which node and which victims, as upstream's plugin and kube-scheduler's
node choice would have it; and when it declines. One row per rule."""

from datetime import UTC, datetime

import pytest

from preemption_toleration.extender.victims import NodeVictims
from preemption_toleration.inventory.budgets import BudgetIndex
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.node import node_record
from preemption_toleration.records.pod import Shared, slim_pod
from preemption_toleration.steering.plan import (
    Declined,
    NotSteered,
    SteeringPlan,
    blocking_nominations,
    blocking_search,
    candidates_wanted,
    fits_on,
    pick_node,
    preemptor_of_refusal,
    refusal_search,
    search_plan,
)
from tests import builders
from tests.unit.test_extender import CLASS_RECORDS, budget, node, pod

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SHARED = Shared()


def two_full_nodes(**preemptor_spec):
    """The issue's scenario: node-a runs a protected pod, node-b a plain one, both full; high needs 2 CPUs."""
    pods = [
        pod("protected", "low-non-preempted", cpu="2", node="node-a", started="2026-11-22T11:00:03Z"),
        pod("plain", "low", cpu="2", node="node-b"),
    ]
    preemptor = pod("high", "high", cpu="2", node=None, status__nominatedNodeName="node-a")
    preemptor["spec"].update(preemptor_spec)
    return pods, preemptor, [node("node-a", cpu="2"), node("node-b", cpu="2")]


def searched(pods, preemptor, nodes, offset=0, budgets=(), ours=None):
    """The search's result and the steps it took (one a node tried, then one for the final choice)."""
    index = PodIndex.of([*pods, preemptor])
    view = ClusterView(index, {n.name: n for n in nodes}, CLASS_RECORDS, BudgetIndex.of(budgets))
    search = search_plan(index.get(("team", preemptor["metadata"]["name"])), view, NOW, offset, (), ours or {})
    steps = 0
    while True:
        try:
            next(search)
        except StopIteration as done:
            return done.value, steps
        steps += 1


def steer(pods, preemptor, nodes, budgets=(), ours=None):
    return searched(pods, preemptor, nodes, budgets=budgets, ours=ours)[0]


def outcome(result):
    if isinstance(result, NotSteered):
        return result.reason
    assert isinstance(result, SteeringPlan)
    return result.node, [victim.name for victim in result.victims]


ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}

CASES = [
    ("the protected node is passed over for the plain pod's node", {}, None, ("node-b", ["plain"])),
    ("a constraint the project does not judge: declined", {"affinity": ANTI_AFFINITY}, None, Declined.UNJUDGED),
    (
        "a node the preemptor's selector excludes is no candidate",
        {"nodeSelector": {"zone": "a"}},
        None,
        Declined.NO_NODE,
    ),
    ("a cordoned node is no candidate", {}, "cordon", Declined.NO_NODE),
    (
        "a cordoned node the preemptor tolerates is a candidate",
        {"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]},
        "cordon",
        ("node-b", ["plain"]),
    ),
    ("a tainted node is no candidate", {}, "taint", Declined.NO_NODE),
    ("room somewhere: the scheduler will place it", {}, "room", Declined.FITS),
]


@pytest.mark.parametrize(("rule", "spec", "change", "expected"), CASES, ids=[case[0] for case in CASES])
def test_plan(rule, spec, change, expected) -> None:
    pods, preemptor, nodes = two_full_nodes(**spec)
    if change == "cordon":
        nodes[1] = node_record({**builders.node("node-b", cpu="2"), "spec": {"unschedulable": True}})
    elif change == "taint":
        nodes[1] = node_record(builders.node("node-b", cpu="2", taints=[{"key": "gpu", "effect": "NoSchedule"}]))
    elif change == "room":
        nodes.append(node("node-c", cpu="4"))
    assert outcome(steer(pods, preemptor, nodes)) == expected, rule


def test_victims_are_chosen_as_upstream_chooses_them_on_the_node() -> None:
    """node-b: two plain pods of 1 CPU; only one needs to go, the less important (the later start)."""
    pods = [
        pod("protected", "low-non-preempted", cpu="2", node="node-a"),
        pod("older", "low", cpu="1", node="node-b", started="2026-11-22T10:00:00Z"),
        pod("newer", "low", cpu="1", node="node-b", started="2026-11-22T11:00:00Z"),
    ]
    preemptor = pod("high", "high", cpu="1", node=None)
    assert outcome(steer(pods, preemptor, [node("node-a", cpu="2"), node("node-b", cpu="2")])) == (
        "node-b",
        ["newer"],
    )


def victims(*pairs, violations=0):
    """NodeVictims of (priority, start) pairs, most important first."""
    pods = []
    for index, (priority, started) in enumerate(pairs):
        raw = pod(f"v{index}", "low", node="n", started=started)
        raw["spec"]["priority"] = priority
        pods.append(slim_pod(raw, SHARED))
    return NodeVictims(tuple(pods), violations)


T1, T2 = "2026-11-22T10:00:00Z", "2026-11-22T11:00:00Z"
PICKS = [
    ("fewest budget violations", {"a": victims((1, T1), violations=1), "b": victims((5, T1))}, "b"),
    ("lowest highest victim priority", {"a": victims((5, T1)), "b": victims((3, T1), (3, T1))}, "b"),
    ("lowest sum of priorities", {"a": victims((5, T1), (4, T1)), "b": victims((5, T1), (3, T1))}, "b"),
    ("fewest victims", {"a": victims((5, T1), (-5, T1)), "b": victims((5, T1))}, "b"),
    ("latest start of the most important victims", {"a": victims((5, T1)), "b": victims((5, T2))}, "b"),
    ("a tie goes to the first node by name", {"b": victims((5, T1)), "a": victims((5, T1))}, "a"),
]


@pytest.mark.parametrize(("rule", "candidates", "expected"), PICKS, ids=[case[0] for case in PICKS])
def test_pick_node_as_kube_scheduler_does(rule, candidates, expected) -> None:
    assert pick_node(candidates) == expected, rule


def test_budget_violations_steer_away_from_a_node() -> None:
    pods = [
        pod("protected", "low-non-preempted", cpu="2", node="node-a"),
        pod("guarded", "low", cpu="2", node="node-b", labels={"app": "db"}),
        pod("free", "low", cpu="2", node="node-c"),
    ]
    nodes = [node("node-a", cpu="2"), node("node-b", cpu="2"), node("node-c", cpu="2")]
    result = steer(pods, pod("high", "high", cpu="2", node=None), nodes, [budget("db", 0, app="db")])
    assert outcome(result) == ("node-c", ["free"])


def nominated(name, priority_class="high", node_name="node-a"):
    return slim_pod(pod(name, priority_class, node=None, status__nominatedNodeName=node_name), SHARED)


older_high = slim_pod(
    pod(
        "old", "high", node=None, status__nominatedNodeName="node-a", metadata__creationTimestamp="2026-11-22T09:00:00Z"
    ),
    SHARED,
)
top = slim_pod(pod("top", "high", node=None, status__nominatedNodeName="node-a", spec__priority=9500), SHARED)
EVIDENCE = [
    ("the one pod nominated to the victim's node", [nominated("high")], set(), "high"),
    ("nominated elsewhere: no evidence", [nominated("high", node_name="node-b")], set(), Declined.NO_EVIDENCE),
    (
        "not above the victim's priority: no evidence",
        [nominated("low", priority_class="low")],
        set(),
        Declined.NO_EVIDENCE,
    ),
    ("not refused for it: no evidence", [nominated("other")], set(), Declined.NO_EVIDENCE),
    (
        "two of one priority: the older, which the scheduler's queue serves first",
        [older_high, nominated("high")],
        set(),
        "old",
    ),
    ("two of two priorities: the higher", [older_high, top], set(), "top"),
    (
        "the queue's first steered lately: the next, for which the scheduler preempts while the first waits",
        [older_high, nominated("high")],
        {"old"},
        "high",
    ),
    ("the only one steered lately: nothing to steer", [nominated("high")], {"high"}, None),
    ("one steered lately, the next not refused for: nothing to steer", [older_high, nominated("other")], {"old"}, None),
]


@pytest.mark.parametrize(("rule", "pods", "steered", "expected"), EVIDENCE, ids=[case[0] for case in EVIDENCE])
def test_the_preemptor_is_known_only_from_the_schedulers_nomination(rule, pods, steered, expected) -> None:
    found = preemptor_of_refusal("node-a", 8000, pods, lambda p: p.name != "other", lambda p: p.name in steered)
    if isinstance(found, NotSteered):
        assert found.reason == expected, rule
        return
    assert (found.to_steer.name if found.to_steer else None) == expected, rule
    assert [pod.name for pod in found.steered_lately] == [pod.name for pod in pods if pod.name in steered], rule
    assert found.first.name == (found.steered_lately or (found.to_steer,))[0].name, rule


WANTED = [
    ("fewer than 100 nodes: all of them", 40, 40),
    ("100 nodes: all of them", 100, 100),
    ("at least 100", 500, 100),
    ("10 % of 5,000", 5000, 500),
    ("10 % rounded down", 1999, 199),
    ("no node", 0, 0),
]


@pytest.mark.parametrize(("rule", "nodes", "expected"), WANTED, ids=[case[0] for case in WANTED])
def test_candidates_wanted_as_the_schedulers_dry_run(rule, nodes, expected) -> None:
    assert candidates_wanted(nodes) == expected, rule


def many_plain_nodes(count, protected=()):
    """`count` full nodes of 2 CPUs named n000..., each with one plain pod of 2 CPUs (a protected one on the
    nodes `protected` names), and a preemptor of 2 CPUs."""
    pods, nodes = [], []
    for index in range(count):
        name = f"n{index:03d}"
        klass = "low-non-preempted" if name in protected else "low"
        pods.append(pod(f"p{index:03d}", klass, cpu="2", node=name))
        nodes.append(node(name, cpu="2"))
    return pods, pod("high", "high", cpu="2", node=None), nodes


def test_the_search_stops_at_the_schedulers_number_of_candidates() -> None:
    """500 nodes, each a candidate: the dry run stops after 100, tried from the offset, and picks among them."""
    pods, preemptor, nodes = many_plain_nodes(500)
    result, steps = searched(pods, preemptor, nodes, offset=250)
    assert steps == 100 + 1
    assert isinstance(result, SteeringPlan) and 250 <= int(result.node[1:]) < 350


def test_the_search_wraps_around_from_its_offset() -> None:
    pods, preemptor, nodes = many_plain_nodes(500)
    result, _ = searched(pods, preemptor, nodes, offset=450)
    assert isinstance(result, SteeringPlan) and (int(result.node[1:]) >= 450 or int(result.node[1:]) < 50)


def test_without_a_candidate_every_node_is_tried_one_step_each() -> None:
    names = {f"n{index:03d}" for index in range(300)}
    pods, preemptor, nodes = many_plain_nodes(300, protected=names)
    result, steps = searched(pods, preemptor, nodes, offset=7)
    assert outcome(result) == Declined.NO_NODE and steps == 300


def test_the_chosen_node_is_read_again_at_the_end() -> None:
    """A node that changes between the steps of the search (its plain pod replaced by a protected one) is
    not acted on from what was read earlier."""
    pods, preemptor, nodes = many_plain_nodes(2, protected={"n000"})
    index = PodIndex.of([*pods, preemptor])
    view = ClusterView(index, {n.name: n for n in nodes}, CLASS_RECORDS)
    search = search_plan(index.get(("team", "high")), view, NOW)
    next(search), next(search), next(search)  # both nodes tried: n001 is the candidate
    replaced = pod("p001", "low-non-preempted", cpu="2", node="n001")
    replaced["metadata"]["uid"] = "uid-p001-again"
    index.put(replaced)
    with pytest.raises(StopIteration) as done:
        next(search)
    assert outcome(done.value.value) == Declined.CHANGED


def test_a_node_gone_during_the_search_is_passed_over() -> None:
    pods, preemptor, nodes = many_plain_nodes(3)
    index = PodIndex.of([*pods, preemptor])
    live_nodes = {n.name: n for n in nodes}
    view = ClusterView(index, live_nodes, CLASS_RECORDS)
    search = search_plan(index.get(("team", "high")), view, NOW)
    next(search)
    del live_nodes["n000"]
    with pytest.raises(StopIteration) as done:
        while True:
            next(search)
    assert outcome(done.value.value) == ("n001", ["p001"])


def test_a_node_whose_terminating_pod_frees_room_is_upstreams_choice() -> None:
    """node-a's plain pod is terminating: upstream counts it as a victim, so node-a (one victim) beats node-b
    (two); nothing is left to delete there, only the nomination (the scheduler's executor skips it too)."""
    pods = [
        pod("leaving", "low", cpu="2", node="node-a", metadata__deletionTimestamp="2026-11-22T11:59:00Z"),
        pod("b1", "low", cpu="1", node="node-b"),
        pod("b2", "low", cpu="1", node="node-b"),
    ]
    result = steer(pods, pod("high", "high", cpu="2", node=None), [node("node-a", cpu="2"), node("node-b", cpu="2")])
    assert outcome(result) == ("node-a", ["leaving"])
    assert result.to_delete == ()


def test_a_nominated_pod_that_never_preempts_holds_its_room() -> None:
    """node-c is empty, but a pod of the preemptor's priority with `preemptionPolicy: Never` is nominated
    there: the scheduler counts it there, so the preemptor does not fit on node-c and node-b's plain pod goes."""
    pods, preemptor, nodes = two_full_nodes()
    waiting = pod("waiting", "high", cpu="2", node=None, status__nominatedNodeName="node-c")
    waiting["spec"]["preemptionPolicy"] = "Never"
    result = steer([*pods, waiting], preemptor, [*nodes, node("node-c", cpu="2")])
    assert outcome(result) == ("node-b", ["plain"])


def test_a_node_overcommitted_in_a_resource_the_preemptor_does_not_request_still_takes_it() -> None:
    """node-c's pods request more memory than it has (its allocatable shrank); the preemptor requests CPU
    only, and NodeResourcesFit checks only what a pod requests: it fits on node-c as it is."""
    pods, preemptor, nodes = two_full_nodes()
    hungry = pod("hungry", "low", cpu="100m", node="node-c")
    hungry["spec"]["containers"][0]["resources"]["requests"]["memory"] = "16Gi"
    result = steer([*pods, hungry], preemptor, [*nodes, node_record(builders.node("node-c", cpu="4", memory="8Gi"))])
    assert outcome(result) == Declined.FITS


MARK = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
LEAVING = {"metadata__deletionTimestamp": "2026-11-22T11:59:00Z"}
IN_PROGRESS = [
    ("a pod terminating by preemption on its nominated node: the scheduler waits there", [MARK], Declined.IN_PROGRESS),
    ("a pod terminating for another reason does not hold the scheduler back", [], ("node-a", ["leaving"])),
    (
        "a DisruptionTarget of another reason neither",
        [{**MARK, "reason": "DeletionByTaintManager"}],
        ("node-a", ["leaving"]),
    ),
    (
        "a pod steering preempted for another preemptor: its attempt came before its nomination, no wait",
        [MARK],
        ("node-a", ["leaving"]),
        {"uid-leaving"},
    ),
]


@pytest.mark.parametrize(
    ("rule", "conditions", "expected", "for_others"),
    [(*case, set()) if len(case) == 3 else case for case in IN_PROGRESS],
    ids=[case[0] for case in IN_PROGRESS],
)
def test_in_progress_is_the_schedulers_terminating_by_preemption(rule, conditions, expected, for_others) -> None:
    """PodEligibleToPreemptOthers: only a lower-priority pod terminating by preemption on the preemptor's
    nominated node makes the scheduler wait for that node."""
    leaving = pod("leaving", "low", cpu="2", node="node-a", **LEAVING)
    leaving["status"]["conditions"].extend(conditions)
    pods = [leaving, pod("b1", "low", cpu="1", node="node-b"), pod("b2", "low", cpu="1", node="node-b")]
    preemptor = pod("high", "high", cpu="2", node=None, status__nominatedNodeName="node-a")
    index = PodIndex.of([*pods, preemptor])
    view = ClusterView(index, {n: node(n, cpu="2") for n in ("node-a", "node-b")}, CLASS_RECORDS, BudgetIndex.of([]))
    search = search_plan(index.get(("team", "high")), view, NOW, 0, for_others)
    while True:
        try:
            next(search)
        except StopIteration as done:
            result = done.value
            break
    assert outcome(result) == expected, rule


def twin(name="twin", klass="high", cpu="1", **extra):
    return pod(name, klass, cpu=cpu, node=None, status__nominatedNodeName="node-a", **extra)


BLOCKING = [
    # (rule, node-a's CPUs, pods on node-a, other pods nominated to node-a, the nominations cleared[, steering's
    # own nominations: UID -> node])
    (
        "a twin that cannot fit without the protected pod, counted against the preemptor, is cleared",
        "3",
        [pod("protected", "low-non-preempted", cpu="2")],
        [twin()],
        ["twin"],
    ),
    (
        "a twin of one priority created after the preemptor, served after it, counts it: cleared",
        "3",
        [pod("protected", "low-non-preempted", cpu="2")],
        [twin(metadata__creationTimestamp="2026-11-22T10:30:00Z")],
        ["twin"],
    ),
    (
        "a twin of one priority created before the preemptor, served first, was nominated without it: kept",
        "3",
        [pod("protected", "low-non-preempted", cpu="2")],
        [twin(metadata__creationTimestamp="2026-11-22T09:30:00Z")],
        [],
    ),
    (
        "an older twin that cannot fit even without the preemptor is cleared all the same",
        "2",
        [pod("protected", "low-non-preempted", cpu="1")],
        [twin(cpu="2", metadata__creationTimestamp="2026-11-22T09:30:00Z")],
        ["twin"],
    ),
    (
        "a twin that can preempt a plain pod there keeps its nomination",
        "4",
        [pod("protected", "low-non-preempted", cpu="2"), pod("plain", "low", cpu="1")],
        [twin()],
        [],
    ),
    (
        "a pod of lower priority does not count against the preemptor",
        "3",
        [pod("protected", "low-non-preempted", cpu="2")],
        [twin(klass="mid")],
        [],
    ),
    (
        "the preemptor does not fit even without them: nothing is cleared",
        "3",
        [pod("protected", "low-non-preempted", cpu="3")],
        [twin()],
        [],
    ),
    (
        "a pod that never preempts keeps its nomination",
        "3",
        [pod("protected", "low-non-preempted", cpu="2")],
        [twin(spec__preemptionPolicy="Never")],
        [],
    ),
    (
        "a twin steering nominated there itself keeps its nomination: upstream's plugin made that one",
        "3",
        [pod("protected", "low-non-preempted", cpu="2")],
        [twin()],
        [],
        {"uid-twin": "node-a"},
    ),
    (
        "a twin steering nominated to another node is cleared where the stock scheduler nominated it",
        "3",
        [pod("protected", "low-non-preempted", cpu="2")],
        [twin()],
        ["twin"],
        {"uid-twin": "node-b"},
    ),
    (
        "a twin that is a pod group's member keeps its nomination: its group's preemption made it",
        "3",
        [pod("protected", "low-non-preempted", cpu="2")],
        [twin(spec__schedulingGroup={"podGroupName": "job"})],
        [],
    ),
]


@pytest.mark.parametrize(
    ("rule", "cpus", "on_node", "others", "cleared", "ours"),
    [case if len(case) == 6 else (*case, {}) for case in BLOCKING],
    ids=[b[0] for b in BLOCKING],
)
def test_nominations_upstream_would_not_have_made_are_cleared(rule, cpus, on_node, others, cleared, ours) -> None:
    preemptor = pod("high", "high", cpu="1", node=None, status__nominatedNodeName="node-a")
    index = PodIndex.of([*on_node, *others, preemptor])
    view = ClusterView(index, {"node-a": node("node-a", cpu=cpus)}, CLASS_RECORDS, BudgetIndex.of([]))
    found = blocking_nominations(index.get(("team", "high")), view, NOW, ours)
    assert [pod.name for pod in found] == cleared, rule


def test_a_nomination_upstream_would_not_have_made_does_not_count_and_is_cleared_by_the_plan() -> None:
    """node-a (3 CPUs) runs a protected pod and a plain one of 1 CPU each; `twin`, of high's priority, asks 2
    CPUs and is nominated there by the stock scheduler. With high placed there, twin could fit only if the
    protected pod went: upstream would not have nominated it. high's plan preempts the plain pod and clears
    twin's nomination; counting twin, it would find no node."""
    pods = [pod("protected", "low-non-preempted", cpu="1"), pod("plain", "low", cpu="1")]
    twin_pod = pod("twin", "high", cpu="2", node=None, status__nominatedNodeName="node-a")
    preemptor = pod("high", "high", cpu="2", node=None)
    plan = steer([*pods, twin_pod], preemptor, [node("node-a", cpu="3")])
    assert isinstance(plan, SteeringPlan), plan
    assert [p.name for p in plan.victims] == ["plain"] and [p.name for p in plan.cleared] == ["twin"]


def test_a_nomination_steering_made_itself_counts_and_is_not_cleared_by_the_plan() -> None:
    """The same node, but steering nominated twin there itself (it preempted for it): the plan leaves twin's
    nomination, counts it, and finds no node for high."""
    pods = [pod("protected", "low-non-preempted", cpu="1"), pod("plain", "low", cpu="1")]
    twin_pod = pod("twin", "high", cpu="2", node=None, status__nominatedNodeName="node-a")
    preemptor = pod("high", "high", cpu="2", node=None)
    plan = steer([*pods, twin_pod], preemptor, [node("node-a", cpu="3")], ours={"uid-twin": "node-a"})
    assert outcome(plan) == Declined.NO_NODE


FITS_ON = [
    ("its room free: it fits", "3", [pod("protected", "low-non-preempted", cpu="2")], [], True),
    (
        "a pod bound there since took the room: it does not",
        "3",
        [pod("protected", "low-non-preempted", cpu="2"), pod("other", "low", cpu="1")],
        [],
        False,
    ),
    (
        "a pod nominated there is the scheduler's next preemptor, not a taker of the room: it fits",
        "3",
        [pod("protected", "low-non-preempted", cpu="1"), pod("plain", "low", cpu="1")],
        [pod("twin", "high", cpu="1", node=None, status__nominatedNodeName="node-a")],
        True,
    ),
    ("the node gone: it does not", None, [], [], False),
]


@pytest.mark.parametrize(("rule", "cpus", "on_node", "others", "fits"), FITS_ON, ids=[case[0] for case in FITS_ON])
def test_whether_a_steered_preemptor_still_fits_where_it_was_steered(rule, cpus, on_node, others, fits) -> None:
    """Steering plans again for a preemptor it steered whose victims are gone when it no longer fits there."""
    preemptor = pod("high", "high", cpu="1", node=None, status__nominatedNodeName="node-a")
    index = PodIndex.of([*on_node, *others, preemptor])
    nodes = {"node-a": node("node-a", cpu=cpus)} if cpus else {}
    view = ClusterView(index, nodes, CLASS_RECORDS, BudgetIndex.of([]))
    assert fits_on(index.get(("team", "high")), "node-a", view) is fits, rule


class CountingIndex(PodIndex):
    """A pod index that counts each read of a node's pods: one is one node read."""

    reads = 0

    def on_node(self, node_name):
        CountingIndex.reads += 1
        return super().on_node(node_name)


TWINS = 40


def crowded():
    """node-a, full of a protected pod, with TWINS pods of high's priority nominated there by the stock
    scheduler (each hopeless: it fits only if the protected pod went); and high, nominated there too."""
    preemptor = pod("high", "high", cpu="1", node=None, status__nominatedNodeName="node-a")
    others = [twin(f"twin-{index}", cpu="2") for index in range(TWINS)]
    index = CountingIndex.of([pod("protected", "low-non-preempted", cpu="2"), *others, preemptor])
    view = ClusterView(index, {"node-a": node("node-a", cpu="3")}, CLASS_RECORDS, BudgetIndex.of([]))
    return index.get(("team", "high")), view


SEARCHES = [
    # (rule, the search of a refusal steering makes, the steps it takes at least)
    (
        "the nominations that block the preemptor: each nominated pod judged in a step of its own",
        lambda preemptor, view: blocking_search(preemptor, view, NOW),
        TWINS,
    ),
    (
        "a plan's node step: each pod nominated there judged in a step of its own",
        lambda preemptor, view: search_plan(preemptor, view, NOW),
        TWINS,
    ),
]


@pytest.mark.parametrize(("rule", "search", "at_least"), SEARCHES, ids=[s[0] for s in SEARCHES])
def test_no_step_of_a_search_reads_more_than_one_node(rule, search, at_least) -> None:
    """The event loop is given back between slices of steps: a node crowded with nominations is read once
    for each pod nominated there (`hopeless`), one a step, never all in one."""
    preemptor, view = crowded()
    steps, most = search(preemptor, view), 0
    while True:
        CountingIndex.reads = 0
        try:
            next(steps)
        except StopIteration:
            most = max(most, CountingIndex.reads)
            break
        most = max(most, CountingIndex.reads)
        at_least -= 1
    assert most <= 1, rule
    assert at_least <= 0, rule


def test_the_search_of_a_refusal_judges_one_nominated_pod_a_step() -> None:
    pods = [slim_pod(twin(f"twin-{index}", klass="high"), SHARED) for index in range(5)]
    judged: list[str] = []
    steps = refusal_search("node-a", 8000, pods, lambda p: judged.append(p.name) or False)
    found = []
    while True:
        before = len(judged)
        try:
            next(steps)
        except StopIteration as done:
            found.append(len(judged) - before)
            assert isinstance(done.value, NotSteered)
            break
        found.append(len(judged) - before)
    assert max(found) <= 1 and len(judged) == 5
