"""Prometheus metrics of the webhook server, in a registry of its own (served on /metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class WebhookMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "ptol_webhook_requests_total",
            "Admission requests by endpoint and HTTP status code.",
            ["endpoint", "code"],
            registry=self.registry,
        )
        self.decisions = Counter(
            "ptol_webhook_decisions_total",
            "Admission decisions by endpoint and outcome (allowed, denied, mutated, warned).",
            ["endpoint", "decision"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "ptol_webhook_request_seconds",
            "Time to answer an admission request.",
            ["endpoint"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
            registry=self.registry,
        )
        self.guard_refusals = Counter(
            "ptol_guard_refusals_total",
            "Preemptions the guard refused (mode=enforce) or would have refused (mode=audit), by request kind "
            "(delete, eviction, status) and protection (Forever, Until, NotScheduled).",
            ["kind", "protection", "mode"],
            registry=self.registry,
        )
        self.cache_objects = Gauge(
            "ptol_webhook_cache_objects", "Objects in the watch caches.", ["kind"], registry=self.registry
        )
