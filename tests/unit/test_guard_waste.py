"""With steering on, the guard refuses a scheduler's victim that would be deleted in vain: one that does not
tolerate the preemptor, on a node where the preemptor cannot fit without pods that do. One row per rule."""

import copy
from datetime import timedelta

import pytest

from preemption_toleration.core.quantities import allocatable
from preemption_toleration.extender.decisions import ExemptionCheck
from preemption_toleration.guard.decisions import judge
from preemption_toleration.guard.verdicts import GuardConfig
from preemption_toleration.guard.waste import stock_choice_refused
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.node import NodeRecord
from tests.unit.guard_requests import answered
from tests.unit.test_guard import CLASSES, NOW, POLICIES, bound, class_view, pending, pod_request


def cpu(pod, amount):
    """The pod with a CPU request; a bound one started when it was scheduled."""
    pod["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"cpu": amount}}}]
    for condition in pod["status"].get("conditions") or []:
        if condition["type"] == "PodScheduled":
            pod["status"]["startTime"] = condition["lastTransitionTime"]
    return pod


def state(*pods, node_cpu="3"):
    node = NodeRecord("node-1", allocatable=allocatable({"status": {"allocatable": {"cpu": node_cpu, "pods": "110"}}}))
    return ClusterView(
        pods=PodIndex.of(pods),
        nodes={"node-1": node},
        classes={name: class_view(body) for name, body in CLASSES.items()},
        policies=POLICIES,
    )


PLAIN = cpu(bound("victim", 8000, "low"), "1")
# started before the plain victim: the more important of the two (the scheduler reprieves it first)
PROTECTED = cpu(bound("protected", 8000, "low-non-preempted", ago=timedelta(seconds=60)), "2")
STEERING = GuardConfig(refuse_in_vain=True)

CASES = [
    (
        "the preemptor needs the protected pod's room too: the plain victim is refused",
        [PLAIN, PROTECTED, cpu(pending("high", 9000), "2")],
        STEERING,
        False,
        "3",
    ),
    (
        "the preemptor fits with the plain victim gone: allowed",
        [PLAIN, PROTECTED, cpu(pending("high", 9000), "1")],
        STEERING,
        True,
        "3",
    ),
    (
        "steering off: the guard judges only the victim's own toleration",
        [PLAIN, PROTECTED, cpu(pending("high", 9000), "2")],
        GuardConfig(),
        True,
        "3",
    ),
    (
        "in audit nothing more is refused",
        [PLAIN, PROTECTED, cpu(pending("high", 9000), "2")],
        GuardConfig(refuse_in_vain=True, audit=True),
        True,
        "3",
    ),
    (
        "upstream would preempt another plain pod there: refused",
        [
            PLAIN,
            PROTECTED,
            cpu(bound("newer", 8000, "low", ago=timedelta(seconds=5)), "1"),
            cpu(pending("high", 9000), "1"),
        ],
        STEERING,
        False,
        "4",
    ),
    (
        "no pod of the node tolerates the preemptor: the scheduler's choice is upstream's, allowed",
        [PLAIN, cpu(bound("other", 8000, "low"), "2"), cpu(pending("high", 9000), "2")],
        STEERING,
        True,
        "3",
    ),
    (
        "the pod tolerates nobody above the minimum: a critical preemptor fits, allowed",
        [PLAIN, PROTECTED, cpu(pending("critical", 10000), "2")],
        STEERING,
        True,
        "3",
    ),
]


@pytest.mark.parametrize(("rule", "pods", "config", "allowed", "node_cpu"), CASES, ids=[case[0] for case in CASES])
def test_in_vain(rule, pods, config, allowed, node_cpu) -> None:
    verdict = judge(pod_request(None, old=PLAIN), state(*pods, node_cpu=node_cpu), config, NOW)
    assert verdict.allowed is allowed, rule


def test_the_refusal_says_why() -> None:
    verdict = judge(
        pod_request(None, old=PLAIN), state(PLAIN, PROTECTED, cpu(pending("high", 9000), "2")), STEERING, NOW
    )
    assert answered(verdict).status is not None
    assert answered(verdict).status.message == (
        "pod team/victim would be preempted in vain for team/high (priority 9000): the scheduler's choice on node "
        "node-1 includes team/protected, which tolerate it, so its preemption there cannot complete."
    )
    assert verdict.refusal is not None and verdict.refusal.preemptor == "team/high"


STOCK_CASES = [
    ("its stock choice holds the victim and a pod that tolerates it: refused", "victim", ("high", 9000, "3"), True),
    ("its stock choice leaves the victim: not refused for it", "victim", ("high", 9000, "2"), False),
    ("its stock choice holds no pod that tolerates it: not refused", "victim", ("high", 9000, "1"), False),
    ("the victim itself tolerates it and is chosen: refused", "protected", ("high", 9000, "2"), True),
    ("a preemptor nobody tolerates: not refused", "victim", ("critical", 10000, "3"), False),
]


@pytest.mark.parametrize(
    ("rule", "victim_name", "preemptor", "refused"), STOCK_CASES, ids=[case[0] for case in STOCK_CASES]
)
def test_whether_the_stock_choice_for_a_preemptor_is_refused(rule, victim_name, preemptor, refused) -> None:
    """Steering's test of a refusal judged against another pod nominated to the node (`stock_choice_refused`)."""
    name, priority, amount = preemptor
    pods = [copy.deepcopy(body) for body in (PLAIN, PROTECTED, cpu(pending(name, priority), amount))]
    for body in pods:
        body["metadata"]["uid"] = "uid-" + body["metadata"]["name"]
    view = state(*pods)
    candidate = view.pods.get(("team", name))
    victim = view.pods.get(("team", victim_name))
    exempt = ExemptionCheck(candidate, view, NOW)
    found = stock_choice_refused(candidate, victim, view.nodes["node-1"], view.pods, view.budgets, exempt)
    assert found is refused, rule
