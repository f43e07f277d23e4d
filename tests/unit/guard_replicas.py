"""Replicas of the guard's endpoint for unit tests: each with its own view and memory, the group decisions
settled through one store (`guard.adapter.group_leases.MemoryStore`, as the Leases of one namespace), on a clock
the test sets at each request."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from preemption_toleration.guard.adapter.group_leases import GroupClaims, MemoryStore
from preemption_toleration.guard.adapter.guard_endpoint import GuardEndpoint, GuardHooks
from preemption_toleration.guard.verdicts import GuardConfig
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.serving.handling import Reply
from preemption_toleration.serving.webhook_metrics import WebhookMetrics
from tests.unit.test_guard import pod_request

ENFORCING = GuardConfig()


class Replica:
    def __init__(
        self, state: ClusterView, store: MemoryStore, name: str = "replica-0", config: GuardConfig = ENFORCING
    ) -> None:
        self.state = state
        self.now: datetime | None = None
        self.metrics = WebhookMetrics()
        self.claims = GroupClaims(store, "ptol", name, self.metrics.group_decided, clock=self._clock)
        hooks = GuardHooks(lambda: state, config, lambda refusal, count: None, claims=self.claims, clock=self._clock)
        self.endpoint = GuardEndpoint(hooks, self.metrics, lambda needs: [])

    def _clock(self) -> datetime:
        assert self.now is not None
        return self.now

    async def refused(self, victim: dict[str, Any], now: datetime) -> str | None:
        """The refusal's message of the scheduler's DELETE of `victim` at `now`, or None when allowed."""
        self.now = now
        reply = self.endpoint.handle(pod_request(None, old=victim, name=victim["metadata"]["name"]))
        if not isinstance(reply, Reply):
            reply = await reply
        response = reply.verdict
        return None if response.allowed else response.status.message  # type: ignore[union-attr]
