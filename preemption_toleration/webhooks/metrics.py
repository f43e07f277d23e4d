"""Prometheus metrics of the webhook server, in a registry of its own (served on /metrics)."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from preemption_toleration.kube.informer import CacheStats
from preemption_toleration.webhooks.hot_metrics import HotCounter, HotHistogram

logger = logging.getLogger("preemption_toleration.webhooks")
REFUSED_PREEMPTOR_SERIES = 100  # preemptors with a series of their own: the most recently refused


class WebhookMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        # Updated on every request: plain numbers, made into metrics when scraped (see hot_metrics).
        self.requests = HotCounter(
            "ptol_webhook_requests_total",
            "Admission requests by endpoint and HTTP status code.",
            ["endpoint", "code"],
            self.registry,
        )
        self.decisions = HotCounter(
            "ptol_webhook_decisions_total",
            "Admission decisions by endpoint and outcome (allowed, denied, mutated, warned).",
            ["endpoint", "decision"],
            self.registry,
        )
        self.latency = HotHistogram(
            "ptol_webhook_request_seconds",
            "Time to answer an admission request.",
            ["endpoint"],
            (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
            self.registry,
        )
        self.guard_refusals = HotCounter(  # a scheduler retrying a protected victim makes this a hot path
            "ptol_guard_refusals_total",
            "Preemptions the guard refused (mode=enforce) or would have refused (mode=audit), by request kind "
            "(delete, eviction, status) and protection (Forever, Until, NotScheduled).",
            ["kind", "protection", "mode"],
            self.registry,
        )
        self.extender_nodes = Counter(
            "ptol_extender_nodes_total",
            "Candidate nodes the scheduler extender judged, by choice: unchanged (no victim tolerates the "
            "preemptor), replaced (victims chosen without the protected pods), dropped (the preemptor cannot "
            "fit without one), recounted (the scheduler's victims, with budget violations counted without the "
            "pods that tolerate the preemptor), unknown (a victim the cache does not hold: left to the guard).",
            ["choice"],
            registry=self.registry,
        )
        self.steering = Counter(
            "ptol_steering_total",
            "Refused preemptions steering considered, by outcome: steered, audited (audit mode), "
            "claimed-elsewhere (another replica acted within the window), overtaken (bound before steering "
            "acted), unblocked (a nomination upstream would not have made, which kept a preemptor from its node, "
            "cleared), resumed (finished after a restart), resume-refused (a Lease left acting the cluster does not "
            "bear out), failed, restarted (steering started again after an error), or declined: no-evidence, "
            "unjudged (constraints the project does not judge), fits, no-node, in-progress (the "
            "scheduler's own preemption is under way), changed (the chosen node changed while planned), "
            "stale-cache (a cache is not current: nothing planned), unchanged (declined before and no cache "
            "changed since, or its wait is not over: not planned again).",
            ["outcome"],
            registry=self.registry,
        )
        self.steering_plans = Histogram(
            "ptol_steering_plan_seconds",
            "Event-loop time each steering plan took, in slices between which the loop answers requests "
            "(its count: plans made).",
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
            registry=self.registry,
        )
        self.preemptor_sources = HotCounter(
            "ptol_guard_preemptor_source_total",
            "Preemptions the guard judged, by how it knew the preemptor: recorded (named by the scheduler's "
            "extender call), inferred (from pending pods), departed (from pending pods deleted in the last 30 s, "
            "when no pending one could be it), named (an Eviction's annotation), configured (an Eviction that "
            "names none, judged at --eviction-preemptor-priority).",
            ["source"],
            self.registry,
        )
        # Refusals per preemptor, for the most recently refused ones: plain counts (a hot path, as above),
        # made into the family when scraped; beyond the bound the least recently refused is dropped.
        self._refused_preemptors: OrderedDict[str, int] = OrderedDict()
        self.registry.register(_RefusedPreemptors(self._refused_preemptors))
        self.nudges = Counter(
            "ptol_preemptor_nudges_total",
            "Expiry nudges of pending preemptors held back by a time-limited toleration, by outcome: planned, "
            "nudged (nominated and withdrawn), skipped (no longer pending), failed.",
            ["outcome"],
            registry=self.registry,
        )
        self.unexpected_errors = Counter(
            "ptol_webhook_unexpected_errors_total",
            "Requests whose judgement raised an error no rule foresaw, answered 400 (a bug: the log has the "
            "traceback), by endpoint.",
            ["endpoint"],
            registry=self.registry,
        )
        self._caches = _CacheCollector()
        self.registry.register(self._caches)
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

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
        objects = GaugeMetricFamily("ptol_webhook_cache_objects", "Objects in the watch caches.", labels=["kind"])
        lists = CounterMetricFamily(
            "ptol_webhook_cache_lists",
            "Full listings of a watched resource: the first one, then one per expired or failed watch.",
            labels=["kind"],
        )
        pages = CounterMetricFamily(
            "ptol_webhook_cache_list_pages", "Pages of those listings (--list-page-size objects each).", labels=["kind"]
        )
        failures = CounterMetricFamily(
            "ptol_webhook_cache_watch_failures",
            "Watches or listings that failed (API errors, broken connections).",
            labels=["kind"],
        )
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

    NAME = "ptol_guard_refusals_by_preemptor"
    HELP = (
        f"Refusals per preemptor (namespace/name), for the {REFUSED_PREEMPTOR_SERIES} most recently refused "
        "preemptors: a fast-growing series is a scheduler retrying the same protected victim."
    )

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.counts = counts

    def describe(self) -> Iterator[Metric]:
        yield CounterMetricFamily(self.NAME, self.HELP, labels=["preemptor"])

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self.NAME, self.HELP, labels=["preemptor"])
        for preemptor, count in self.counts.items():
            family.add_metric([preemptor], count)
        yield family
