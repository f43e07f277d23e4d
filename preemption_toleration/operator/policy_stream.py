"""One watch of the policies for kopf's handlers and for the reconcile: kopf's own stream, shared.

kopf gives its handlers one object at a time and keeps the rest of its stream to itself: when a listing is
complete, what a new listing no longer shows, when it stops watching because a peer paused it. The
reconcile needs all three (caches.py). So kopf's `continuous_watch`, which lists a resource and then
watches it until the watch breaks or kopf pauses, is wrapped: for our policies, in the operator run that
`sharing` marks, each of its events goes to the `PolicyFeed` before kopf sees it. Every other resource
kopf watches (the peering object, CRDs) passes through untouched.

`continuous_watch` is not a public kopf API. `install` refuses, at the operator's start, a kopf whose
function does not have the shape this was written for, and `KOPF_SERIES` names the kopf releases it was
tested with (pyproject.toml pins kopf to them); tests/unit/test_policy_stream.py runs the wrapper, and every
operator integration test depends on it (no reconcile runs before the feed has a complete listing).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import AsyncGenerator, Callable, Iterator
from contextvars import ContextVar
from importlib.metadata import version
from typing import Any

from kopf._cogs.clients import watching

from preemption_toleration.api.policy import GROUP, PLURAL
from preemption_toleration.operator.caches import PolicyFeed

KOPF_SERIES = "1.45"  # the kopf releases whose continuous_watch this wraps
_PARAMETERS = ("settings", "resource", "namespace", "operator_pause_waiter")
Watch = Callable[..., Any]  # kopf's continuous_watch: an async generator
_FEED: ContextVar[PolicyFeed | None] = ContextVar("policy_feed", default=None)


class UnsupportedKopf(RuntimeError):
    pass


@contextlib.contextmanager
def sharing(feed: PolicyFeed) -> Iterator[None]:
    """Within the block (and in the tasks started in it, such as kopf's watchers): policies go to `feed`."""
    token = _FEED.set(feed)
    try:
        yield
    finally:
        _FEED.reset(token)


def install() -> None:
    """Wraps kopf's continuous_watch, once per process."""
    current: Watch = watching.continuous_watch
    if getattr(current, "shares_policies", False):
        return
    found = tuple(inspect.signature(current).parameters)
    listed = getattr(getattr(watching, "Bookmark", None), "LISTED", None)
    if found != _PARAMETERS or listed is None:
        raise UnsupportedKopf(
            f"kopf {version('kopf')} is not a release this operator supports (kopf {KOPF_SERIES}.x): "
            f"its watch of resources has changed ({', '.join(found)})"
        )
    setattr(watching, "continuous_watch", _shared(current, listed))  # noqa: B010 - a module attribute of kopf


def _shared(original: Watch, listed: object) -> Watch:
    @functools.wraps(original)
    async def continuous_watch(*, resource: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        feed = _FEED.get()
        stream = original(resource=resource, **kwargs)
        if feed is None or (resource.group, resource.plural) != (GROUP, PLURAL):
            async with contextlib.aclosing(stream):
                async for event in stream:
                    yield event
            return
        feed.stream_started()
        try:
            async with contextlib.aclosing(stream):
                async for event in stream:
                    if event is listed:
                        feed.listing_complete()
                    elif isinstance(event, dict):
                        feed.take(event)
                    yield event
        finally:
            feed.stream_ended()

    continuous_watch.shares_policies = True  # type: ignore[attr-defined]
    return continuous_watch
