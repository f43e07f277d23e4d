"""A Node's record (`records.node.node_record`): what matching and fitting read, allocatable parsed once as
the node is decoded, and a field of the wrong shape read as absent rather than crashing the watch."""

from __future__ import annotations

from typing import Any

import pytest

from preemption_toleration.records.node import NodeRecord, node_record
from tests import builders

TAINT = {"key": "gpu", "effect": "NoSchedule"}

CASES: list[tuple[str, dict[str, Any], NodeRecord]] = [
    (
        "allocatable is scaled like requests (CPU in millicores, memory in bytes)",
        {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "1500m", "memory": "1Gi", "pods": "110"}}},
        NodeRecord("n", allocatable={"cpu": 1500, "memory": 1 << 30, "pods": 110}),
    ),
    (
        "labels, taints and a cordon are kept",
        {"metadata": {"name": "n", "labels": {"pool": "gpu"}}, "spec": {"taints": [TAINT], "unschedulable": True}},
        NodeRecord("n", labels={"pool": "gpu"}, taints=(TAINT,), unschedulable=True),
    ),
    (
        "unschedulable other than true is no cordon",
        {"metadata": {"name": "n"}, "spec": {"unschedulable": "yes"}},
        NodeRecord("n"),
    ),
    (
        "fields of the wrong shape read as absent",
        {"metadata": {"name": "n", "labels": ["pool"]}, "spec": {"taints": {"key": "x"}}, "status": "ready"},
        NodeRecord("n"),
    ),
    (
        "a taint that is no object is left out",
        {"metadata": {"name": "n"}, "spec": {"taints": ["gpu", TAINT]}},
        NodeRecord("n", taints=(TAINT,)),
    ),
    ("no metadata: an empty name", {}, NodeRecord("")),
]


@pytest.mark.parametrize(("rule", "body", "expected"), CASES, ids=[case[0] for case in CASES])
def test_node_record(rule: str, body: dict[str, Any], expected: NodeRecord) -> None:
    assert node_record(body) == expected, rule


def test_a_built_node_reads_as_its_capacity() -> None:
    record = node_record(builders.node("node-a", cpu="2", memory="4Gi", pods="10"))
    assert (record.name, dict(record.allocatable)) == ("node-a", {"cpu": 2000, "memory": 4 << 30, "pods": 10})
    assert record.labels["kubernetes.io/hostname"] == "node-a"
