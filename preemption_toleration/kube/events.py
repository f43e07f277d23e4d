"""Kubernetes Events about an object, written where `kubectl describe` finds them, off the caller's path.

`kubectl describe` lists an object's Events with the field selector involvedObject.name, .namespace, .kind
and .uid; for a cluster-scoped object (a PreemptionTolerationPolicy, a PriorityClass) it asks every
namespace for involvedObject.namespace="" (kubectl's searchEvents). So such an Event names no namespace in
its involvedObject and is stored in namespace "default", the only one the API server accepts for it (as
client-go's recorder does for Nodes). kopf's own `kopf.event` writes "default" into involvedObject too,
which no `kubectl describe` matches.

A burst of policies writes thousands of classes, one Event each, at the pace of the operator's writes (16 in
flight), so Events are posted as many at once, from a queue that holds a burst of 10,000. One poster kept
up with one request's latency only (92 of 900 Events posted when a 300 x 900 burst had converged), and a
queue of 1,000 dropped two thirds of a 3,000-class burst's. The API server's answer is read as bytes: the
client's model of an Event costs the operator's loop about 60 times what parsing its JSON does.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.resources import ObjectRef
from preemption_toleration.core.times import rfc3339
from preemption_toleration.kube.client import API_ERRORS, answer_of, api_problem

CLUSTER_SCOPED_EVENTS_NAMESPACE = "default"
MAX_MESSAGE = 1024  # the API server's limit on an Event's message
POSTERS = 16  # Events posted at once: as many as the operator's class writes in flight, one Event each
QUEUE_LIMIT = 10_000  # Events waiting (about 1.3 KB each, 13 MB full); beyond it one is dropped, with a log line
REQUEST_TIMEOUT = 10.0
MAX_AGGREGATES = 10_000  # aggregated Events remembered; beyond it the least recently posted half is forgotten


def event_body(
    ref: ObjectRef,
    event_type: str,
    reason: str,
    message: str,
    component: str,
    now: datetime,
    *,
    related: ObjectRef | None = None,
    instance: str | None = None,
    name: str | None = None,
    count: int = 1,
    first: datetime | None = None,
) -> dict[str, Any]:
    """A core/v1 Event about `ref`, the one builder of every Event the project posts: `related` names a
    second object (a preemptor beside its victim), `instance` the replica that reports it, `name` the Event's
    own name (the API server generates one otherwise), and `count` and `first` an Event that stands for
    several (the guard's aggregated refusals)."""
    involved = ref.to_json()
    namespace = ref.namespace or CLUSTER_SCOPED_EVENTS_NAMESPACE
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    metadata = {"name": name} if name else {"generateName": f"{ref.name or 'object'}."}
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {**metadata, "namespace": namespace},
        "involvedObject": involved,
        "type": event_type,
        "reason": reason,
        "message": message,
        "source": {"component": component},  # the "From" column of kubectl describe
        "reportingComponent": component,
        "firstTimestamp": rfc3339(first or now),
        "lastTimestamp": rfc3339(now),
        "count": count,
    }
    if instance is not None:
        body["reportingInstance"] = instance
    if related is not None:
        body["related"] = related.to_json()
    return body


@dataclass
class _Aggregate:
    name: str
    count: int
    posted_at: float
    first: str  # its firstTimestamp


class _Turn:
    """One aggregate's lock, and how many posters have it or wait for it."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


@dataclass(frozen=True)
class _Post:
    """A queued Event: its body (its times those of its queuing), and, for one of many alike, the key its
    repeats add up under."""

    body: dict[str, Any]
    key: Hashable | None = None
    count: int = 1


class EventRecorder:
    """The process's one poster of Events (as client-go's one `EventRecorder`, kopf's one posting queue): a
    bounded queue, `POSTERS` posts at once, each with a timeout, so that `post` and `count` never wait on the
    API server and a failed or dropped Event is a log line, never an error of the caller's. An Event `count`ed
    under a key is aggregated: the first creates it, later ones raise its count, written at most once per
    `min_interval` seconds (a scheduler retrying many times a second must not flood the API server), each
    aggregate by one poster at a time; one that expired (the API server's --event-ttl) is written again whole."""

    def __init__(
        self,
        core: client.CoreV1Api,
        component: str,
        logger: logging.Logger,
        instance: str | None = None,
        min_interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.core = core
        self.component = component  # by default: each post may name its own
        self.instance = instance
        self.logger = logger
        self.min_interval = min_interval
        self.clock = clock
        self.queue: asyncio.Queue[_Post] = asyncio.Queue(maxsize=QUEUE_LIMIT)
        self.aggregates: dict[Hashable, _Aggregate] = {}
        self.posting: dict[Hashable, _Turn] = {}  # by aggregate key, while posters have or wait for it

    def post(
        self,
        ref: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        related: ObjectRef | None = None,
        name: str | None = None,
        component: str | None = None,
    ) -> None:
        """Queues the Event. `name`: its own, for one that every replica tells alike (what they all see in the
        cluster): the first posted stands, the others' are answered 409 and dropped quietly."""
        self._queue(_Post(self._body(ref, event_type, reason, message, component, related=related, name=name)))

    def count(
        self,
        key: Hashable,
        ref: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        count: int = 1,
        component: str | None = None,
    ) -> None:
        """Queues `count` more of the Event aggregated under `key` (the repeats since the last)."""
        self._queue(_Post(self._body(ref, event_type, reason, message, component), key, count))

    def _body(
        self,
        ref: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        component: str | None,
        **fields: Any,
    ) -> dict[str, Any]:
        component = component or self.component
        now = datetime.now(UTC)
        return event_body(ref, event_type, reason, message, component, now, instance=self.instance, **fields)

    def _queue(self, post: _Post) -> None:
        try:
            self.queue.put_nowait(post)
        except asyncio.QueueFull:
            self.logger.warning("event queue full; Event not posted", extra=_about(post.body))

    async def run(self) -> None:
        """Posts queued Events for ever, `POSTERS` at once; no failure of one post ends it (a dead poster
        would leave the queue full and every later Event unposted)."""
        await asyncio.gather(*(self._post_queued() for _ in range(POSTERS)))

    async def _post_queued(self) -> None:
        while True:
            post = await self.queue.get()
            await self.posted(post)

    async def posted(self, post: _Post) -> None:
        """One queued Event posted, or its failure logged."""
        try:
            if post.key is None:
                await self._create(post.body, quietly_taken=True)
            else:
                await self._aggregated(post)
        except API_ERRORS as error:
            self.logger.warning("could not post an Event", extra={**_about(post.body), "problem": api_problem(error)})
        except Exception:
            self.logger.exception("could not post an Event", extra=_about(post.body))

    async def _create(self, body: dict[str, Any], quietly_taken: bool = False) -> None:
        try:
            await answer_of(
                self.core.create_namespaced_event(
                    body["metadata"]["namespace"], body, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
                )
            )
        except ApiException as error:
            if not quietly_taken or error.status != 409 or "name" not in body["metadata"]:
                raise
            # another replica posted the Event of this name already

    async def _aggregated(self, post: _Post) -> None:
        """One aggregate's post, held by this poster alone meanwhile (`posting`)."""
        assert post.key is not None
        turn = self.posting.get(post.key)
        if turn is None:
            turn = self.posting[post.key] = _Turn()
        turn.users += 1
        try:
            async with turn.lock:
                await self._post_aggregate(post.key, post)
        finally:
            turn.users -= 1
            if turn.users == 0:
                del self.posting[post.key]  # no other poster has it or waits for it

    async def _post_aggregate(self, key: Hashable, post: _Post) -> None:
        aggregate = self.aggregates.get(key)
        now = self.clock()
        body = post.body
        if aggregate is None:
            if len(self.aggregates) >= MAX_AGGREGATES:  # forget the least recently posted half
                keep = sorted(self.aggregates.items(), key=lambda item: item[1].posted_at)[MAX_AGGREGATES // 2 :]
                self.aggregates = dict(keep)
            name = f"{body['involvedObject'].get('name') or None}.ptol-{uuid.uuid4().hex[:10]}"
            first = body["firstTimestamp"]
            await self._create({**body, "metadata": {**body["metadata"], "name": name}, "count": post.count})
            self.aggregates[key] = _Aggregate(name, post.count, now, first)
            return
        aggregate.count += post.count
        if now - aggregate.posted_at < self.min_interval:
            return  # counted; written with the next post
        aggregate.posted_at = now
        patch = {"count": aggregate.count, "lastTimestamp": body["lastTimestamp"], "message": body["message"]}
        namespace = body["metadata"]["namespace"]
        try:
            await answer_of(
                self.core.patch_namespaced_event(
                    aggregate.name, namespace, patch, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
                )
            )
        except ApiException as error:
            if error.status != 404:
                raise
            # The Event expired (the API server's --event-ttl, 1 h by default): write it again, whole, with
            # the count and first time so far, as kubectl describe would have shown them.
            whole = {**body, "metadata": {**body["metadata"], "name": aggregate.name}}
            await self._create({**whole, **patch, "firstTimestamp": aggregate.first})


def _about(body: Mapping[str, Any]) -> dict[str, Any]:
    return {"reason": body["reason"], "object": body["involvedObject"].get("name")}
