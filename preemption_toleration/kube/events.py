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
from collections.abc import Mapping
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


class ObjectEvents:
    """Posts Events from a bounded queue, `POSTERS` at once: `post` never waits on the API server, and a
    failed or dropped Event is a log line, never an error of the caller's."""

    def __init__(
        self, core: client.CoreV1Api, component: str, logger: logging.Logger, instance: str | None = None
    ) -> None:
        self.core = core
        self.component = component
        self.instance = instance
        self.logger = logger
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=QUEUE_LIMIT)

    def post(
        self,
        ref: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        related: ObjectRef | None = None,
        name: str | None = None,
    ) -> None:
        """Queues the Event. `name`: its own, for one that every replica tells alike (what they all see in the
        cluster): the first posted stands, the others' are answered 409 and dropped quietly."""
        now = datetime.now(UTC)
        body = event_body(
            ref, event_type, reason, message, self.component, now, related=related, instance=self.instance, name=name
        )
        try:
            self.queue.put_nowait(body)
        except asyncio.QueueFull:
            self.logger.warning("event queue full; Event not posted", extra={"reason": reason, "object": ref.name})

    async def run(self) -> None:
        """Posts queued Events for ever, `POSTERS` at once; no failure of one post ends it."""
        await asyncio.gather(*(self._post_queued() for _ in range(POSTERS)))

    async def _post_queued(self) -> None:
        while True:
            body = await self.queue.get()
            try:
                await self._post(body)
            except API_ERRORS as error:
                self.logger.warning("could not post an Event", extra={**_about(body), "problem": api_problem(error)})
            except Exception:
                self.logger.exception("could not post an Event", extra=_about(body))

    async def _post(self, body: dict[str, Any]) -> None:
        try:
            await answer_of(
                self.core.create_namespaced_event(
                    body["metadata"]["namespace"], body, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
                )
            )
        except ApiException as error:
            if error.status != 409 or "name" not in body["metadata"]:
                raise
            # another replica posted the Event of this name already


def _about(body: Mapping[str, Any]) -> dict[str, Any]:
    return {"reason": body["reason"], "object": body["involvedObject"].get("name")}
