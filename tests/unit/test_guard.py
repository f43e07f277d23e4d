"""The eviction guard's pure parts: preemptor inference, scheduling compatibility, decisions, messages.

Includes the payloads current API servers send (policy/v1 Eviction, the DisruptionTarget status update).
"""

import json
from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.core.annotations import PREEMPTOR, PREEMPTOR_PRIORITY
from preemption_toleration.guard.decisions import judge
from preemption_toleration.guard.finding import marking_scheduler
from preemption_toleration.guard.inference import VictimPlace, infer_preemptor
from preemption_toleration.guard.matching import could_run_on
from preemption_toleration.guard.request import GuardRequest, read_guard_request
from preemption_toleration.guard.verdicts import GuardConfig, PreemptorSource
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.node import node_record
from preemption_toleration.records.policy import policy_view
from preemption_toleration.records.priority_class import class_view
from tests import builders
from tests.builders import pod, priority_class
from tests.unit.admission_payloads import review
from tests.unit.guard_requests import answered

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
POD_RESOURCE = {"group": "", "version": "v1", "resource": "pods"}
POD_KIND = {"group": "", "version": "v1", "kind": "Pod"}
SCHEDULER = "system:kube-scheduler"


def bound(name, priority, class_name=None, node="node-1", ago=timedelta(seconds=30), namespace="team"):
    p = pod(name, priority, class_name, NOW - ago if ago is not None else None)
    p["metadata"]["namespace"] = namespace
    p["spec"]["nodeName"] = node
    return p


def pending(name, priority, namespace="team", created="2026-11-22T11:00:00Z", **spec):
    p = pod(name, priority)
    p["metadata"].update(namespace=namespace, creationTimestamp=created)
    p["spec"].update(spec)
    return p


def node(name="node-1", labels=None, taints=None):
    return node_record(builders.node(name, labels=labels, taints=taints))


# ------------------------------------------------------------------------- compatibility and inference

COMPATIBILITY = [
    # (rule, pod spec, node labels, taints, could run)
    ("no constraints", {}, {}, [], True),
    ("node selector matches", {"nodeSelector": {"pool": "gpu"}}, {"pool": "gpu"}, [], True),
    ("node selector differs", {"nodeSelector": {"pool": "gpu"}}, {"pool": "cpu"}, [], False),
    (
        "required affinity In",
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                        ]
                    }
                }
            }
        },
        {"zone": "a"},
        [],
        True,
    ),
    (
        "required affinity terms are ORed",
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
                            {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
                        ]
                    }
                }
            }
        },
        {"zone": "a"},
        [],
        True,
    ),
    (
        "required affinity NotIn",
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}
                        ]
                    }
                }
            }
        },
        {"zone": "a"},
        [],
        False,
    ),
    ("untolerated NoSchedule taint", {}, {}, [{"key": "gpu", "value": "true", "effect": "NoSchedule"}], False),
    (
        "tolerated taint",
        {"tolerations": [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]},
        {},
        [{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
        True,
    ),
    (
        "Exists without key tolerates all",
        {"tolerations": [{"operator": "Exists"}]},
        {},
        [{"key": "x", "effect": "NoExecute"}],
        True,
    ),
    ("PreferNoSchedule does not keep pods off", {}, {}, [{"key": "x", "effect": "PreferNoSchedule"}], True),
]


@pytest.mark.parametrize(("rule", "spec", "labels", "taints", "fits"), COMPATIBILITY, ids=[c[0] for c in COMPATIBILITY])
def test_compatibility(rule, spec, labels, taints, fits) -> None:
    assert could_run_on(pending("p", 9000, **spec), node(labels=labels, taints=taints)) is fits


def infer(victim, pods, on=None):
    place = VictimPlace(victim["spec"]["priority"], victim["spec"]["nodeName"], on or node())
    return infer_preemptor(place, PodIndex.of(pods))


def test_nominated_pod_comes_first_even_with_lower_priority() -> None:
    victim = bound("victim", 8000)
    nominated = pending("nominated", 9000)
    nominated["status"]["nominatedNodeName"] = "node-1"
    other = pending("other", 9500)
    assert infer(victim, [other, nominated]).name == "nominated"


def test_disagreeing_candidates_resolve_to_the_highest_priority_then_oldest() -> None:
    victim = bound("victim", 8000)
    candidates = [
        pending("a", 9000),
        pending("b", 9500, created="2026-11-22T11:05:00Z"),
        pending("c", 9500, created="2026-11-22T11:01:00Z"),
    ]
    assert infer(victim, candidates).name == "c"


EXCLUDED = [
    ("bound pods", lambda: bound("x", 9000, node="node-2")),
    ("lower or equal priority", lambda: pending("x", 8000)),
    ("preemptionPolicy Never", lambda: pending("x", 9000, preemptionPolicy="Never")),
    (
        "terminating",
        lambda: {
            **pending("x", 9000),
            "metadata": {"name": "x", "namespace": "t", "deletionTimestamp": "2026-11-22T11:00:00Z"},
        },
    ),
    ("cannot run on the victim's node", lambda: pending("x", 9000, nodeSelector={"pool": "gpu"})),
]


@pytest.mark.parametrize(("rule", "make"), EXCLUDED, ids=[c[0] for c in EXCLUDED])
def test_not_candidates(rule, make) -> None:
    assert infer(bound("victim", 8000), [make()]) is None


# ------------------------------------------------------------------------- decisions

CLASSES = {
    "low-non-preempted": priority_class("low-non-preempted", 8000, "10000", "-1"),
    "low-non-preempted-10min": priority_class("low-non-preempted-10min", 8000, "10000", "600"),
    "low": priority_class("low", 8000),
}
POLICIES = {
    "forever": policy_view(
        {
            "apiVersion": "preemption-toleration.dev/v1alpha1",
            "kind": "PreemptionTolerationPolicy",
            "metadata": {"name": "forever", "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": {
                "priorityClassName": "low-non-preempted",
                "minimumPreemptablePriority": 10000,
                "tolerationSeconds": -1,
            },
        }
    )
}


def snapshot(*pods):
    return ClusterView(
        pods=PodIndex.of(pods),
        nodes={"node-1": node()},
        classes={name: class_view(body) for name, body in CLASSES.items()},
        policies=POLICIES,
    )


def pod_request(
    obj, old=None, operation="DELETE", sub_resource=None, user=SCHEDULER, dry_run=False, name="victim", kind=POD_KIND
):
    payload = review(obj, old=old, operation=operation, resource=POD_RESOURCE, kind=kind, user=user)
    payload["request"].update(namespace="team", name=name, dryRun=dry_run)
    if sub_resource:
        payload["request"]["subResource"] = sub_resource
    request = read_guard_request(json.dumps(payload).encode())  # as the server reads it
    assert isinstance(request, GuardRequest)
    return request


def eviction(version="policy/v1", **annotations):
    return {
        "apiVersion": version,
        "kind": "Eviction",
        "metadata": {"name": "victim", "namespace": "team", "annotations": annotations},
        "deleteOptions": {},
    }


EVICTION_KIND = {"group": "policy", "version": "v1", "kind": "Eviction"}


def eviction_request(version="policy/v1", **annotations):
    """alice's Eviction of team/victim (a CREATE of pods/eviction) with these annotations."""
    return pod_request(
        eviction(version, **annotations), operation="CREATE", sub_resource="eviction", user="alice", kind=EVICTION_KIND
    )


@pytest.mark.parametrize("version", ["policy/v1", "policy/v1beta1"])
def test_eviction_with_preemptor_priority_of_a_forever_protected_pod_is_403(version) -> None:
    victim = bound("victim", 8000, "low-non-preempted")
    request = eviction_request(version, **{PREEMPTOR_PRIORITY: "9000"})
    verdict = judge(request, snapshot(victim), GuardConfig(), NOW)
    assert not verdict.allowed and answered(verdict).status.code == 403
    assert answered(verdict).status.message == (
        "pod team/victim (PriorityClass low-non-preempted, priority 8000) tolerates preemption by priorities below "
        '10000 (PreemptionTolerationPolicy "forever"); the preemptor (priority 9000) is below it, and the '
        "toleration has no end. Only priority 10000 or more may preempt it."
    )


def test_eviction_refused_for_a_time_limited_toleration_is_429_with_seconds_left() -> None:
    victim = bound("victim", 8000, "low-non-preempted-10min", ago=timedelta(seconds=100))
    preemptor = pending("high-1", 9000)
    request = eviction_request(**{PREEMPTOR: "team/high-1"})
    verdict = judge(request, snapshot(victim, preemptor), GuardConfig(), NOW)
    assert answered(verdict).status.code == 429
    message = answered(verdict).status.message
    assert "the preemptor (team/high-1, priority 9000) is below it until 2026-11-22T12:08:20Z" in message
    assert "(500 s left of 600 s guaranteed running time). Retry after 500 s." in message
    assert "the annotations of PriorityClass low-non-preempted-10min" in message
    assert verdict.refusal.reason == "Until"


ALLOWED = [
    ("eviction without the annotation is a drain, not a preemption", eviction_request),
    ("preemptor at the minimum", lambda: eviction_request(**{PREEMPTOR_PRIORITY: "10000"})),
    ("delete by a user", lambda: pod_request(None, old=bound("victim", 8000, "low-non-preempted"), user="alice")),
]


@pytest.mark.parametrize(("rule", "make"), ALLOWED, ids=[c[0] for c in ALLOWED])
def test_allowed(rule, make) -> None:
    victim = bound("victim", 8000, "low-non-preempted")
    verdict = judge(make(), snapshot(victim, pending("high-1", 9000)), GuardConfig(), NOW)
    assert verdict.allowed and verdict.refusal is None


def test_bad_preemptor_priority_is_not_judged_and_says_why() -> None:
    request = eviction_request(**{PREEMPTOR_PRIORITY: "9k"})
    verdict = judge(request, snapshot(bound("victim", 8000, "low-non-preempted")), GuardConfig(), NOW)
    assert verdict.allowed and "9k" in answered(verdict).warnings[0]


def test_scheduler_delete_is_judged_against_the_inferred_preemptor() -> None:
    victim = bound("victim", 8000, "low-non-preempted")
    state = snapshot(victim, pending("high-1", 9000))
    verdict = judge(pod_request(None, old=victim), state, GuardConfig(), NOW)
    assert answered(verdict).status.code == 403
    assert "the preemptor (team/high-1, priority 9000)" in answered(verdict).status.message
    critical = snapshot(victim, pending("critical-1", 10000))
    assert judge(pod_request(None, old=victim), critical, GuardConfig(), NOW).allowed


VICTIM_SOURCES = [
    # (rule, the review's oldObject, refused): the cache holds the protected victim, bound, and its preemptor
    ("the review's oldObject is judged", bound("victim", 8000, "low-non-preempted"), True),
    ("without an oldObject, the cached pod is judged", None, True),
    (
        "an oldObject without a node is nobody's victim, whatever the cache says",
        {"metadata": {"name": "victim"}},
        False,
    ),
    ("an empty oldObject is judged as sent, not replaced by the cached pod", {}, False),
]


@pytest.mark.parametrize(("rule", "old", "refused"), VICTIM_SOURCES, ids=[c[0] for c in VICTIM_SOURCES])
def test_the_victim_judged_is_the_reviews_when_it_carries_one(rule, old, refused) -> None:
    state = snapshot(bound("victim", 8000, "low-non-preempted"), pending("high-1", 9000))
    verdict = judge(pod_request(None, old=old), state, GuardConfig(), NOW)
    assert (not verdict.allowed) == refused, rule


def test_scheduler_delete_of_a_plain_low_pod_is_allowed() -> None:
    victim = bound("victim", 8000, "low")
    assert judge(pod_request(None, old=victim), snapshot(victim, pending("h", 9000)), GuardConfig(), NOW).allowed


def departed_snapshot(victim, *gone, now_pending=(), seconds_ago=5.0):
    """The victim and `now_pending` in the cache; `gone` pending candidates deleted `seconds_ago`."""
    clock = [0.0]
    state = snapshot(victim, *now_pending)
    state.pods = PodIndex(clock=lambda: clock[0])
    for body in (victim, *gone, *now_pending):
        state.pods.put(body)
    for body in gone:
        state.pods.remove(body)
    clock[0] = seconds_ago
    return state


DEPARTED = [
    # (rule, pods deleted 5 s ago, pods pending, status code (None: allowed), the preemptor source)
    ("a preemptor deleted mid-preemption still protects its victims", [pending("high-1", 9000)], [], 403, "departed"),
    ("a departed preemptor the victim tolerates not: allowed", [pending("crit-1", 10000)], [], None, "departed"),
    ("a pending candidate comes first", [pending("crit-1", 10000)], [pending("high-1", 9000)], 403, "inferred"),
    ("a departed pod below the victim is nobody's preemptor", [pending("low-1", 7000)], [], None, None),
    (
        "a departed pod that could not run on the node is not it",
        [pending("high-1", 9000, nodeSelector={"pool": "gpu"})],
        [],
        None,
        None,
    ),
]


@pytest.mark.parametrize(("rule", "gone", "now_pending", "code", "source"), DEPARTED, ids=[d[0] for d in DEPARTED])
def test_a_departed_preemptor(rule, gone, now_pending, code, source) -> None:
    victim = bound("victim", 8000, "low-non-preempted")
    verdict = judge(
        pod_request(None, old=victim), departed_snapshot(victim, *gone, now_pending=now_pending), GuardConfig(), NOW
    )
    assert (None if verdict.allowed else answered(verdict).status.code) == code
    assert (verdict.source.value if verdict.source else None) == source


def test_a_departed_preemptor_is_named_as_deleted_and_forgotten_after_30_seconds() -> None:
    victim = bound("victim", 8000, "low-non-preempted")
    verdict = judge(
        pod_request(None, old=victim), departed_snapshot(victim, pending("high-1", 9000)), GuardConfig(), NOW
    )
    assert "the preemptor (team/high-1, deleted since, priority 9000) is below it" in answered(verdict).status.message
    late = departed_snapshot(victim, pending("high-1", 9000), seconds_ago=31)
    assert judge(pod_request(None, old=victim), late, GuardConfig(), NOW).allowed


def test_scheduler_delete_without_any_candidate_is_allowed() -> None:
    victim = bound("victim", 8000, "low-non-preempted")
    assert judge(pod_request(None, old=victim), snapshot(victim), GuardConfig(), NOW).allowed


def marked(p):
    new = {
        **p,
        "status": {
            **p["status"],
            "conditions": p["status"]["conditions"]
            + [
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "PreemptionByScheduler",
                    "message": "default-scheduler: preempting to accommodate a higher priority pod",
                }
            ],
        },
    }
    return new


def test_disruption_target_mark_of_a_protected_pod_is_refused() -> None:
    victim = bound("victim", 8000, "low-non-preempted")
    request = pod_request(marked(victim), old=victim, operation="UPDATE", sub_resource="status")
    verdict = judge(request, snapshot(victim, pending("high-1", 9000)), GuardConfig(), NOW)
    assert answered(verdict).status.code == 403 and verdict.refusal.kind == "status"
    # other status updates by the scheduler pass
    other = pod_request(victim, old=victim, operation="UPDATE", sub_resource="status")
    assert judge(other, snapshot(victim, pending("high-1", 9000)), GuardConfig(), NOW).allowed


def _mark(message, reason="PreemptionByScheduler", status="True"):
    return {
        "status": {"conditions": [{"type": "DisruptionTarget", "status": status, "reason": reason, "message": message}]}
    }


MARKING_SCHEDULERS = [
    (
        "1.35's and 1.37's message names the scheduler",
        _mark("default-scheduler: preempting to accommodate a higher priority pod"),
        "default-scheduler",
    ),
    (
        "a profile of its own",
        _mark("batch-scheduler: preempting to accommodate a higher priority pod"),
        "batch-scheduler",
    ),
    (
        "1.37's pod group preemptor",
        _mark("default-scheduler: preempting to accommodate a higher priority PodGroup"),
        "default-scheduler",
    ),
    ("a message of another form names none", _mark("preempted"), None),
    ("an empty name names none", _mark(": preempting to accommodate a higher priority pod"), None),
    (
        "another reason is not the scheduler's mark",
        _mark("x: preempting to accommodate a higher priority pod", reason="DeletionByTaintManager"),
        None,
    ),
    ("a mark that is False is none", _mark("x: preempting to accommodate a higher priority pod", status="False"), None),
    ("no mark", {"status": {"conditions": []}}, None),
    ("a message that is not a string", _mark(7), None),
]


@pytest.mark.parametrize(("rule", "pod_body", "expected"), MARKING_SCHEDULERS, ids=[c[0] for c in MARKING_SCHEDULERS])
def test_marking_scheduler(rule, pod_body, expected) -> None:
    assert marking_scheduler(pod_body) == expected, rule


def test_a_mark_names_the_scheduler_whose_pods_are_the_candidates() -> None:
    """`critical` would be the guess, but another scheduler places it: the default scheduler's mark is judged
    against `high`, which it places, and refused; the same mark by `critical`'s scheduler is allowed."""
    victim = bound("victim", 8000, "low-non-preempted")
    critical = pending("critical", 10000, schedulerName="gang-scheduler")
    state = snapshot(victim, pending("high", 9000), critical)
    by_default = judge(
        pod_request(marked(victim), old=victim, operation="UPDATE", sub_resource="status"), state, GuardConfig(), NOW
    )
    assert by_default.refusal is not None and by_default.refusal.preemptor == "team/high"
    gang = marked(victim)
    gang["status"]["conditions"][-1]["message"] = "gang-scheduler: preempting to accommodate a higher priority pod"
    by_gang = judge(pod_request(gang, old=victim, operation="UPDATE", sub_resource="status"), state, GuardConfig(), NOW)
    assert by_gang.allowed and by_gang.preemptor.name == "critical"
    # the DELETE after an allowed mark carries it in its oldObject: the same scheduler's pods
    assert judge(pod_request(None, old=gang), state, GuardConfig(), NOW).allowed
    assert not judge(pod_request(None, old=marked(victim)), state, GuardConfig(), NOW).allowed
    # an unmarked DELETE names no scheduler: every pending pod is a candidate, `critical` first
    assert judge(pod_request(None, old=victim), state, GuardConfig(), NOW).allowed


def test_audit_mode_allows_and_reports() -> None:
    victim = bound("victim", 8000, "low-non-preempted")
    verdict = judge(
        pod_request(None, old=victim, dry_run=True),
        snapshot(victim, pending("high-1", 9000)),
        GuardConfig(audit=True),
        NOW,
    )
    assert verdict.allowed and answered(verdict).warnings[0].startswith("audit: would refuse: pod team/victim")
    assert verdict.refusal.audit and verdict.refusal.dry_run
    # the whole message reaches kubectl, in pieces the API server passes on whole
    assert len(answered(verdict).warnings) > 1
    assert all(len(warning) <= 256 for warning in answered(verdict).warnings)
    joined = " ".join(w.removeprefix("… ").removesuffix(" …") for w in answered(verdict).warnings)
    assert joined.split() == f"audit: would refuse: {verdict.refusal.message}".split()


def test_not_scheduled_victim_message() -> None:
    victim = bound("victim", 8000, "low-non-preempted-10min", ago=None)
    request = eviction_request(**{PREEMPTOR_PRIORITY: "9000"})
    verdict = judge(request, snapshot(victim), GuardConfig(), NOW)
    assert answered(verdict).status.code == 403
    assert (
        "not scheduled yet, and its 600 s of guaranteed running time start when it is"
        in answered(verdict).status.message
    )


def test_annotated_preemptor_with_preemption_policy_never_is_refused_with_a_clear_message() -> None:
    victim = bound("victim", 8000, "low")
    never = pending("never", 9000, preemptionPolicy="Never")
    request = eviction_request(**{PREEMPTOR: "team/never"})
    verdict = judge(request, snapshot(victim, never), GuardConfig(), NOW)
    assert answered(verdict).status.code == 403
    assert answered(verdict).status.message == (
        "pod team/victim may not be preempted by team/never, priority 9000: the preemptor has preemptionPolicy "
        "Never, so it preempts no pod."
    )


# ------------------------------------------------------------------------- --eviction-preemptor-priority

# (rule, the option, the Eviction's annotations, victim class, scheduled ago (None: unbound), request kind,
#  expected code (None: allowed), words of the message)
EVICTION_RULE = [
    (
        "option unset: an eviction without our annotations is a drain, allowed",
        None,
        {},
        "low-non-preempted-10min",
        timedelta(seconds=100),
        "eviction",
        None,
        [],
    ),
    (
        "option set, victim tolerating for a time: 429 with the seconds left and the end",
        9000,
        {},
        "low-non-preempted-10min",
        timedelta(seconds=100),
        "eviction",
        429,
        [
            "pod team/victim (PriorityClass low-non-preempted-10min, priority 8000) tolerates preemption by "
            "priorities below 10000 (the annotations of PriorityClass low-non-preempted-10min); this eviction names "
            "no preemptor and counts as a preemption by priority 9000 (the guard's --eviction-preemptor-priority), "
            "which the pod refuses until 2026-11-22T12:08:20Z (500 s left of 600 s guaranteed running time). "
            "Retry after 500 s."
        ],
    ),
    (
        "option set, policy/v1beta1 eviction: judged the same",
        9000,
        {},
        "low-non-preempted-10min",
        timedelta(seconds=100),
        "eviction-v1beta1",
        429,
        ["500 s left of 600 s guaranteed running time). Retry after 500 s."],
    ),
    (
        "option set, toleration over: allowed",
        9000,
        {},
        "low-non-preempted-10min",
        timedelta(seconds=601),
        "eviction",
        None,
        [],
    ),
    (
        "option set, the class refuses priority N for ever: 403 saying how to remove the pod anyway",
        9000,
        {},
        "low-non-preempted",
        timedelta(seconds=100),
        "eviction",
        403,
        [
            '(PreemptionTolerationPolicy "forever"); this eviction names no preemptor and counts as a preemption '
            "by priority 9000",
            "the toleration has no end. Only priority 10000 or more may preempt it.",
            "kubectl drain --disable-eviction",
        ],
    ),
    (
        "option at the class's minimum: allowed",
        10000,
        {},
        "low-non-preempted",
        timedelta(seconds=100),
        "eviction",
        None,
        [],
    ),
    ("option set, a class without toleration: allowed", 9000, {}, "low", timedelta(seconds=100), "eviction", None, []),
    ("option set, an unbound pod is nobody's victim", 9000, {}, "low-non-preempted", None, "eviction", None, []),
    (
        "annotated eviction unaffected by the option: its own priority is judged (refused)",
        10000,
        {PREEMPTOR_PRIORITY: "9000"},
        "low-non-preempted",
        timedelta(seconds=100),
        "eviction",
        403,
        ["the preemptor (priority 9000) is below it"],
    ),
    (
        "annotated eviction unaffected by the option: its own priority is judged (allowed)",
        9000,
        {PREEMPTOR_PRIORITY: "10000"},
        "low-non-preempted",
        timedelta(seconds=100),
        "eviction",
        None,
        [],
    ),
    (
        "DELETE by a user unaffected by the option",
        9000,
        {},
        "low-non-preempted",
        timedelta(seconds=100),
        "delete",
        None,
        [],
    ),
]


@pytest.mark.parametrize(
    ("rule", "option", "annotations", "class_name", "ago", "kind", "code", "words"),
    EVICTION_RULE,
    ids=[c[0] for c in EVICTION_RULE],
)
def test_eviction_preemptor_priority(rule, option, annotations, class_name, ago, kind, code, words) -> None:
    victim = bound("victim", 8000, class_name, ago=ago)
    if ago is None:
        del victim["spec"]["nodeName"]
    if kind == "delete":
        request = pod_request(None, old=victim, user="alice")
    else:
        version = "policy/v1beta1" if kind == "eviction-v1beta1" else "policy/v1"
        request = eviction_request(version, **annotations)
    verdict = judge(request, snapshot(victim), GuardConfig(eviction_preemptor_priority=option), NOW)
    if code is None:
        assert verdict.allowed and verdict.refusal is None, rule
        return
    assert not verdict.allowed and answered(verdict).status.code == code, rule
    assert answered(verdict).status.reason == ("TooManyRequests" if code == 429 else None), rule
    for text in words:
        assert text in answered(verdict).status.message, (rule, answered(verdict).status.message)
    assert verdict.refusal.kind == "eviction" and verdict.refusal.preemptor is None
    assert verdict.source is (PreemptorSource.NAMED if annotations else PreemptorSource.CONFIGURED), rule


def test_eviction_preemptor_priority_in_audit_mode_allows_and_reports() -> None:
    victim = bound("victim", 8000, "low-non-preempted-10min", ago=timedelta(seconds=100))
    request = eviction_request()
    verdict = judge(request, snapshot(victim), GuardConfig(audit=True, eviction_preemptor_priority=9000), NOW)
    assert verdict.allowed and verdict.refusal is not None and verdict.refusal.code == 429
    assert answered(verdict).warnings[0].startswith("audit: would refuse: pod team/victim")


def test_a_decision_reads_the_toleration_parsed_when_the_class_entered_the_cache(monkeypatch) -> None:
    """The guard parses a class's annotations once, as its record is built for the cache: a decision does
    not parse them again."""
    from preemption_toleration.core import annotations

    victim = bound("victim", 8000, "low-non-preempted-10min", ago=timedelta(seconds=100))
    state = snapshot(victim, pending("high-1", 9000))

    def never(*_: object) -> None:
        raise AssertionError("parsed again in a decision")

    monkeypatch.setattr(annotations, "_parsed", never)
    verdict = judge(pod_request(None, old=victim), state, GuardConfig(), NOW)
    assert answered(verdict).status.code == 403 and verdict.refusal.protection.seconds_left(NOW) == 500
