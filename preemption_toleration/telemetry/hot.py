"""Counters and a histogram for the request path, kept as plain numbers and made into metrics when scraped.

prometheus_client's own metrics take a lock for every update and walk the buckets one by one: with the
label lookups, about 5 µs of a request's 80 µs on one CPU in `benchmarks/webhook_throughput.py`'s lab.
These cost a dictionary update (a bisection for the histogram). They are not thread-safe: the webhook
server's event loop is the only thread that updates them and the only one that scrapes them (/metrics).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import cast

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

_bound_label = cast(Callable[[float], str], floatToGoString)  # `le` as prometheus_client writes it (untyped)


class HotCounter(Collector):
    """A counter family: `inc(*labels)` adds one to the series of those label values."""

    def __init__(self, name: str, documentation: str, labels: Sequence[str], registry: CollectorRegistry) -> None:
        self.name = name.removesuffix("_total")  # the family adds the suffix, as prometheus_client's Counter does
        self.documentation = documentation
        self.labels = tuple(labels)
        self.counts: dict[tuple[str, ...], int] = {}
        registry.register(self)

    def inc(self, *labels: str) -> None:
        counts = self.counts
        counts[labels] = counts.get(labels, 0) + 1

    def value(self, *labels: str) -> int:
        return self.counts.get(labels, 0)

    def describe(self) -> Iterator[Metric]:
        yield CounterMetricFamily(self.name, self.documentation, labels=self.labels)

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labels)
        for labels, count in self.counts.items():  # in order of first use, as prometheus_client
            family.add_metric(labels, count)
        yield family


class Buckets:
    """The observations of one series of a `HotHistogram`: a count per bucket (not cumulative) and the sum."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1  # the first bucket whose bound is >= value
        self.total += value


class HotHistogram(Collector):
    """A histogram family: `series(*labels)` is the `Buckets` to observe, created once per label values."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labels: Sequence[str],
        bounds: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        if list(bounds) != sorted(set(bounds)):
            raise ValueError(f"histogram bounds must be increasing: {bounds}")
        self.name = name
        self.documentation = documentation
        self.labels = tuple(labels)
        self.bounds = tuple(float(bound) for bound in bounds)
        self._series: dict[tuple[str, ...], Buckets] = {}
        registry.register(self)

    def series(self, *labels: str) -> Buckets:
        found = self._series.get(labels)
        if found is None:
            found = self._series[labels] = Buckets(self.bounds)
        return found

    def describe(self) -> Iterator[Metric]:
        yield HistogramMetricFamily(self.name, self.documentation, labels=self.labels)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labels)
        names = [_bound_label(bound) for bound in self.bounds] + ["+Inf"]
        for labels, buckets in self._series.items():
            cumulative, running = [], 0
            for name, count in zip(names, buckets.counts, strict=True):
                running += count
                cumulative.append((name, float(running)))
            family.add_metric(labels, cumulative, sum_value=buckets.total)
        yield family
