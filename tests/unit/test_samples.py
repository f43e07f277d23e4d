"""The first-run samples (config/samples: `kubectl apply -k config/samples`, and the first thing `ptol demo`
applies) show policies at work: every policy governs a class of the samples, so none of them is Ready=False."""

from __future__ import annotations

from pathlib import Path

import yaml

from preemption_toleration.demo.objects import sample_objects
from preemption_toleration.governance.planner import plan
from preemption_toleration.records.policy import policy_view
from preemption_toleration.records.priority_class import class_view

SAMPLES = Path(__file__).resolve().parents[2] / "config" / "samples"


def test_every_sample_policy_applies_to_the_sample_classes_alone() -> None:
    documents = [
        document for path in sorted(SAMPLES.glob("*.yaml")) for document in yaml.safe_load_all(path.read_text())
    ]
    classes, policies = sample_objects(documents)
    outcomes = plan([policy_view(p) for p in policies], [class_view(c) for c in classes]).outcomes
    assert {name: (outcome.reason.value, outcome.target) for name, outcome in outcomes.items()} == {
        "batch-non-preempted": ("Applied", "batch-non-preempted"),
        "guaranteed-10min": ("Applied", "selector preemption-toleration.dev/tier=guaranteed-10min (1)"),
    }
