"""The pod index: slim records, pods by node, pending candidates by priority, kept right through every
change a watch brings."""

import sys
from datetime import UTC, datetime

import pytest

from preemption_toleration.core.pods import PodJson
from preemption_toleration.guard.inference import VictimPlace, infer_preemptor
from preemption_toleration.inventory.pod_index import DEPARTED_SHAPES, PodIndex
from preemption_toleration.records import pod as pod_records
from preemption_toleration.records.node import NodeRecord
from preemption_toleration.records.pod import Shared, slim_pod


def raw_pod(name, priority=8000, node=None, namespace="team", created="2026-11-22T11:00:00Z", **spec):
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "labels": {"app": "x"},
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {
            "priority": priority,
            "containers": [
                {
                    "name": "c",
                    "image": "pause",
                    "env": [{"name": "A", "value": "1" * 100}],
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ],
            **spec,
        },
        "status": {"phase": "Pending", "conditions": []},
    }
    if node:
        body["spec"]["nodeName"] = node
        body["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-22T11:30:00Z"}
        ]
    return body


def names(pods):
    return sorted(pod.name for pod in pods)


def test_slim_pod_keeps_what_decisions_read_and_reads_as_its_json_does() -> None:
    body = raw_pod("a", 9000, node="node-1", priorityClassName="high", preemptionPolicy="Never")
    pod, view = slim_pod(body, Shared()), PodJson(body)
    assert (pod.key, pod.uid, pod.ref, pod.priority, pod.priority_class, pod.preempts_never, pod.node_name) == (
        ("team", "a"),
        "uid-a",
        "team/a",
        9000,
        "high",
        True,
        "node-1",
    )
    assert pod.created == "" and pod.phase == "Pending"  # creation time: for pending pods
    assert pod.scheduled_since() == view.scheduled_since() == datetime(2026, 11, 22, 11, 30, tzinfo=UTC)
    for field in ("key", "uid", "ref", "priority", "priority_class", "preempts_never", "node_name", "deletion"):
        assert getattr(pod, field) == getattr(view, field), field
    assert pod.requests == (("cpu", 500), ("memory", 2**30))
    assert pod.constraints is None  # a bound pod is never a preemptor: its constraints are dropped


def test_pods_of_one_workload_share_their_constraints_and_requests() -> None:
    shared = Shared()
    spec = {"nodeSelector": {"pool": "gpu"}, "tolerations": [{"operator": "Exists"}]}
    first, second = slim_pod(raw_pod("a", **spec), shared), slim_pod(raw_pod("b", **spec), shared)
    assert first.constraints is second.constraints and first.requests is second.requests
    assert first.constraints.pod == {"spec": spec}
    assert first.key[0] is sys.intern("team")


def test_label_values_are_shared_by_a_table_of_the_index_not_interned(monkeypatch) -> None:
    """Values, many of them one pod's own, are shared through the index's bounded table; each value is one
    object for every pod that has it, and the interpreter's interned strings do not grow with them."""
    monkeypatch.setattr(pod_records, "MAX_SHARED", 3)
    shared = Shared()

    def bound(name: str, template: str):
        body = raw_pod(name, node="node-1")
        body["metadata"]["labels"] = {"app": "x", "pod-template-hash": "".join(template)}  # a new str each time
        return slim_pod(body, shared)

    first, second, other = bound("a", ["h", "1"]), bound("b", ["h", "1"]), bound("c", ["h", "2"])
    assert first.label_pairs == ("app", "x", "pod-template-hash", "h1") and first.labels["pod-template-hash"] == "h1"
    assert first.label_pairs[3] is second.label_pairs[3] and first.label_pairs is second.label_pairs
    assert first.label_pairs[3] is not sys.intern("".join(["h", "1"]))  # ours, not the interpreter's
    assert other.label_pairs[3] == "h2" and len(shared.values) == 3  # x, h1, h2
    bound("d", ["h", "3"])  # the table was full: emptied, then holds what this pod brought
    assert set(shared.values) == {"x", "h3"}


def test_malformed_fields_read_as_absent() -> None:
    pod = slim_pod(
        {
            "metadata": {"name": "x", "namespace": "n"},
            "spec": {"priority": "10k", "nodeName": 3},
            "status": {"conditions": "no"},
        },
        Shared(),
    )
    assert (pod.priority, pod.node_name, pod.scheduled) == (0, None, None)


def test_pods_by_node_follow_binding_and_deletion() -> None:
    index = PodIndex.of([raw_pod("a", node="node-1"), raw_pod("b", node="node-1"), raw_pod("c", node="node-2")])
    assert names(index.on_node("node-1")) == ["a", "b"]
    index.put(raw_pod("b", node="node-2"))  # moved (re-created with the same name)
    index.remove(raw_pod("a"))
    assert names(index.on_node("node-1")) == [] and names(index.on_node("node-2")) == ["b", "c"]
    assert len(index) == 2


def test_pending_candidates_are_grouped_by_priority_then_constraints() -> None:
    index = PodIndex.of(
        [
            raw_pod("low", 8500),
            raw_pod("high-old", 9500, created="2026-11-22T10:00:00Z"),
            raw_pod("high-new", 9500, created="2026-11-22T10:30:00Z"),
            raw_pod("gpu", 9500, nodeSelector={"pool": "gpu"}),
            raw_pod("never", 9900, preemptionPolicy="Never"),
            raw_pod("bound", 9900, node="node-1"),
        ]
    )
    groups = [(group.priority, group.oldest()[1], len(group.members)) for group in index.pending_groups()]
    assert [priority for priority, _, _ in groups] == [9500, 9500, 8500]  # highest priority first
    assert sorted(groups) == [(8500, "low", 1), (9500, "gpu", 1), (9500, "high-old", 2)]


def test_a_pod_leaving_the_pending_queue_leaves_its_group() -> None:
    index = PodIndex.of([raw_pod("a", 9000), raw_pod("b", 9000, created="2026-11-22T12:00:00Z")])
    index.put(raw_pod("a", 9000, node="node-1"))  # bound
    assert [group.oldest()[1] for group in index.pending_groups()] == ["b"]
    deleting = raw_pod("b", 9000)
    deleting["metadata"]["deletionTimestamp"] = "2026-11-22T12:01:00Z"
    index.put(deleting)
    assert list(index.pending_groups()) == []


def test_prune_drops_what_a_fresh_listing_did_not_return() -> None:
    index = PodIndex.of([raw_pod("a", 9000), raw_pod("b", node="node-1"), raw_pod("c")])
    index.prune({("team", "c")})
    assert list(index.pods) == [("team", "c")]
    assert names(index.on_node("node-1")) == []
    assert [group.oldest()[1] for group in index.pending_groups()] == ["c"]


def test_nominated_pods_are_found_by_node() -> None:
    nominated = raw_pod("n", 9000)
    nominated["status"]["nominatedNodeName"] = "node-1"
    index = PodIndex.of([nominated, raw_pod("other", 9500)])
    assert names(index.nominated_to("node-1")) == ["n"]
    assert infer_preemptor(VictimPlace(8000, "node-1"), index).name == "n"
    assert infer_preemptor(VictimPlace(8000, "node-2"), index).name == "other"


def test_a_pod_that_never_preempts_is_nominated_all_the_same_but_no_preemptor() -> None:
    """The scheduler's nominator holds a node's room for any nominated pod, whatever its preemptionPolicy;
    only a pod allowed to preempt can be the one preempting."""
    never = raw_pod("never", 9000, preemptionPolicy="Never")
    never["status"]["nominatedNodeName"] = "node-1"
    index = PodIndex.of([never])
    assert names(index.nominated_to("node-1")) == ["never"]
    assert infer_preemptor(VictimPlace(8000, "node-1"), index) is None
    bound = dict(never, spec={**never["spec"], "nodeName": "node-1"})
    index.put(bound)
    assert names(index.nominated_to("node-1")) == []


def test_inference_matches_a_scan_of_every_pod() -> None:
    """The indexed inference agrees with the plain definition (highest priority, then oldest, among the
    compatible pending pods of higher priority) on a mixed population."""
    node = NodeRecord("node-1", labels={"pool": "cpu"})
    pods = []
    for i in range(60):
        spec = {"nodeSelector": {"pool": "gpu"}} if i % 3 == 0 else {}
        pods.append(
            raw_pod(
                f"p{i}",
                8000 + (i % 7) * 300,
                node="node-2" if i % 5 == 0 else None,
                created=f"2026-11-22T10:{i % 13:02d}:{i:02d}Z",
                **spec,
            )
        )
    index = PodIndex.of(pods)
    for victim_priority in (7000, 8000, 9000, 9500, 10000):
        compatible = [
            p
            for p in index.pods.values()
            if p.pending_candidate
            and p.priority > victim_priority
            and not (p.constraints and p.constraints.pod["spec"].get("nodeSelector"))
        ]
        expected = min(compatible, key=lambda p: p.queue_order()) if compatible else None
        assert infer_preemptor(VictimPlace(victim_priority, "node-1", node), index) is expected


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


DEPARTURES = [
    # (rule, what happens to the pending candidate "a", remembered as departed)
    ("a deleted candidate is remembered", lambda index: index.remove(raw_pod("a", 9000)), ["a"]),
    ("a candidate set terminating is remembered", lambda index: index.put(deleting(raw_pod("a", 9000))), ["a"]),
    ("a candidate a fresh listing lost is remembered", lambda index: index.prune(set()), ["a"]),
    ("a bound pod is no departed candidate", lambda index: index.put(raw_pod("a", 9000, node="node-1")), []),
    (
        "a pod that never preempts is no departed candidate",
        lambda index: (index.put(raw_pod("a", 9000, preemptionPolicy="Never")), index.remove(raw_pod("a", 9000))),
        [],
    ),
]


def deleting(body):
    body["metadata"]["deletionTimestamp"] = "2026-11-22T12:01:00Z"
    return body


@pytest.mark.parametrize(("rule", "happens", "departed"), DEPARTURES, ids=[d[0] for d in DEPARTURES])
def test_departed_candidates(rule, happens, departed) -> None:
    index = PodIndex(clock=Clock())
    index.put(raw_pod("a", 9000))
    happens(index)
    assert names(index.departed(30)) == departed


def test_departed_candidates_are_forgotten_after_the_window_and_kept_one_per_shape() -> None:
    clock = Clock()
    index = PodIndex(clock=clock)
    for name in ("a", "b"):  # one shape: priority 9000, no constraints
        index.put(raw_pod(name, 9000))
        index.remove(raw_pod(name, 9000))
    index.put(raw_pod("gpu", 9000, nodeSelector={"gpu": "yes"}))
    index.remove(raw_pod("gpu", 9000))
    assert [pod.name for pod in index.departed(30)] == ["gpu", "b"]  # latest first, the latest of each shape
    clock.now += 31
    assert list(index.departed(30)) == []
    for number in range(DEPARTED_SHAPES + 5):  # as many shapes as priorities: the oldest are dropped
        index.put(raw_pod(f"p{number}", 9000 + number))
        index.remove(raw_pod(f"p{number}", 9000 + number))
    assert len(list(index.departed(30))) == DEPARTED_SHAPES


def job_pod(name: str, job: str, node: str | None = None, scheduled: str = "2026-11-22T11:30:00Z") -> dict:
    body = raw_pod(name, node=node)
    body["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] = job
    if node:
        body["status"]["conditions"][0]["lastTransitionTime"] = scheduled
    return body


def test_the_pods_of_each_job_are_indexed_with_when_the_last_was_scheduled_and_changes_told() -> None:
    index = PodIndex(jobs=True)
    told: list[str] = []
    index.job_changed = told.append
    index.put(job_pod("a", "j-1", node="n1", scheduled="2026-11-22T11:30:00Z"))
    index.put(job_pod("b", "j-1"))
    index.put(raw_pod("plain", node="n1"))
    # a pod keeps its labels once bound: the index holds the Job's bound pods, the ones with a scheduled time
    assert sorted(pod.key[1] for pod in index.job_pods("j-1").pods.values()) == ["a"]
    assert index.job_pods("j-1").scheduled_since() == datetime(2026, 11, 22, 11, 30, tzinfo=UTC)
    index.put(job_pod("b", "j-1", node="n2", scheduled="2026-11-22T11:40:00Z"))
    assert index.job_pods("j-1").scheduled_since() == datetime(2026, 11, 22, 11, 40, tzinfo=UTC), "the latest"
    index.remove(job_pod("b", "j-1", node="n2"))
    assert index.job_pods("j-1").scheduled_since() == datetime(2026, 11, 22, 11, 30, tzinfo=UTC)
    index.remove(job_pod("a", "j-1", node="n1"))
    assert not index.job_pods("j-1").pods and set(told) == {"j-1"}


def test_without_jobs_no_job_is_indexed() -> None:
    index = PodIndex()
    index.put(job_pod("a", "j-1", node="n1"))
    assert not index.job_pods("j-1").pods
