"""What Kueue does when its eviction of a Workload is refused: the measurement behind the backstop reporting
Kueue's evictions of protected Workloads rather than refusing them (`docs/tasks/kueue.md`).

On a local control plane with Kueue (`--feature kueue`), for each setting in turn:

- **refused**: a ValidatingAdmissionPolicy, evaluated in the API server (no webhook of ours runs), refuses
  every write of a Workload's status that sets `Evicted=True` reason `Preempted` in the benchmark's namespace:
  the refusal a webhook would give, without its latency;
- **allowed**: the same objects, nothing refused (what the backstop does: it reports).

A ClusterQueue of 4 CPUs (`withinClusterQueue: LowerPriority`) runs a Job of 4 pods of priority 1000; a Job of
4 pods of priority 9000 is then queued, which needs it evicted. Over --seconds from then: the refused status
writes (the API server's `apiserver_validating_admission_policy_check_total{enforcement_action="deny"}`), the
CPU seconds of Kueue's manager and of the API server against the same span idle before, whether the preemptor
was admitted, and how long a Job of 1 pod queued meanwhile to another ClusterQueue with room took to be admitted.

Saves benchmarks/results/kueue_refusal.json. Run:

    .venv/bin/python benchmarks/kueue_refusal.py [--seconds 30] [--dir DIR]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _cluster import local_cluster
from _common import save_results, shown
from kueue_boost import (
    KUEUE_API,
    NODE_CPUS,
    apply,
    condition,
    cpu_by_process,
    is_admitted,
    kubectl,
    priority_class,
    queue,
    until,
    workload_of,
)

from preemption_toleration.devcluster import LocalCluster
from tests.integration.kueue_objects import running_job

POLICY = "bench-refuse-preemption"
REFUSED_LABEL = "bench-refuse"
# True where the write may go: it does not newly set Evicted=True for Kueue's preemption.
EXPRESSION = (
    "!(has(object.status) && has(object.status.conditions) && object.status.conditions.exists(c,"
    " c.type == 'Evicted' && c.status == 'True' && c.reason == 'Preempted'))"
    " || (has(oldObject.status) && has(oldObject.status.conditions) && oldObject.status.conditions.exists(c,"
    " c.type == 'Evicted' && c.status == 'True'))"
)


def refusing_policy() -> list[dict[str, Any]]:
    """The policy and its binding: Workloads' status writes in namespaces labelled REFUSED_LABEL=true."""
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": POLICY},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["kueue.x-k8s.io"],
                            "apiVersions": ["*"],
                            "operations": ["UPDATE"],
                            "resources": ["workloads/status"],
                        }
                    ]
                },
                "validations": [{"expression": EXPRESSION, "message": "the benchmark refuses this eviction"}],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": POLICY},
            "spec": {
                "policyName": POLICY,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {REFUSED_LABEL: "true"}}},
            },
        },
    ]


def refused_writes(cluster: LocalCluster) -> float:
    """The API server's count of writes the policy refused so far."""
    text = kubectl(cluster, "get", "--raw", "/metrics")
    pattern = r"^apiserver_validating_admission_policy_check_total\{([^}]*)\} (\S+)$"
    return sum(
        float(value)
        for labels, value in re.findall(pattern, text, re.MULTILINE)
        if 'enforcement_action="deny"' in labels and f'policy="{POLICY}"' in labels
    )


def namespace(cluster: LocalCluster, name: str, cluster_queue: str, refused: bool) -> None:
    labels = {"bench-queue": cluster_queue, REFUSED_LABEL: "true" if refused else "false"}
    apply(
        cluster,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}},
        {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": name},
            "spec": {"clusterQueue": cluster_queue},
        },
    )


def trial(cluster: LocalCluster, setting: str, seconds: float) -> dict[str, Any]:
    """One setting's figures (module docstring)."""
    refused = setting == "refused"
    main, other = f"{setting}-main", f"{setting}-other"
    namespace(cluster, main, main, refused)
    namespace(cluster, other, other, refused)
    apply(cluster, running_job("low", "lq", "bench-low", 4, main))
    until("the low Job admitted", lambda: is_admitted(workload_of(cluster, main, "low") or {}), 120)
    time.sleep(2)  # Kueue's and the API server's work for the admission done
    idle_before = cpu_by_process(cluster, None)
    time.sleep(seconds)
    idle = {name: value - idle_before.get(name, 0.0) for name, value in cpu_by_process(cluster, None).items()}
    before, refusals_before = cpu_by_process(cluster, None), refused_writes(cluster)
    started = time.monotonic()
    apply(cluster, running_job("high", "lq", "bench-high", 4, main))
    time.sleep(min(5.0, seconds / 2))  # Kueue at work on the preemptor before the other queue's Job arrives
    queued = time.monotonic()
    apply(cluster, running_job("small", "lq", "bench-low", 1, other))
    small_admitted = until(
        "the other queue's Job admitted",
        lambda: is_admitted(workload_of(cluster, other, "small") or {}) and time.monotonic() - queued,
        120,
        every=0.1,
    )
    time.sleep(max(0.0, seconds - (time.monotonic() - started)))
    busy = {name: value - before.get(name, 0.0) for name, value in cpu_by_process(cluster, None).items()}
    low = workload_of(cluster, main, "low") or {}
    evicted = condition(low, "Evicted")
    result = {
        "setting": setting,
        "seconds": round(time.monotonic() - started, 1),
        "refused_writes": refused_writes(cluster) - refusals_before,
        "preemptor_admitted": is_admitted(workload_of(cluster, main, "high") or {}),
        "victim_evicted": evicted is not None and evicted["status"] == "True",
        "other_queue_admitted_after_seconds": round(small_admitted, 2),
        "cpu_seconds": {name: round(busy[name], 1) for name in ("kube-apiserver", "kueue") if name in busy},
        "idle_cpu_seconds": {name: round(idle[name], 1) for name in ("kube-apiserver", "kueue") if name in idle},
    }
    for name in (main, other):
        kubectl(cluster, "delete", "namespace", name, "--wait=true", "--timeout=300s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--dir", help="keep the cluster's directory (logs) here")
    args = parser.parse_args()
    with local_cluster(args.dir, features=("kueue",)) as cluster:
        apply(
            cluster,
            priority_class("bench-low", 1000),
            priority_class("bench-high", 9000),
            {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "bench"}},
            *(queue(f"{setting}-main", 4) for setting in ("refused", "allowed")),
            *(queue(f"{setting}-other", 4) for setting in ("refused", "allowed")),
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "bench-0"},
                "status": {
                    "allocatable": {"cpu": str(NODE_CPUS), "memory": "1Ti", "pods": "1000"},
                    "capacity": {"cpu": str(NODE_CPUS), "memory": "1Ti", "pods": "1000"},
                },
            },
            *refusing_policy(),
        )
        kubectl(cluster, "wait", "--for=condition=Ready", "node", "--all", "--timeout=120s")
        results = []
        for setting in ("allowed", "refused"):
            found = trial(cluster, setting, args.seconds)
            results.append(found)
            print(
                f"{setting:>8}: {found['refused_writes']:.0f} status writes refused in {found['seconds']} s;"
                f" preemptor admitted: {found['preemptor_admitted']}; victim evicted: {found['victim_evicted']};"
                f" another queue's Job admitted {found['other_queue_admitted_after_seconds']} s after it was queued;"
                f" CPU s (idle alike span): "
                + ", ".join(
                    f"{name} {value} ({found['idle_cpu_seconds'].get(name)})"
                    for name, value in found["cpu_seconds"].items()
                ),
                flush=True,
            )
    path = save_results("kueue_refusal", {"seconds": args.seconds, "trials": results})
    print(f"saved to {shown(path)}")


if __name__ == "__main__":
    main()
