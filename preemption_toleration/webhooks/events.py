"""Kubernetes Events on the victims of refused preemptions, aggregated per victim and reason.

A scheduler retrying many times a second must not flood the API server: the first refusal creates an Event,
later ones raise its count, at most once per `min_interval` seconds. The guard hands over the first refusal
of a kind and then one per interval with the number of refusals it stands for (`guard.repeats`). Posting
happens off the request path.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.resources import pod_ref
from preemption_toleration.guard.decisions import Refusal
from preemption_toleration.kube.client import API_ERRORS, answer_of
from preemption_toleration.kube.events import event_body

logger = logging.getLogger("preemption_toleration.guard")
COMPONENT = "preemption-toleration-guard"
QUEUE_LIMIT = 1000
MAX_AGGREGATES = 10000


@dataclass
class _Aggregate:
    name: str
    count: int
    posted_at: float
    first: datetime


def refusal_event(name: str, refusal: Refusal, count: int, first: datetime, now: datetime) -> dict[str, Any]:
    """The Event on a refused preemption's victim, standing for `count` refusals since `first`."""
    victim = refusal.victim
    reason = "PreemptionWouldBeRefused" if refusal.audit else "PreemptionRefused"
    ref = pod_ref(victim.namespace, victim.name, victim.uid)
    return event_body(ref, "Warning", reason, refusal.message, COMPONENT, now, name=name, count=count, first=first)


class RefusalEvents:
    def __init__(self, api: ApiClient, min_interval: float = 10.0) -> None:
        self.core = client.CoreV1Api(api)
        self.min_interval = min_interval
        self.queue: asyncio.Queue[tuple[Refusal, int]] = asyncio.Queue(maxsize=QUEUE_LIMIT)
        self.aggregates: dict[tuple[Any, ...], _Aggregate] = {}

    def record(self, refusal: Refusal, count: int = 1) -> None:
        """Queue `refusal`, which stands for `count` refusals of its victim (the repeats since the last)."""
        if refusal.dry_run:
            return
        try:
            self.queue.put_nowait((refusal, count))
        except asyncio.QueueFull:
            logger.warning("event queue full; refusal not posted as an Event")

    async def run(self) -> None:
        """Posts queued refusals for ever: no failure of one post ends the loop (a dead loop would leave
        the queue full and every later refusal without its Event)."""
        while True:
            refusal, count = await self.queue.get()
            try:
                await self._post(refusal, count)
            except API_ERRORS as error:
                logger.warning("could not post the refusal Event", extra={"problem": repr(error)})
            except Exception:
                logger.exception("could not post the refusal Event")

    async def _post(self, refusal: Refusal, count: int = 1) -> None:
        victim = refusal.victim
        key = (victim.namespace, victim.name, victim.uid, refusal.audit, refusal.reason)
        aggregate = self.aggregates.get(key)
        now = time.monotonic()
        if aggregate is None:
            if len(self.aggregates) >= MAX_AGGREGATES:  # forget the least recently posted half
                keep = sorted(self.aggregates.items(), key=lambda item: item[1].posted_at)[MAX_AGGREGATES // 2 :]
                self.aggregates = dict(keep)
            name = f"{victim.name or None}.ptol-{uuid.uuid4().hex[:10]}"
            first = datetime.now(UTC)
            body = refusal_event(name, refusal, count, first, first)
            await answer_of(
                self.core.create_namespaced_event(body["metadata"]["namespace"], body, _preload_content=False)
            )
            self.aggregates[key] = _Aggregate(name, count, now, first)
            return
        aggregate.count += count
        if now - aggregate.posted_at < self.min_interval:
            return  # counted; written with the next post
        aggregate.posted_at = now
        body = refusal_event(aggregate.name, refusal, aggregate.count, aggregate.first, datetime.now(UTC))
        patch = {key: body[key] for key in ("count", "lastTimestamp", "message")}
        namespace = body["metadata"]["namespace"]
        try:
            await answer_of(self.core.patch_namespaced_event(aggregate.name, namespace, patch, _preload_content=False))
        except ApiException as error:
            if error.status != 404:
                raise
            # The Event expired (the API server's --event-ttl, 1 h by default): write it again, whole, with
            # the count and first time so far, as kubectl describe would have shown them.
            await answer_of(self.core.create_namespaced_event(namespace, body, _preload_content=False))
