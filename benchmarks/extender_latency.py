"""How long the scheduler extender takes to decide one preemption, against node size and cluster size.

Fills a pod index with N bound pods (slim records built from pod JSON, as the watch builds them), spread
over nodes of 110 pods, plus one node of 10 pods; half of a node's pods are protected (they tolerate the
preemptor). Then times, side by side in one run, the whole preempt decision (`decide_preemption`: parsing
the scheduler's ExtenderPreemptionArgs, judging each victim, building the answer) for one candidate node:
- the unchanged path: the scheduler's victims tolerate nothing and no pod that tolerates the preemptor
  counts against a PodDisruptionBudget, so they are returned as they are;
- the recompute path: the scheduler chose a protected pod, so the victims are chosen again over every pod
  of the node (the reprieve loop runs over the plain half);
- the budget path: the scheduler's victims tolerate nothing, but a PodDisruptionBudget also counts the
  protected pods, which upstream's dry run leaves out, so the victims are chosen again too.
In the first two, one PodDisruptionBudget with no disruption left selects every plain pod, so each potential
victim is checked against it and counted as violating (the worst case of the budget split); in the budget
path one with 4 disruptions left selects every pod (a budget with none left changes no count, so the
scheduler's victims would stand). Targets: the recompute path at 110 pods per node under 2 ms, and at most 1.2x
between 1,000 and 50,000 cached pods. Saves the figures to benchmarks/results/extender_latency.json. Run:

    .venv/bin/python benchmarks/extender_latency.py [--sizes 1000,50000] [--repeat 300] [--cpu-time]

--cpu-time times each decision by the process's CPU clock instead of the wall clock: on a busy machine, whose
other jobs take the CPU in the middle of a decision, the wall clock measures them too.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import save_results, shown, timed

from preemption_toleration.api.extender import ExtenderPreemptionArgs
from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY, TOLERATION_SECONDS
from preemption_toleration.extender.decisions import NodeChoice, decide_preemption
from preemption_toleration.inventory.budgets import BudgetIndex
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.node import NodeRecord, node_record
from preemption_toleration.records.priority_class import class_view

PODS_PER_NODE = 110
SMALL_NODE = "small-node"
BUDGET_ALLOWED = 4  # the budget path's budget: disruptions left, so each protected pod under it changes the count
CLASSES: dict[str, dict[str, Any]] = {
    "low": {"metadata": {"name": "low"}, "value": 8000},
    "protected": {
        "metadata": {
            "name": "protected",
            "annotations": {MINIMUM_PREEMPTABLE_PRIORITY: "10000", TOLERATION_SECONDS: "-1"},
        },
        "value": 8000,
    },
}


def bound_pod(name: str, node: str, protected: bool) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "batch",
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-11-22T10:00:00Z",
            "labels": {"app": "train", "tier": "protected" if protected else "plain"},
        },
        "spec": {
            "nodeName": node,
            "priority": 8000,
            "priorityClassName": "protected" if protected else "low",
            "containers": [
                {
                    "name": "worker",
                    "image": "registry.example/train:1",
                    "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}},
                }
            ],
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-11-22T10:00:05Z",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastTransitionTime": f"2026-11-22T10:{len(name) % 60:02d}:00Z",
                }
            ],
        },
    }


def budget(allowed: int, **match_labels: str) -> dict[str, Any]:
    """A PodDisruptionBudget with `allowed` disruptions left, over the pods with these labels."""
    return {
        "metadata": {"name": "train", "namespace": "batch"},
        "spec": {"selector": {"matchLabels": match_labels}},
        "status": {"disruptionsAllowed": allowed},
    }


def fill(size: int) -> tuple[dict[str, ClusterView], dict[str, list[str]]]:
    """An index of `size` pods on nodes of 110 (and one node of 10), seen under an exhausted budget over the
    plain pods ("plain") and under one with disruptions left over every pod ("every"); each node's pods by
    name."""
    index = PodIndex()
    by_node: dict[str, list[str]] = {}
    nodes: dict[str, NodeRecord] = {}
    layout = [(f"node-{i}", PODS_PER_NODE) for i in range(max(1, size // PODS_PER_NODE))] + [(SMALL_NODE, 10)]
    for node, count in layout:
        allocatable = {"cpu": str(count // 4 + 1), "memory": f"{count + 8}Gi", "pods": str(count + 1)}
        nodes[node] = node_record({"metadata": {"name": node}, "status": {"allocatable": allocatable}})
        for k in range(count):
            name = f"{node}-p{k}"
            index.put(bound_pod(name, node, protected=k % 2 == 0))
            by_node.setdefault(node, []).append(name)
    classes = {name: class_view(body) for name, body in CLASSES.items()}
    budgets = {"plain": budget(0, tier="plain"), "every": budget(BUDGET_ALLOWED, app="train")}
    views = {under: ClusterView(index, nodes, classes, BudgetIndex.of([pdb])) for under, pdb in budgets.items()}
    return views, by_node


def body(node: str, victims: list[str]) -> dict[str, Any]:
    preemptor = {
        "metadata": {"name": "high", "namespace": "batch", "uid": "uid-high"},
        "spec": {
            "priority": 9000,
            "priorityClassName": "high",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}],
        },
    }
    return {
        "Pod": preemptor,
        "NodeNameToMetaVictims": {node: {"Pods": [{"UID": f"uid-{name}"} for name in victims], "NumPDBViolations": 0}},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,50000")
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--cpu-time", action="store_true", help="time by the process's CPU clock, not the wall clock")
    args = parser.parse_args()
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    rows = []
    print(f"{'cached pods':>11} {'node pods':>9} {'path':<10} {'p50 ms':>8} {'p99 ms':>8}")
    for size in (int(s) for s in args.sizes.split(",")):
        views, by_node = fill(size)
        for node in ("node-0", SMALL_NODE):
            names = by_node[node]
            plain, protected = [n for i, n in enumerate(names) if i % 2], [n for i, n in enumerate(names) if not i % 2]
            chosen_again = {NodeChoice.REPLACED, NodeChoice.RECOUNTED, NodeChoice.DROPPED}
            for path, view, victims, expected in (
                ("unchanged", views["plain"], plain[:8], {NodeChoice.UNCHANGED}),
                ("recompute", views["plain"], protected[:8], chosen_again),
                ("budget", views["every"], plain[:8], chosen_again - {NodeChoice.DROPPED}),
            ):
                payload = body(node, victims)

                def decide(view: ClusterView = view, payload: dict[str, Any] = payload) -> object:
                    return decide_preemption(ExtenderPreemptionArgs.model_validate(payload), view, now)

                outcome = decide_preemption(ExtenderPreemptionArgs.model_validate(payload), view, now).outcomes[0]
                assert outcome.choice in expected, f"{path} on {node}: {outcome.choice.value}, {outcome.detail}"
                p50, p99 = timed(decide, args.repeat, time.process_time if args.cpu_time else time.perf_counter)
                rows.append(
                    {
                        "cached_pods": len(view.pods),
                        "node": node,
                        "node_pods": len(names),
                        "path": path,
                        "choice": outcome.choice.value,
                        "p50_ms": round(p50, 3),
                        "p99_ms": round(p99, 3),
                    }
                )
                print(
                    f"{len(view.pods):>11} {len(names):>9} {path:<10} {p50:>8.3f} {p99:>8.3f}  {outcome.choice.value}"
                )

    def p50(node_pods: int, path: str, size_rank: int) -> float:
        found = sorted(
            (r for r in rows if r["node_pods"] == node_pods and r["path"] == path), key=lambda r: r["cached_pods"]
        )
        return float(found[size_rank]["p50_ms"])

    ratio = p50(PODS_PER_NODE, "recompute", -1) / p50(PODS_PER_NODE, "recompute", 0)
    largest = p50(PODS_PER_NODE, "recompute", -1)
    unchanged, budget = p50(PODS_PER_NODE, "unchanged", -1), p50(PODS_PER_NODE, "budget", -1)
    print(
        f"recompute at {PODS_PER_NODE} pods per node: {largest:.3f} ms (target < 2 ms); largest/smallest cache: "
        f"{ratio:.2f}x (target <= 1.2x); unchanged {unchanged:.3f} ms, budget {budget:.3f} ms"
    )
    path = save_results(
        "extender_latency",
        {
            "settings": {"sizes": args.sizes, "repeat": args.repeat, "cpu_time": args.cpu_time},
            "rows": rows,
            "recompute_ms": largest,
            "unchanged_ms": unchanged,
            "budget_ms": budget,
            "size_ratio": round(ratio, 2),
        },
    )
    print(f"saved to {shown(path)}")


if __name__ == "__main__":
    main()
