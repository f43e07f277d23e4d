"""The request path's plain-number metrics scrape exactly as prometheus_client's own would."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from preemption_toleration.telemetry.hot import HotCounter, HotHistogram

BOUNDS = (0.001, 0.0025, 0.005, 0.01, 1.0)


def _scraped(registry: CollectorRegistry) -> list[str]:
    """The exposition's lines, without prometheus_client's `_created` series (which ours do not keep)."""
    return [line for line in generate_latest(registry).decode().splitlines() if "_created" not in line]


OBSERVATIONS = [
    # (rule, observations as (endpoint, seconds))
    ("nothing observed yet", []),
    ("a value on a bound falls in that bound's bucket", [("validate", 0.001), ("validate", 0.0025)]),
    ("a value just above a bound falls in the next bucket", [("validate", 0.0010001)]),
    ("a value above the last bound only counts in +Inf", [("guard", 3.5)]),
    ("zero falls in the first bucket", [("guard", 0.0)]),
    ("series are kept apart by their labels", [("guard", 0.004), ("validate", 0.02), ("guard", 0.0001)]),
]


@pytest.mark.parametrize(("rule", "observed"), OBSERVATIONS, ids=[rule for rule, _ in OBSERVATIONS])
def test_a_hot_histogram_scrapes_like_a_prometheus_histogram(rule: str, observed: list[tuple[str, float]]) -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    hot = HotHistogram("ptol_request_seconds", "Time to answer.", ["endpoint"], BOUNDS, ours)
    reference = Histogram("ptol_request_seconds", "Time to answer.", ["endpoint"], buckets=BOUNDS, registry=theirs)
    for endpoint, seconds in observed:
        hot.series(endpoint).observe(seconds)
        reference.labels(endpoint).observe(seconds)
    assert _scraped(ours) == _scraped(theirs)


COUNTS = [
    # (rule, increments as label values)
    ("nothing counted yet", []),
    ("one series", [("validate", "200")]),
    ("repeats add up", [("validate", "200")] * 3),
    ("label values keep series apart", [("validate", "200"), ("validate", "400"), ("guard", "200")]),
]


@pytest.mark.parametrize(("rule", "increments"), COUNTS, ids=[rule for rule, _ in COUNTS])
def test_a_hot_counter_scrapes_like_a_prometheus_counter(rule: str, increments: list[tuple[str, str]]) -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    hot = HotCounter("ptol_requests_total", "Requests.", ["endpoint", "code"], ours)
    reference = Counter("ptol_requests_total", "Requests.", ["endpoint", "code"], registry=theirs)
    for labels in increments:
        hot.inc(*labels)
        reference.labels(*labels).inc()
    assert _scraped(ours) == _scraped(theirs)
    for labels in set(increments):
        assert hot.value(*labels) == increments.count(labels)


def test_histogram_bounds_must_increase() -> None:
    with pytest.raises(ValueError, match="increasing"):
        HotHistogram("h", "h", [], (0.1, 0.05), CollectorRegistry())


def test_refusals_by_preemptor_keep_the_most_recently_refused_series(monkeypatch: pytest.MonkeyPatch) -> None:
    from preemption_toleration.serving import webhook_metrics as metrics_module

    monkeypatch.setattr(metrics_module, "REFUSED_PREEMPTOR_SERIES", 2)
    metrics = metrics_module.WebhookMetrics()
    for preemptor in ("team/a", "team/b", "team/a", "team/c"):
        metrics.refused(preemptor)
    samples = {
        sample.labels["preemptor"]: sample.value
        for family in metrics.registry.collect()
        for sample in family.samples
        if sample.name == "ptol_guard_refusals_by_preemptor_total"
    }
    assert samples == {"team/a": 2.0, "team/c": 1.0}, "b, the least recently refused, is dropped"
