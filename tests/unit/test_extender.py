"""The extender's preempt decision: victims per node as upstream's SelectVictimsOnNode chooses them, the
scheduler's choice kept when no victim tolerates the preemptor, and the wire format in both modes."""

from datetime import UTC, datetime

import pytest

from preemption_toleration.api.extender import ExtenderPreemptionArgs
from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY as MIN
from preemption_toleration.core.annotations import TOLERATION_SECONDS as TOL
from preemption_toleration.extender.decisions import NodeChoice, decide_preemption
from preemption_toleration.inventory.budgets import BudgetIndex
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.node import node_record
from preemption_toleration.records.priority_class import class_view
from tests import builders

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
CLASSES = {
    "low": {"metadata": {"name": "low"}, "value": 8000},
    "low-non-preempted": {
        "metadata": {"name": "low-non-preempted", "annotations": {MIN: "10000", TOL: "-1"}},
        "value": 8000,
    },
    "low-10min": {"metadata": {"name": "low-10min", "annotations": {MIN: "10000", TOL: "600"}}, "value": 8000},
    "mid": {"metadata": {"name": "mid"}, "value": 8500},
    "high": {"metadata": {"name": "high"}, "value": 9000},
}
# The classes of the three departures from upstream that a differential run against upstream's plugin found
UPSTREAM_CLASSES = {"u-low": 1000, "u-mid": 1050, "u-high": 1100, "u-pre": 1200, "u-top": 1300}
for _name, _value in UPSTREAM_CLASSES.items():
    CLASSES[_name] = {"metadata": {"name": _name}, "value": _value}
for _name, _value in {"u-prot": 900, "u-exempt": 1050}.items():
    CLASSES[_name] = {"metadata": {"name": _name, "annotations": {MIN: "5000", TOL: "-1"}}, "value": _value}
PRIORITY = {name: body["value"] for name, body in CLASSES.items()}
CLASS_RECORDS = {name: class_view(body) for name, body in CLASSES.items()}


def pod(name, klass, cpu="1", node="node-a", scheduled="2026-11-22T11:00:00Z", started=None, labels=None, **extra):
    """A pod of the class; bound to `node` unless None, started when it was scheduled unless `started`."""
    body = {
        "metadata": {
            "name": name,
            "namespace": "team",
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-11-22T10:00:00Z",
            **({"labels": labels} if labels else {}),
        },
        "spec": {
            "priority": PRIORITY[klass],
            "priorityClassName": klass,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Running", "conditions": []},
    }
    if node:
        body["spec"]["nodeName"] = node
        body["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled}]
        body["status"]["startTime"] = started or scheduled
    for path, value in extra.items():
        section, _, field = path.partition("__")
        body[section][field] = value
    return body


def node(name, cpu="3", pods="110"):
    return node_record(builders.node(name, cpu=cpu, pods=pods))


NODE_A = (node("node-a"),)


def view(pods, nodes=NODE_A):
    return ClusterView(PodIndex.of(pods), {n.name: n for n in nodes}, CLASS_RECORDS)


def args(preemptor, proposals, meta=True):
    if meta:
        return ExtenderPreemptionArgs.model_validate(
            {
                "Pod": preemptor,
                "NodeNameToMetaVictims": {
                    node: {"Pods": [{"UID": f"uid-{name}"} for name in names], "NumPDBViolations": 0}
                    for node, names in proposals.items()
                },
            }
        )
    return ExtenderPreemptionArgs.model_validate(
        {
            "Pod": preemptor,
            "NodeNameToVictims": {
                node: {"Pods": [{"metadata": {"uid": f"uid-{name}"}} for name in names], "NumPDBViolations": 0}
                for node, names in proposals.items()
            },
        }
    )


HIGH_3CPU = pod("high", "high", cpu="3", node=None)
HIGH_1CPU = pod("high", "high", cpu="1", node=None)

# (rule, pods on the nodes, preemptor, the scheduler's proposal, expected {node: (choice, victims)})
CASES = [
    (
        "no victim is exempt: the scheduler's choice stands",
        [pod("a", "low"), pod("b", "low")],
        HIGH_1CPU,
        {"node-a": ["a"]},
        {"node-a": (NodeChoice.UNCHANGED, ["a"])},
    ),
    (
        "the preemptor cannot fit without the protected pod: the node is left out (the known-limit case)",
        [pod("a", "low"), pod("b", "low-non-preempted")],
        HIGH_3CPU,
        {"node-a": ["a", "b"]},
        {"node-a": (NodeChoice.DROPPED, [])},
    ),
    (
        "substitution: the scheduler picked a protected pod, plain ones are preempted instead",
        [pod("p", "low-non-preempted"), pod("a", "low"), pod("b", "low")],
        pod("high", "high", cpu="2", node=None),
        {"node-a": ["p"]},
        {"node-a": (NodeChoice.REPLACED, ["a", "b"])},
    ),
    (
        "reprieve, most important first: the higher-priority victim is kept when one victim is enough",
        [pod("p", "low-non-preempted"), pod("a", "low"), pod("m", "mid")],
        HIGH_1CPU,
        {"node-a": ["p"]},
        {"node-a": (NodeChoice.REPLACED, ["a"])},
    ),
    (
        "reprieve ties: of equal priority, the longer-running pod is kept",
        [
            pod("p", "low-non-preempted"),
            pod("old", "low", scheduled="2026-11-22T08:00:00Z"),
            pod("new", "low", scheduled="2026-11-22T11:00:00Z"),
        ],
        HIGH_1CPU,
        {"node-a": ["p"]},
        {"node-a": (NodeChoice.REPLACED, ["new"])},
    ),
    (
        "reprieve ties: equal priorities are ordered by status.startTime, not by the PodScheduled time",
        [
            pod("a", "u-low", scheduled="2026-11-22T11:58:10Z", started="2026-11-22T11:59:40Z"),
            pod("b", "u-low", scheduled="2026-11-22T11:58:15Z", started="2026-11-22T11:59:10Z"),
            pod("p", "u-prot"),
        ],
        pod("pre", "u-pre", cpu="1", node=None),
        {"node-a": ["p"]},
        {"node-a": (NodeChoice.REPLACED, ["a"])},
    ),
    (
        "reprieve ties: a pod without status.startTime counts as started now, the least important",
        [
            pod("a", "u-low", started="2026-11-22T11:59:40Z"),
            pod("b", "u-low", status__startTime=None),
            pod("p", "u-prot"),
        ],
        pod("pre", "u-pre", cpu="1", node=None),
        {"node-a": ["p"]},
        {"node-a": (NodeChoice.REPLACED, ["b"])},
    ),
    (
        "a time-limited toleration that has ended protects nothing",
        [pod("t", "low-10min", scheduled="2026-11-22T11:00:00Z"), pod("a", "low")],
        HIGH_3CPU,
        {"node-a": ["t", "a"]},
        {"node-a": (NodeChoice.UNCHANGED, ["t", "a"])},
    ),
    (
        "a time-limited toleration still running protects its pod",
        [pod("t", "low-10min", scheduled="2026-11-22T11:55:00Z"), pod("a", "low"), pod("b", "low")],
        pod("high", "high", cpu="2", node=None),
        {"node-a": ["t", "a"]},
        {"node-a": (NodeChoice.REPLACED, ["a", "b"])},
    ),
    (
        "a terminating pod is a victim like the others (SelectVictimsOnNode counts it; the executor skips its "
        "DELETE), its resources in use until it is gone",
        [
            pod("p", "low-non-preempted"),
            pod("a", "low", metadata__deletionTimestamp="2026-11-22T11:59:00Z"),
            pod("b", "low"),
        ],
        pod("high", "high", cpu="2", node=None),
        {"node-a": ["p"]},
        {"node-a": (NodeChoice.REPLACED, ["a", "b"])},
    ),
    (
        "a terminating pod that frees enough room is the only victim",
        [
            pod("p", "low-non-preempted"),
            pod("a", "low", cpu="2", metadata__deletionTimestamp="2026-11-22T11:59:00Z"),
        ],
        pod("high", "high", cpu="2", node=None),
        {"node-a": ["p"]},
        {"node-a": (NodeChoice.REPLACED, ["a"])},
    ),
    (
        "a finished pod takes no room",
        [pod("p", "low-non-preempted"), pod("done", "low", status__phase="Succeeded"), pod("b", "low")],
        pod("high", "high", cpu="2", node=None),
        {"node-a": ["p"]},
        {"node-a": (NodeChoice.REPLACED, ["b"])},
    ),
    (
        "the pod count counts: a full node needs a victim even where CPU is free",
        [pod("p", "low-non-preempted", cpu="0"), pod("a", "low", cpu="0")],
        pod("high", "high", cpu="0", node=None),
        {"node-a": ["p"]},
        {"node-a": (NodeChoice.REPLACED, ["a"])},
    ),
    (
        "a higher-priority pod nominated to the node takes its room first",
        [
            pod("p", "low-non-preempted"),
            pod("a", "low"),
            pod("b", "low"),
            pod("first", "high", cpu="1", node=None, status__nominatedNodeName="node-a"),
        ],
        pod("high", "high", cpu="1", node=None),
        {"node-a": ["p"]},
        {"node-a": (NodeChoice.REPLACED, ["a", "b"])},
    ),
    (
        "an exempt pod the scheduler did not propose, under no budget: the scheduler's choice stands",
        [pod("p", "low-non-preempted"), pod("a", "low"), pod("b", "low")],
        HIGH_1CPU,
        {"node-a": ["a"]},
        {"node-a": (NodeChoice.UNCHANGED, ["a"])},
    ),
    (
        "a victim the cache has not seen: the scheduler's choice, for the guard to judge",
        [pod("p", "low-non-preempted")],
        HIGH_1CPU,
        {"node-a": ["p", "ghost"]},
        {"node-a": (NodeChoice.UNKNOWN, ["p", "ghost"])},
    ),
    (
        "several nodes are judged each on its own",
        [
            pod("p", "low-non-preempted", node="node-a"),
            pod("q", "low-non-preempted", node="node-a"),
            pod("a", "low", node="node-b"),
        ],
        HIGH_1CPU,
        {"node-a": ["p"], "node-b": ["a"]},
        {"node-a": (NodeChoice.DROPPED, []), "node-b": (NodeChoice.UNCHANGED, ["a"])},
    ),
]


@pytest.mark.parametrize(("rule", "pods", "preemptor", "proposal", "expected"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("meta", [True, False], ids=["nodeCacheCapable", "full pods"])
def test_victims_per_node(rule, pods, preemptor, proposal, expected, meta) -> None:
    nodes = (node("node-a"), node("node-b"))
    if rule.startswith("the pod count"):
        nodes = (node("node-a", pods="2"),)
    decision = decide_preemption(args(preemptor, proposal, meta), view(pods, nodes), NOW)
    got = {o.node: (o.choice, sorted(uid.removeprefix("uid-") for uid in o.victims)) for o in decision.outcomes}
    assert got == {n: (choice, sorted(victims)) for n, (choice, victims) in expected.items()}, rule
    wire = decision.result.to_wire()["NodeNameToMetaVictims"]
    assert set(wire) == {n for n, (_, victims) in expected.items() if victims}, "never a node without victims"
    for entry in wire.values():
        assert all(victim["UID"].startswith("uid-") for victim in entry["Pods"]) and entry["Pods"]


def budget(name, allowed, **match_labels):
    return {
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"selector": {"matchLabels": match_labels}},
        "status": {"disruptionsAllowed": allowed},
    }


def test_victims_are_sorted_again_after_the_budget_violating_ones_are_reprieved() -> None:
    """Upstream's SelectVictimsOnNode sorts its final list; the scheduler reads the first victim as the node's
    most important when it picks a node, and keeps the extender's order. Reproduction: node na holds l
    (u-low, under a budget with no disruption left), h (u-high) and p (protected); the preemptor needs 3 CPUs."""
    pods = [
        pod("l", "u-low", node="na", labels={"grp": "a"}),
        pod("h", "u-high", node="na"),
        pod("p", "u-prot", node="na"),
    ]
    nodes = {"na": node("na", cpu="4")}
    extender_view = ClusterView(PodIndex.of(pods), nodes, CLASS_RECORDS, BudgetIndex.of([budget("b", 0, grp="a")]))
    decision = decide_preemption(args(pod("pre", "u-pre", cpu="3", node=None), {"na": ["h", "p"]}), extender_view, NOW)
    assert decision.result.to_wire()["NodeNameToMetaVictims"] == {
        "na": {"Pods": [{"UID": "uid-h"}, {"UID": "uid-l"}], "NumPDBViolations": 1}
    }


EXEMPT_UNDER_BUDGET = [
    pod("t1", "u-top", cpu="1", node="nc"),
    pod("x", "u-low", cpu="2", node="nc", labels={"grp": "a"}),
    pod("e", "u-exempt", cpu="500m", node="nc", labels={"grp": "a"}),
]


def _exempt_under_budget(preemptor, allowed=1):
    extender_view = ClusterView(
        PodIndex.of(EXEMPT_UNDER_BUDGET),
        {"nc": node("nc", cpu="3500m")},
        CLASS_RECORDS,
        BudgetIndex.of([budget("b", allowed, grp="a")]),
    )
    proposal = ExtenderPreemptionArgs.model_validate(
        {"Pod": preemptor, "NodeNameToMetaVictims": {"nc": {"Pods": [{"UID": "uid-x"}], "NumPDBViolations": 1}}}
    )
    return decide_preemption(proposal, extender_view, NOW)


def test_a_pod_that_tolerates_the_preemptor_uses_none_of_a_budget() -> None:
    """The scheduler's dry run counts the exempt pod e against the budget (1 disruption allowed), so x looks
    violating (1). Upstream's potential victims leave e out: x is within the budget (0)."""
    decision = _exempt_under_budget(pod("pre", "u-pre", cpu="1500m", node=None))
    [outcome] = decision.outcomes
    assert outcome.choice is NodeChoice.RECOUNTED
    assert decision.result.to_wire()["NodeNameToMetaVictims"] == {
        "nc": {"Pods": [{"UID": "uid-x"}], "NumPDBViolations": 0}
    }


def test_a_pod_that_tolerates_the_preemptor_under_a_budget_with_no_disruption_left_changes_no_count() -> None:
    """The budget has no disruption left, so x is violating with or without e: the scheduler's choice and
    count stand, and the node's pods are not chosen again."""
    decision = _exempt_under_budget(pod("pre", "u-pre", cpu="1500m", node=None), allowed=0)
    [outcome] = decision.outcomes
    assert outcome.choice is NodeChoice.UNCHANGED
    assert decision.result.to_wire()["NodeNameToMetaVictims"] == {
        "nc": {"Pods": [{"UID": "uid-x"}], "NumPDBViolations": 1}
    }


def test_a_preemptor_the_project_cannot_judge_keeps_the_schedulers_victims_counted_again() -> None:
    preemptor = pod("pre", "u-pre", cpu="1500m", node=None)
    preemptor["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    decision = _exempt_under_budget(preemptor)
    [outcome] = decision.outcomes
    assert (outcome.choice, outcome.victims, outcome.pdb_violations) == (NodeChoice.RECOUNTED, ("uid-x",), 0)


def test_a_victim_deleted_since_the_schedulers_dry_run_is_said_to_be_deleted() -> None:
    index = PodIndex.of([pod("p", "low-non-preempted"), pod("gone", "low")])
    index.remove(pod("gone", "low"))
    extender_view = ClusterView(index, {"node-a": node("node-a")}, CLASS_RECORDS)
    decision = decide_preemption(args(HIGH_1CPU, {"node-a": ["p", "gone", "ghost"]}), extender_view, NOW)
    [outcome] = decision.outcomes
    assert outcome.choice is NodeChoice.UNKNOWN
    assert outcome.detail == "already deleted: uid-gone; not in the cache yet: uid-ghost"


def test_the_answer_uses_go_field_names() -> None:
    decision = decide_preemption(args(HIGH_1CPU, {"node-a": ["a"]}), view([pod("a", "low")]), NOW)
    assert decision.result.to_wire() == {
        "NodeNameToMetaVictims": {"node-a": {"Pods": [{"UID": "uid-a"}], "NumPDBViolations": 0}}
    }


def test_a_preemptor_that_never_preempts_gets_no_node() -> None:
    never = pod("high", "high", node=None, spec__preemptionPolicy="Never")
    decision = decide_preemption(args(never, {"node-a": ["a"]}), view([pod("a", "low")]), NOW)
    assert decision.result.to_wire() == {"NodeNameToMetaVictims": {}}


def test_a_victim_of_an_unknown_class_leaves_the_node_out_as_upstream_does() -> None:
    ghost = pod("g", "low")
    ghost["spec"]["priorityClassName"] = "deleted-class"
    decision = decide_preemption(args(HIGH_1CPU, {"node-a": ["g"]}), view([ghost]), NOW)
    assert decision.outcomes[0].choice is NodeChoice.DROPPED and "deleted-class" in decision.outcomes[0].detail


def test_a_preemptor_is_held_until_the_first_toleration_on_the_node_ends_proposed_or_not() -> None:
    """The scheduler proposes the newest pod; the older one's guarantee ends first, so the nudge is due then."""
    older = pod("older", "low-10min", scheduled="2026-11-22T11:52:00Z")  # ends 12:02
    newer = pod("newer", "low-10min", scheduled="2026-11-22T11:55:00Z")  # ends 12:05
    decision = decide_preemption(args(HIGH_3CPU, {"node-a": ["newer"]}), view([older, newer, pod("a", "low")]), NOW)
    [outcome] = decision.outcomes
    assert outcome.choice is NodeChoice.DROPPED
    assert outcome.held_until == datetime(2026, 11, 22, 12, 2, tzinfo=UTC)


def test_a_member_of_a_protected_pod_group_is_judged_as_its_group() -> None:
    """On a cluster with pod groups, a lone preemptor's victims may be members of a group: a member of the
    plain class `low` in a PodGroup of `low-non-preempted` tolerates the preemptor, as the guard judges it, and
    the other pod goes in its place. Without the PodGroup, the member is judged by its own class."""
    from preemption_toleration.records.pod_group import pod_group_record

    member = pod("m", "low", started="2026-11-22T11:30:00Z", spec__schedulingGroup={"podGroupName": "g"})
    pods = [member, pod("plain", "low")]
    group = pod_group_record(
        {
            "metadata": {"name": "g", "namespace": "team", "uid": "g"},
            "spec": {"priority": 8000, "priorityClassName": "low-non-preempted", "disruptionMode": {"all": {}}},
        }
    )
    preemptor = pod("high", "high", cpu="2", node=None)
    grouped = view(pods)
    grouped.groups = {group.ref: group}
    for state, expected in ((grouped, ["uid-plain"]), (view(pods), ["uid-m"])):
        [outcome] = decide_preemption(args(preemptor, {"node-a": ["m"]}), state, NOW).outcomes
        assert sorted(outcome.victims) == expected, outcome


TWO_NODES = (node("node-a"), node("node-b"))


def grouped_view(pods, *groups, nodes=TWO_NODES):
    """The cache with these PodGroups (name, class, mode), each of priority 8000."""
    from preemption_toleration.records.pod_group import pod_group_record

    state = view(pods, nodes)
    records = [
        pod_group_record(
            {
                "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}"},
                "spec": {"priority": 8000, "priorityClassName": klass, "disruptionMode": {mode: {}}},
            }
        )
        for name, klass, mode in groups
    ]
    state.groups = {record.ref: record for record in records}
    return state


def member(name, group, node_name, klass="low"):
    return pod(name, klass, node=node_name, spec__schedulingGroup={"podGroupName": group})


ACROSS = [
    # (rule, the group's class, its mode, the choice, the victims returned for node-a)
    ("a protected group on two nodes: node-a left out", "low-non-preempted", "all", NodeChoice.DROPPED, []),
    (
        "a plain group on two nodes: as proposed, which the scheduler cannot take",
        "low",
        "all",
        NodeChoice.ACROSS_NODES,
        ["uid-m-a", "uid-m-b"],
    ),
    ("a single group's member elsewhere: a pod the node does not hold", "low", "single", NodeChoice.UNKNOWN, None),
]


@pytest.mark.parametrize(("rule", "klass", "mode", "choice", "returned"), ACROSS, ids=[a[0] for a in ACROSS])
def test_a_group_proposed_across_nodes_gets_an_answer_the_scheduler_takes_or_none(
    rule, klass, mode, choice, returned
) -> None:
    """1.37 proposes a `disruptionMode: all` group whole as one node's victims, its member on node-b included,
    and looks each returned UID up on node-a alone."""
    pods = [member("m-a", "g", "node-a"), member("m-b", "g", "node-b")]
    preemptor = pod("high", "high", cpu="3", node=None)
    state = grouped_view(pods, ("g", klass, mode))
    decision = decide_preemption(args(preemptor, {"node-a": ["m-a", "m-b"]}), state, NOW)
    [outcome] = decision.outcomes
    assert outcome.choice is choice, outcome
    sent = decision.result.node_name_to_meta_victims.get("node-a")
    if returned is not None:
        assert ([pod.uid for pod in sent.pods] if sent else []) == returned


def test_a_choice_made_again_never_takes_part_of_an_all_group() -> None:
    """node-a (3 CPUs): two members of a plain `all` group and a protected pod, 1 CPU each. The scheduler
    proposes the protected pod; chosen again pod by pod, one member would do, and the group would be left in
    part: the node is left out instead. A lone pod in the group's place is chosen as before."""
    pods = [member("m-1", "g", "node-a"), member("m-2", "g", "node-a"), pod("protected", "low-non-preempted")]
    preemptor = pod("high", "high", cpu="1", node=None)
    state = grouped_view(pods, ("g", "low", "all"))
    [outcome] = decide_preemption(args(preemptor, {"node-a": ["protected"]}), state, NOW).outcomes
    assert outcome.choice is NodeChoice.DROPPED and outcome.victims == ()
    state = grouped_view(pods, ("g", "low", "single"))
    [outcome] = decide_preemption(args(preemptor, {"node-a": ["protected"]}), state, NOW).outcomes
    assert outcome.choice is NodeChoice.REPLACED and len(outcome.victims) == 1
