"""prometheus_client collectors built from the declared metrics (`declared`): the name, help, labels and
buckets of each come from its row, so a component's metrics object never spells them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from preemption_toleration.telemetry.declared import Kind, Metric
from preemption_toleration.telemetry.hot import HotCounter, HotHistogram


def _of(metric: Metric, kind: Kind, hot: bool) -> Metric:
    if metric.kind is not kind or metric.hot is not hot:
        raise ValueError(f"{metric.name} is declared a {'hot ' if metric.hot else ''}{metric.kind.value}")
    return metric


def counter(metric: Metric, registry: CollectorRegistry) -> Counter:
    _of(metric, Kind.COUNTER, hot=False)
    return Counter(metric.name, metric.help, metric.label_names, registry=registry)


def gauge(metric: Metric, registry: CollectorRegistry) -> Gauge:
    _of(metric, Kind.GAUGE, hot=False)
    return Gauge(metric.name, metric.help, metric.label_names, registry=registry)


def histogram(metric: Metric, registry: CollectorRegistry) -> Histogram:
    _of(metric, Kind.HISTOGRAM, hot=False)
    return Histogram(metric.name, metric.help, metric.label_names, buckets=metric.buckets, registry=registry)


def hot_counter(metric: Metric, registry: CollectorRegistry) -> HotCounter:
    _of(metric, Kind.COUNTER, hot=True)
    return HotCounter(metric.name, metric.help, metric.label_names, registry)


def hot_histogram(metric: Metric, registry: CollectorRegistry) -> HotHistogram:
    _of(metric, Kind.HISTOGRAM, hot=True)
    return HotHistogram(metric.name, metric.help, metric.label_names, metric.buckets, registry)


def counter_family(metric: Metric) -> CounterMetricFamily:
    """The family a custom collector fills at each scrape."""
    _of(metric, Kind.COUNTER, hot=metric.hot)
    return CounterMetricFamily(metric.name, metric.help, labels=metric.label_names)


def gauge_family(metric: Metric) -> GaugeMetricFamily:
    _of(metric, Kind.GAUGE, hot=False)
    return GaugeMetricFamily(metric.name, metric.help, labels=metric.label_names)
