"""Prometheus metrics of the webhook server, in a registry of its own (served on /metrics)."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from preemption_toleration.core.protection import ProtectionKind
from preemption_toleration.kube.informer import CacheStats
from preemption_toleration.steering.plan import Declined
from preemption_toleration.telemetry import declared
from preemption_toleration.telemetry.collectors import (
    counter,
    counter_family,
    gauge_family,
    histogram,
    hot_counter,
    hot_histogram,
)
from preemption_toleration.telemetry.declared import (
    REFUSED_PREEMPTOR_SERIES,
    GroupDecisionOutcome,
    KueueBoostOutcome,
    NudgeOutcome,
    SteeringOutcome,
)

logger = logging.getLogger("preemption_toleration.webhooks")


class SteeringMetrics:
    """What steering counts: each refused preemption's outcome, and each plan's event-loop time."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.outcome_counter = counter(declared.STEERING, registry)
        self.plan_seconds = histogram(declared.STEERING_PLANS, registry)

    def count(self, outcome: SteeringOutcome | Declined) -> None:
        self.outcome_counter.labels(outcome.value).inc()

    def planned(self, seconds: float) -> None:
        self.plan_seconds.observe(seconds)


class WebhookMetrics:
    """The webhook server's metrics, each built from its row in `telemetry.declared`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        # Updated on every request: plain numbers, made into metrics when scraped (see telemetry.hot).
        self.requests = hot_counter(declared.WEBHOOK_REQUESTS, self.registry)
        self.decisions = hot_counter(declared.WEBHOOK_DECISIONS, self.registry)
        self.latency = hot_histogram(declared.WEBHOOK_LATENCY, self.registry)
        # The guard's, on its request path too: a scheduler retrying a protected victim makes them hot.
        self.guard_refusals = hot_counter(declared.GUARD_REFUSALS, self.registry)
        self.preemptor_sources = hot_counter(declared.GUARD_PREEMPTOR_SOURCES, self.registry)
        # Refusals per preemptor, for the most recently refused ones: plain counts (a hot path, as above),
        # made into the family when scraped; beyond the bound the least recently refused is dropped.
        self._refused_preemptors: OrderedDict[str, int] = OrderedDict()
        self.registry.register(_RefusedPreemptors(self._refused_preemptors))
        self.steering = SteeringMetrics(self.registry)
        self.extender_nodes = counter(declared.EXTENDER_NODES, self.registry)
        self.nudges = counter(declared.NUDGES, self.registry)
        self.kueue_boosts = counter(declared.KUEUE_BOOSTS, self.registry)
        self.kueue_protected_evictions = counter(declared.KUEUE_PROTECTED_EVICTIONS, self.registry)
        self.groups_left_in_part = counter(declared.GUARD_GROUPS_LEFT_IN_PART, self.registry)
        self.group_decisions = counter(declared.GUARD_GROUP_DECISIONS, self.registry)
        self.unexpected_errors = counter(declared.UNEXPECTED_ERRORS, self.registry)
        self._caches = _CacheCollector()
        self.registry.register(self._caches)
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

    def group_decided(self, outcome: GroupDecisionOutcome) -> None:
        self.child(self.group_decisions, outcome.value).inc()

    def kueue_boosted(self, outcome: KueueBoostOutcome) -> None:
        self.child(self.kueue_boosts, outcome.value).inc()

    def kueue_protected_evicted(self, protection: ProtectionKind) -> None:
        self.child(self.kueue_protected_evictions, protection.value).inc()

    def nudged(self, outcome: NudgeOutcome) -> None:
        self.child(self.nudges, outcome.value).inc()

    def child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, looked up once: the per-request cost of metrics stays a few additions."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def refused(self, preemptor: str) -> None:
        """Counts a refusal for `preemptor`; beyond the series bound, the least recent one is dropped."""
        counts = self._refused_preemptors
        count = counts.pop(preemptor, 0)
        counts[preemptor] = count + 1  # now the most recent
        if count == 0:
            while len(counts) > REFUSED_PREEMPTOR_SERIES:
                counts.popitem(last=False)

    def refusals_of(self, preemptor: str) -> int:
        return self._refused_preemptors.get(preemptor, 0)

    def track_caches(self, stats: Callable[[], Iterable[CacheStats]]) -> None:
        """Report these watch caches at each scrape."""
        self._caches.stats = stats


class _CacheCollector(Collector):
    """The caches' figures, read when scraped (the informers count; nothing here needs updating)."""

    def __init__(self) -> None:
        self.stats: Callable[[], Iterable[CacheStats]] = list

    def collect(self) -> Iterator[Metric]:
        objects = gauge_family(declared.CACHE_OBJECTS)
        lists = counter_family(declared.CACHE_LISTS)
        pages = counter_family(declared.CACHE_LIST_PAGES)
        failures = counter_family(declared.CACHE_WATCH_FAILURES)
        try:
            caches = list(self.stats())
        except Exception:
            logger.exception("cache figures unavailable")
            caches = []
        for cache in caches:
            objects.add_metric([cache.resource], cache.objects)
            lists.add_metric([cache.resource], cache.lists)
            pages.add_metric([cache.resource], cache.pages)
            failures.add_metric([cache.resource], cache.failures)
        yield from (objects, lists, pages, failures)


class _RefusedPreemptors(Collector):
    """ptol_guard_refusals_by_preemptor_total, from the bounded counts `WebhookMetrics.refused` keeps."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.counts = counts

    def describe(self) -> Iterator[Metric]:
        yield counter_family(declared.GUARD_REFUSALS_BY_PREEMPTOR)

    def collect(self) -> Iterator[Metric]:
        family = counter_family(declared.GUARD_REFUSALS_BY_PREEMPTOR)
        for preemptor, count in self.counts.items():
            family.add_metric([preemptor], count)
        yield family
