"""How long the PriorityClass webhooks take to decide, against the number of policies and classes.

Compares, side by side in one run, the decision as shipped (the owner of the one class in the request,
`claimants`) with planning every class per request (`plan`, what the webhook did before), on the same
snapshot. Prints a table and saves it to benchmarks/results/admission_latency.json. Run:

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

from preemption_toleration.api.admission import AdmissionRequest
from preemption_toleration.governance.plan import plan
from preemption_toleration.governance.views import class_view, policy_view
from preemption_toleration.webhooks.decisions import AdmissionConfig, Snapshot, validate_priority_class

RESULTS = Path(__file__).resolve().parent / "results" / "admission_latency.json"
SIZES = [(10, 10), (100, 200), (500, 1000), (1000, 3000)]  # (policies, classes)


def snapshot_of(policies: int, classes: int) -> Snapshot:
    class_views = {}
    for i in range(classes):
        labels = {"tier": f"t{i % policies}"}
        raw = {"metadata": {"name": f"class-{i}", "labels": labels}, "value": 8000}
        class_views[f"class-{i}"] = class_view(raw)
    policy_views = {}
    for i in range(policies):
        spec = {"priorityClassSelector": {"matchLabels": {"tier": f"t{i}"}}, "minimumPreemptablePriority": 10000,
                "tolerationSeconds": 600}
        raw = {"apiVersion": "preemption-toleration.dev/v1alpha1", "kind": "PreemptionTolerationPolicy",
               "metadata": {"name": f"policy-{i}", "creationTimestamp": "2026-11-01T00:00:00Z"}, "spec": spec}
        policy_views[f"policy-{i}"] = policy_view(raw)
    return Snapshot(policies=policy_views, classes=class_views)


def request_for(name: str) -> AdmissionRequest:
    obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
           "metadata": {"name": name, "labels": {"tier": "t0"}, "annotations": {}}, "value": 8000}
    return AdmissionRequest.model_validate({
        "uid": "u", "kind": {"group": "scheduling.k8s.io", "version": "v1", "kind": "PriorityClass"},
        "resource": {"group": "scheduling.k8s.io", "version": "v1", "resource": "priorityclasses"},
        "name": name, "operation": "UPDATE", "userInfo": {"username": "alice"}, "object": obj, "oldObject": obj})


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
    print(f"{'policies':>8} {'classes':>8} {'shipped ms':>11} {'plan-all ms':>12} {'ratio':>7}")
    for policies, classes in SIZES:
        snapshot = snapshot_of(policies, classes)
        request = request_for("class-0")
        candidate = class_view(request.object or {})

        def shipped() -> object:
            return validate_priority_class(request, snapshot, config)

        def plan_all() -> object:  # the former per-request cost, measured on the same snapshot
            validate_priority_class(request, snapshot, config)
            return plan(snapshot.policies.values(), {**snapshot.classes, candidate.name: candidate}.values())

        repeat = max(5, args.repeat // max(1, classes // 200))
        fast, slow = median_seconds(shipped, repeat), median_seconds(plan_all, repeat)
        rows.append({"policies": policies, "classes": classes, "shipped_ms": round(fast * 1000, 3),
                     "plan_all_ms": round(slow * 1000, 3), "ratio": round(slow / fast, 1)})
        print(f"{policies:>8} {classes:>8} {fast * 1000:>11.3f} {slow * 1000:>12.3f} {slow / fast:>6.1f}x")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"python": platform.python_version(), "machine": platform.machine(),
                                   "rows": rows}, indent=2) + "\n")
    print(f"saved to {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS.name}")


if __name__ == "__main__":
    main()
