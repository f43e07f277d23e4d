"""How long the guard takes to judge a scheduler DELETE, against the number of pods in its caches.

Fills the guard's pod index with N pods of realistic size (the full JSON, with managedFields, env and
status, decoded and slimmed as the watch does) for N = 0, 50,000 and 150,000 (besides the one preemptor);
a tenth are pending, in 100 workload shapes (node selectors, tolerations) of three priorities, none of
which fits the victim's node. Then times, side by side in one run, the guard's handling of one
scheduler DELETE of a protected victim (the whole AdmissionReview parsed, the preemptor inferred, the
refusal built) and of a user's DELETE (the fast path). Reports the median and p99
per request and each size's ratio to the empty cache (target: at most 1.2). Beside them, the scheduler's
DELETE of a member of a protected 64-pod PodGroup (`disruptionMode: all`) answered from the decision that
stands for its group (every member's request but the first of each preemption): its ratio to the lone
victim's (target: at most 1.2); and the same request decided afresh each time (each comes after the group's
decision ended, so it is judged, settled through a claim store in memory and judged again), whose figure
leaves out the Lease's round trip to the API server that a fresh decision makes once per preemption.
Saves the figures to benchmarks/results/guard_latency.json. Run:

    .venv/bin/python benchmarks/guard_latency.py [--sizes 0,50000,150000] [--requests 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import save_results, shown, timed

from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY, TOLERATION_SECONDS
from preemption_toleration.guard.adapter.group_leases import GroupClaims, MemoryStore
from preemption_toleration.guard.adapter.guard_endpoint import GUARD, GuardHooks
from preemption_toleration.guard.group_claims import LONGEST_SECONDS
from preemption_toleration.guard.verdicts import GuardConfig
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.node import node_record
from preemption_toleration.records.pod_group import pod_group_record
from preemption_toleration.records.priority_class import class_view
from preemption_toleration.webhooks.server import WebhookApp
from tests.unit.webhook_client import webhook_app

NODES = 5000
GROUP_SIZE = 64


def realistic_pod(i: int) -> dict[str, Any]:
    """A pod as the API returns it, about 4 KB of JSON."""
    pending = i % 10 == 0
    shape = i % 100
    spec: dict[str, Any] = {
        "priority": (8000, 9000, 10000)[i % 3],
        "priorityClassName": ("low", "high", "critical")[i % 3],
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
        "restartPolicy": "Never",
        "containers": [
            {
                "name": f"worker-{c}",
                "image": "registry.example/train:1.2.3",
                "env": [{"name": f"VAR_{k}", "value": "x" * 40} for k in range(8)],
                "resources": {"requests": {"cpu": "500m", "memory": "2Gi"}, "limits": {"memory": "2Gi"}},
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }
            for c in range(2)
        ],
        "volumes": [{"name": "data", "emptyDir": {}}],
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {"key": f"pool-{shape % 5}", "operator": "Exists"},
        ],
    }
    if pending:  # pools no node has: these candidates are checked, by shape, and rejected
        spec["nodeSelector"] = {"pool": f"q{shape % 20}"}
    else:
        spec["nodeName"] = f"node-{i % NODES}"
    managed = [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-22T11:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}, "f:job": {}}}, "f:spec": {"f:containers": {}}},
        }
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"job-{i // 8}-worker-{i % 8}",
            "namespace": f"team-{i % 50}",
            "uid": f"{i:08x}-0000-4000-8000-000000000000",
            "resourceVersion": str(1000 + i),
            "creationTimestamp": f"2026-11-22T10:{i % 60:02d}:00Z",
            "labels": {"app": "train", "job": str(i // 8)},
            "managedFields": managed,
        },
        "spec": spec,
        "status": {
            "phase": "Pending" if pending else "Running",
            "conditions": []
            if pending
            else [
                {"type": t, "status": "True", "lastTransitionTime": "2026-11-22T11:00:05Z"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "hostIP": "10.0.0.1",
            "podIP": "10.1.0.1",
            "qosClass": "Burstable",
        },
    }


def protected_classes() -> dict[str, Any]:
    annotations = {MINIMUM_PREEMPTABLE_PRIORITY: "10000", TOLERATION_SECONDS: "-1"}
    return {
        "low": class_view({"metadata": {"name": "low", "annotations": annotations}, "value": 8000}),
        "high": class_view({"metadata": {"name": "high"}, "value": 9000}),
        "critical": class_view({"metadata": {"name": "critical"}, "value": 10000}),
    }


def preemptor() -> dict[str, Any]:
    """The one pending pod that fits the victim's node: the preemptor the guard must infer."""
    pod = realistic_pod(0)
    pod["metadata"].update(name="preemptor", namespace="team-1")
    pod["spec"].update(priority=9000, priorityClassName="high", nodeSelector={"pool": "p7"})
    return pod


def group_members() -> list[dict[str, Any]]:
    """A protected PodGroup's members, bound, each on a node of its own where the preemptor fits, scheduled a
    second apart."""
    members = []
    for m in range(GROUP_SIZE):
        pod = realistic_pod(1)
        pod["metadata"].update(name=f"trainer-{m}", namespace="team-0", uid=f"member-{m}")
        pod["spec"].update(priority=8000, priorityClassName="low", nodeName=f"node-{7 + 20 * m}")  # pool p7
        pod["spec"]["schedulingGroup"] = {"podGroupName": "trainers"}
        pod["status"]["conditions"][-1]["lastTransitionTime"] = f"2026-11-22T11:01:{m % 60:02d}Z"
        members.append(pod)
    return members


PROTECTED_GROUP = pod_group_record(
    {
        "metadata": {"name": "trainers", "namespace": "team-0", "uid": "trainers"},
        "spec": {"priority": 8000, "priorityClassName": "low", "disruptionMode": {"all": {}}},
    }
)


def snapshot_of(size: int) -> tuple[ClusterView, int]:
    index = PodIndex.of([preemptor(), *group_members()])
    json_bytes = 0
    for i in range(size):
        raw = json.dumps(realistic_pod(i)).encode()
        json_bytes += len(raw)
        index.put(json.loads(raw))  # decoded and slimmed one by one, as the watch does
    nodes = {
        f"node-{n}": node_record({"metadata": {"name": f"node-{n}", "labels": {"pool": f"p{n % 20}"}}})
        for n in range(NODES)
    }
    view = ClusterView(
        pods=index, nodes=nodes, classes=protected_classes(), groups={PROTECTED_GROUP.ref: PROTECTED_GROUP}
    )
    return view, json_bytes // max(size, 1)


def review(user: str, victim: dict[str, Any] | None = None) -> bytes:
    """A DELETE by `user` of the protected victim (by default a lone pod, made of a realistic one)."""
    if victim is None:
        victim = realistic_pod(1)  # bound, priority 9000 ... made a protected low pod
        victim["spec"].update(priority=8000, priorityClassName="low", nodeName="node-7")
        victim["metadata"].update(name="victim", namespace="team-0")
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "name": victim["metadata"]["name"],
                "namespace": "team-0",
                "operation": "DELETE",
                "userInfo": {"username": user},
                "oldObject": victim,
            },
        }
    ).encode()


def handle(body: bytes, snapshot: ClusterView, config: GuardConfig, fresh: bool = False) -> bool:
    """What the server does per guard request, through its own request core (`WebhookApp.answer`): the review
    read once with the fields the guard reads checked, the fast path, else the judgement, and the metrics."""
    app = _servers.get((id(snapshot), fresh))
    if app is None:
        clock = _ticking if fresh else _still
        claims = GroupClaims(MemoryStore(), "ptol", "benchmark", clock=clock)
        hooks = GuardHooks(lambda: snapshot, config, lambda *_: None, claims=claims, clock=clock)
        app = _servers[(id(snapshot), fresh)] = webhook_app(ClusterView, lambda needs: [], guard=hooks)
    [endpoint] = [e for e in app.routes if e.name == GUARD]
    replied = app.reply(endpoint, body)
    status, answer, _ = replied if isinstance(replied, tuple) else _loop.run_until_complete(replied)
    assert status == 200, answer
    return bool(answer["response"]["allowed"])


_servers: dict[tuple[int, bool], WebhookApp] = {}
_loop = asyncio.new_event_loop()
_START = datetime(2026, 11, 22, tzinfo=UTC)
_ticks = itertools.count(0, int(LONGEST_SECONDS) + 1)


def _ticking() -> datetime:
    """Every request a group's decision past its end: each member's request decided afresh."""
    return _START + timedelta(seconds=next(_ticks))


def _still() -> datetime:
    """Every request within the group's decision: answered from it."""
    return _START


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,50000,150000")
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    config = GuardConfig()
    scheduler, user = review("system:kube-scheduler"), review("alice")
    member = review("system:kube-scheduler", group_members()[0])
    snapshots = {size: snapshot_of(size) for size in (int(s) for s in args.sizes.split(","))}
    rows = []
    for round_ in range(3):  # interleaved rounds, medians of the three
        for size, (snapshot, pod_bytes) in snapshots.items():
            assert not handle(scheduler, snapshot, config), "the victim must be refused"
            assert not handle(member, snapshot, config), "the group's member must be refused"
            sched = timed(lambda: handle(scheduler, snapshot, config), args.requests)
            fast = timed(lambda: handle(user, snapshot, config), args.requests)
            grouped = timed(lambda: handle(member, snapshot, config), args.requests)
            afresh = timed(lambda: handle(member, snapshot, config, fresh=True), args.requests)
            rows.append(
                {
                    "round": round_,
                    "pods": size,
                    "podJsonBytes": pod_bytes,
                    "schedulerDeleteP50Ms": sched[0],
                    "schedulerDeleteP99Ms": sched[1],
                    "userDeleteP50Ms": fast[0],
                    "userDeleteP99Ms": fast[1],
                    "memberDeleteP50Ms": grouped[0],
                    "memberDeleteP99Ms": grouped[1],
                    "memberAfreshP50Ms": afresh[0],
                }
            )
    summary = []
    base = statistics.median(r["schedulerDeleteP50Ms"] for r in rows if r["pods"] == min(snapshots))
    print(
        f"{'pods':>8} {'pod JSON':>9} {'scheduler DELETE p50':>21} {'p99':>8} {'ratio':>6} {'user DELETE p50':>16}"
        f" {f'member of {GROUP_SIZE} p50':>18} {'/ lone':>7} {'afresh p50':>11}"
    )
    for size in snapshots:
        mine = [r for r in rows if r["pods"] == size]
        p50 = statistics.median(r["schedulerDeleteP50Ms"] for r in mine)
        p99 = statistics.median(r["schedulerDeleteP99Ms"] for r in mine)
        fast = statistics.median(r["userDeleteP50Ms"] for r in mine)
        grouped = statistics.median(r["memberDeleteP50Ms"] for r in mine)
        afresh = statistics.median(r["memberAfreshP50Ms"] for r in mine)
        to_lone = statistics.median(r["memberDeleteP50Ms"] / r["schedulerDeleteP50Ms"] for r in mine)
        summary.append(
            {
                "pods": size,
                "schedulerDeleteP50Ms": p50,
                "schedulerDeleteP99Ms": p99,
                "ratioToEmpty": p50 / base,
                "userDeleteP50Ms": fast,
                "memberDeleteP50Ms": grouped,
                "memberAfreshP50Ms": afresh,
                "memberToLone": to_lone,
            }
        )
        print(
            f"{size:>8} {mine[0]['podJsonBytes']:>8}B {p50:>19.3f}ms {p99:>6.3f}ms {p50 / base:>6.2f} {fast:>14.3f}ms"
            f" {grouped:>16.3f}ms {to_lone:>6.2f}x {afresh:>9.3f}ms"
        )
    path = save_results("guard_latency", {"requests": args.requests, "summary": summary, "rounds": rows})
    print(f"saved to {shown(path)}")


if __name__ == "__main__":
    main()
