"""Kubernetes Events on the victims of refused preemptions, aggregated per victim and reason; and for a
member of a PodGroup, one on its group too, aggregated per group (the group is refused as a whole).

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

from preemption_toleration.api.resources import ObjectRef, pod_ref
from preemption_toleration.core.groups import DisruptionMode
from preemption_toleration.guard.decisions import Refusal
from preemption_toleration.kube.client import API_ERRORS, answer_of
from preemption_toleration.kube.events import POSTERS, REQUEST_TIMEOUT, event_body
from preemption_toleration.records.pod_group import MemberRecord

logger = logging.getLogger("preemption_toleration.guard")
COMPONENT = "preemption-toleration-guard"
QUEUE_LIMIT = 10_000  # refusals waiting (the repeats of a victim are folded before: `guard.repeats`)
MAX_AGGREGATES = 10000


@dataclass
class _Aggregate:
    name: str
    count: int
    posted_at: float
    first: datetime


class _Turn:
    """One aggregate's lock, and how many posters have it or wait for it."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


@dataclass(frozen=True)
class Subject:
    """What a refusal's Event is about: its object, the Event's words, and the key its repeats add up under."""

    ref: ObjectRef
    message: str
    key: tuple[Any, ...]


def subjects(refusal: Refusal) -> list[Subject]:
    """The victim pod; for a member of a PodGroup, its group, whose Event stands for every member's refusal
    (the scheduler preempts the group's members together); and the preemptor's PodGroup, when it has one."""
    victim = refusal.victim
    found = [
        Subject(
            pod_ref(victim.namespace, victim.name, victim.uid),
            refusal.message,
            (victim.namespace, victim.name, victim.uid, refusal.audit, refusal.reason),
        )
    ]
    if isinstance(victim, MemberRecord):
        group = victim.group
        whole = group.disruption is DisruptionMode.ALL
        said = "for every member (disruptionMode all)" if whole else "for a member (disruptionMode single)"
        found.append(
            Subject(group.object_ref, f"preemption refused {said}: {refusal.message}", (group.uid, refusal.audit))
        )
    if (preemptors := refusal.preemptor_group) is not None:
        found.append(
            Subject(
                preemptors.object_ref,
                f"a member's preemption refused: {refusal.message}",
                (preemptors.uid, "preemptor", refusal.audit),
            )
        )
    return found


def refusal_event(
    name: str, refusal: Refusal, count: int, first: datetime, now: datetime, subject: Subject | None = None
) -> dict[str, Any]:
    """The Event on a refused preemption's victim (or on `subject`, another of its `subjects`), standing for
    `count` refusals since `first`."""
    about = subject or subjects(refusal)[0]
    reason = "PreemptionWouldBeRefused" if refusal.audit else "PreemptionRefused"
    return event_body(about.ref, "Warning", reason, about.message, COMPONENT, now, name=name, count=count, first=first)


class RefusalEvents:
    """Queued refusals, posted `POSTERS` at once (as the operator's Events are: `kube.events`), each Event's
    aggregate by one poster at a time, so that it is created once and then counted up."""

    def __init__(self, api: ApiClient, min_interval: float = 10.0) -> None:
        self.core = client.CoreV1Api(api)
        self.min_interval = min_interval
        self.queue: asyncio.Queue[tuple[Refusal, int]] = asyncio.Queue(maxsize=QUEUE_LIMIT)
        self.aggregates: dict[tuple[Any, ...], _Aggregate] = {}
        self.posting: dict[tuple[Any, ...], _Turn] = {}  # by aggregate key, while posters have or wait for it

    def record(self, refusal: Refusal, count: int = 1) -> None:
        """Queue `refusal`, which stands for `count` refusals of its victim (the repeats since the last)."""
        if refusal.dry_run:
            return
        try:
            self.queue.put_nowait((refusal, count))
        except asyncio.QueueFull:
            logger.warning("event queue full; refusal not posted as an Event")

    async def run(self) -> None:
        """Posts queued refusals for ever, `POSTERS` at once: no failure of one post ends it (a dead poster
        would leave the queue full and every later refusal without its Event)."""
        await asyncio.gather(*(self._post_queued() for _ in range(POSTERS)))

    async def _post_queued(self) -> None:
        while True:
            refusal, count = await self.queue.get()
            await self._post(refusal, count)

    async def _post(self, refusal: Refusal, count: int = 1) -> None:
        """Each of the refusal's Events, whatever became of the others (a victim's that failed does not keep
        its PodGroup's from being posted)."""
        for subject in subjects(refusal):
            try:
                await self._post_on(subject, refusal, count)
            except API_ERRORS as error:
                logger.warning(
                    "could not post the refusal Event", extra={"object": subject.ref.name, "problem": repr(error)}
                )
            except Exception:
                logger.exception("could not post the refusal Event", extra={"object": subject.ref.name})

    async def _post_on(self, subject: Subject, refusal: Refusal, count: int) -> None:
        """One Event's post, its aggregate held by this poster alone meanwhile (`posting`)."""
        turn = self.posting.get(subject.key)
        if turn is None:
            turn = self.posting[subject.key] = _Turn()
        turn.users += 1
        try:
            async with turn.lock:
                await self._post_aggregate(subject, refusal, count)
        finally:
            turn.users -= 1
            if turn.users == 0:
                del self.posting[subject.key]  # no other poster has it or waits for it

    async def _post_aggregate(self, subject: Subject, refusal: Refusal, count: int) -> None:
        key = subject.key
        aggregate = self.aggregates.get(key)
        now = time.monotonic()
        if aggregate is None:
            if len(self.aggregates) >= MAX_AGGREGATES:  # forget the least recently posted half
                keep = sorted(self.aggregates.items(), key=lambda item: item[1].posted_at)[MAX_AGGREGATES // 2 :]
                self.aggregates = dict(keep)
            name = f"{subject.ref.name or None}.ptol-{uuid.uuid4().hex[:10]}"
            first = datetime.now(UTC)
            body = refusal_event(name, refusal, count, first, first, subject)
            await answer_of(
                self.core.create_namespaced_event(
                    body["metadata"]["namespace"], body, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
                )
            )
            self.aggregates[key] = _Aggregate(name, count, now, first)
            return
        aggregate.count += count
        if now - aggregate.posted_at < self.min_interval:
            return  # counted; written with the next post
        aggregate.posted_at = now
        body = refusal_event(aggregate.name, refusal, aggregate.count, aggregate.first, datetime.now(UTC), subject)
        patch = {key: body[key] for key in ("count", "lastTimestamp", "message")}
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
            await answer_of(
                self.core.create_namespaced_event(
                    namespace, body, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
                )
            )
