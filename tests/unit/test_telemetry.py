"""Each metric is declared once (`telemetry/declared.py`). These tests catch drift: a collector registered
outside the table, a row no component serves, a label value counted that the row does not declare, and a
docs reference that is not the table's."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from preemption_toleration.core.protection import ProtectionKind
from preemption_toleration.kube.informer import CacheStats
from preemption_toleration.operator.metrics import OperatorMetrics
from preemption_toleration.serving.webhook_metrics import WebhookMetrics
from preemption_toleration.steering.plan import Declined
from preemption_toleration.telemetry import declared
from preemption_toleration.telemetry.collectors import counter, hot_counter
from preemption_toleration.telemetry.declared import (
    METRICS,
    Component,
    NudgeOutcome,
    Result,
    ResyncOutcome,
    SteeringOutcome,
    WriteAction,
)
from preemption_toleration.telemetry.reference import PATH, metrics_reference

ROOT = Path(__file__).resolve().parents[2]


def served(registry: CollectorRegistry) -> dict[str, tuple[str, str]]:
    """Family name as scraped -> (type, help), for every family the registry describes."""
    found = {}
    for family in registry.collect():
        name = family.name + ("_total" if family.type == "counter" else "")
        found[name] = (family.type, family.documentation)
    return found


def declared_of(component: Component) -> dict[str, tuple[str, str]]:
    return {metric.name: (metric.kind.value, metric.help) for metric in METRICS if metric.component is component}


def test_the_webhook_server_serves_exactly_its_rows() -> None:
    metrics = WebhookMetrics()
    metrics.track_caches(lambda: [CacheStats("pods", 1, 1, 0, 1)])
    assert served(metrics.registry) == declared_of(Component.WEBHOOK)


def test_the_operator_serves_exactly_its_rows() -> None:
    assert served(OperatorMetrics().registry) == declared_of(Component.OPERATOR)


def test_names_are_unique_and_counters_end_in_total() -> None:
    names = [metric.name for metric in METRICS]
    assert len(names) == len(set(names))
    assert [m.name for m in METRICS if (m.kind is declared.Kind.COUNTER) != m.name.endswith("_total")] == []


def test_the_docs_reference_is_generated_from_the_table() -> None:
    assert (ROOT / PATH).read_text() == metrics_reference(), "run `ptol dev manifests`"


def values(metric: declared.Metric, label: str) -> tuple[str, ...]:
    return next(found.values for found in metric.labels if found.name == label)


LABEL_VALUES = [
    (
        "steering counts each outcome and each reason it declines",
        declared.STEERING,
        "outcome",
        [*SteeringOutcome, *Declined],
    ),
    ("nudges", declared.NUDGES, "outcome", list(NudgeOutcome)),
    (
        "the guard refuses only protected kinds",
        declared.GUARD_REFUSALS,
        "protection",
        [ProtectionKind.FOREVER, ProtectionKind.UNTIL, ProtectionKind.NOT_SCHEDULED],
    ),
    ("reconciles", declared.OPERATOR_RECONCILES, "result", list(Result)),
    ("writes", declared.OPERATOR_WRITES, "action", list(WriteAction)),
    ("resyncs", declared.OPERATOR_RESYNCS, "outcome", list(ResyncOutcome)),
]


@pytest.mark.parametrize(("rule", "metric", "label", "expected"), LABEL_VALUES, ids=[case[0] for case in LABEL_VALUES])
def test_label_values_are_the_enums_the_code_counts_with(rule, metric, label, expected) -> None:
    assert values(metric, label) == tuple(value.value for value in expected), rule


def test_steering_counts_through_its_typed_object() -> None:
    metrics = WebhookMetrics()
    metrics.steering.count(SteeringOutcome.STEERED)
    metrics.steering.count(Declined.NO_NODE)
    metrics.steering.planned(0.002)
    scraped = {
        (sample.name, tuple(sample.labels.values())): sample.value
        for family in metrics.registry.collect()
        for sample in family.samples
    }
    assert scraped[("ptol_steering_total", ("steered",))] == 1
    assert scraped[("ptol_steering_total", ("no-node",))] == 1
    assert scraped[("ptol_steering_plan_seconds_count", ())] == 1


def test_a_collector_of_another_kind_than_its_row_is_refused() -> None:
    with pytest.raises(ValueError, match="is declared a hot counter"):
        counter(declared.WEBHOOK_REQUESTS, CollectorRegistry())
    with pytest.raises(ValueError, match="is declared a counter"):
        hot_counter(declared.EXTENDER_NODES, CollectorRegistry())
