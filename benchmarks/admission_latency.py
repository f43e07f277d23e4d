"""How long the admission webhooks take to decide, against the number of policies and classes.

For each size, on one snapshot (its ownership and label indexes built once, as the webhook builds them
once per change): a PriorityClass UPDATE (`validate_priority_class`, the owner of the one class in the
request) and a policy CREATE that conflicts (`validate_policy`), each against the smallest size; and,
side by side, planning every class per request (`plan`, what the webhook did before) and scanning every
policy for the class's claimants (what it did before the ownership index). Prints a table and saves it to
benchmarks/results/admission_latency.json. Run:

    .venv/bin/python benchmarks/admission_latency.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import _common  # noqa: F401 (puts the repository on the path: the reference rule is a test's)

from preemption_toleration.admission.decisions import (
    AdmissionConfig,
    validate_policy,
    validate_priority_class,
)
from preemption_toleration.api.admission import AdmissionRequest
from preemption_toleration.governance.planner import plan
from preemption_toleration.inventory.labels import LabelIndex
from preemption_toleration.inventory.ownership import PolicyIndex, age_order
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.policy import policy_view
from preemption_toleration.records.priority_class import class_view
from tests.unit.test_ownership import claims  # every policy asked in turn: the rule before the index

RESULTS = Path(__file__).resolve().parent / "results" / "admission_latency.json"
SIZES = [(10, 10), (100, 200), (500, 1000), (1000, 3000)]  # (policies, classes)


def snapshot_of(policies: int, classes: int) -> ClusterView:
    class_views = {}
    for i in range(classes):
        labels = {"tier": f"t{i % policies}"}
        raw = {"metadata": {"name": f"class-{i}", "labels": labels}, "value": 8000}
        class_views[f"class-{i}"] = class_view(raw)
    policy_views = {}
    for i in range(policies):
        spec = {
            "priorityClassSelector": {"matchLabels": {"tier": f"t{i}"}},
            "minimumPreemptablePriority": 10000,
            "tolerationSeconds": 600,
        }
        raw = {
            "apiVersion": "preemption-toleration.dev/v1alpha1",
            "kind": "PreemptionTolerationPolicy",
            "metadata": {"name": f"policy-{i}", "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": spec,
        }
        policy_views[f"policy-{i}"] = policy_view(raw)
    # the indexes built once, as the webhook's caches build them on a change of the classes or policies
    ownership, labels = PolicyIndex(policy_views.values()), LabelIndex(class_views)
    return ClusterView(classes=class_views, policies=policy_views, ownership=ownership, labels=labels)


def request_for(name: str) -> AdmissionRequest:
    obj = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": {"tier": "t0"}, "annotations": {}},
        "value": 8000,
    }
    return AdmissionRequest.model_validate(
        {
            "uid": "u",
            "kind": {"group": "scheduling.k8s.io", "version": "v1", "kind": "PriorityClass"},
            "resource": {"group": "scheduling.k8s.io", "version": "v1", "resource": "priorityclasses"},
            "name": name,
            "operation": "UPDATE",
            "userInfo": {"username": "alice"},
            "object": obj,
            "oldObject": obj,
        }
    )


def policy_request() -> AdmissionRequest:
    """A new policy selecting tier t0, which policy-0 already governs: refused with 409."""
    obj = {
        "apiVersion": "preemption-toleration.dev/v1alpha1",
        "kind": "PreemptionTolerationPolicy",
        "metadata": {"name": "newcomer"},
        "spec": {
            "priorityClassSelector": {"matchLabels": {"tier": "t0"}},
            "minimumPreemptablePriority": 10000,
            "tolerationSeconds": 60,
        },
    }
    return AdmissionRequest.model_validate(
        {
            "uid": "u",
            "kind": {"group": "preemption-toleration.dev", "version": "v1alpha1", "kind": "PreemptionTolerationPolicy"},
            "resource": {
                "group": "preemption-toleration.dev",
                "version": "v1alpha1",
                "resource": "preemptiontolerationpolicies",
            },
            "name": "newcomer",
            "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": obj,
        }
    )


def median_seconds(action: Callable[[], object], repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    config = AdmissionConfig()
    rows = []
    print(
        f"{'policies':>8} {'classes':>8} {'PC ms':>8} {'vs first':>8} {'policy ms':>10} {'vs first':>8} "
        f"{'scan ms':>8} {'plan-all ms':>12}"
    )
    first: dict[str, float] = {}
    for policies, classes in SIZES:
        snapshot = snapshot_of(policies, classes)
        request, creation = request_for("class-0"), policy_request()
        candidate = class_view(request.object or {})
        assert not validate_policy(creation, snapshot).allowed

        def priority_class() -> object:
            return validate_priority_class(request, snapshot, config)

        def policy() -> object:
            return validate_policy(creation, snapshot)

        def scan() -> object:  # the claimants of one class, every policy asked in turn
            return sorted(
                (p for p in snapshot.policies.values() if p.spec and claims(p.spec, candidate)), key=age_order
            )

        def plan_all() -> object:  # the per-request cost before `claimants`: every class planned
            return plan(snapshot.policies.values(), {**snapshot.classes, candidate.name: candidate}.values())

        repeat = max(5, args.repeat // max(1, classes // 200))
        figures = {
            "priority_class_ms": median_seconds(priority_class, args.repeat * 20) * 1000,
            "policy_ms": median_seconds(policy, args.repeat * 20) * 1000,
            "scan_ms": median_seconds(scan, repeat) * 1000,
            "plan_all_ms": median_seconds(plan_all, repeat) * 1000,
        }
        first = first or figures
        rows.append(
            {
                "policies": policies,
                "classes": classes,
                **{k: round(v, 4) for k, v in figures.items()},
                "priority_class_vs_first": round(figures["priority_class_ms"] / first["priority_class_ms"], 2),
                "policy_vs_first": round(figures["policy_ms"] / first["policy_ms"], 2),
            }
        )
        row = rows[-1]
        print(
            f"{policies:>8} {classes:>8} {figures['priority_class_ms']:>8.3f} "
            f"{row['priority_class_vs_first']:>7.2f}x {figures['policy_ms']:>10.3f} {row['policy_vs_first']:>7.2f}x "
            f"{figures['scan_ms']:>8.3f} {figures['plan_all_ms']:>12.3f}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps({"python": platform.python_version(), "machine": platform.machine(), "rows": rows}, indent=2) + "\n"
    )
    print(f"saved to {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS.name}")


if __name__ == "__main__":
    main()
