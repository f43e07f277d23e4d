"""Keeping kopf running: each run in an event loop of its own, and a new run after a failed one.

kopf stops the whole operator when one of its watches fails with an error it does not retry. The one seen
here: right after an API server restarts, it answers "404 page not found" for a custom resource until it
serves the CRD again, and a watch of our policies that reconnects in that window ends kopf. A new run a
second later finds the resource served again.

A stopped kopf cancels every task of its event loop that it did not find at its start. In `ptol run` that
would include the webhook server's, so each run gets a thread and an event loop of its own, closed with it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

logger = logging.getLogger("preemption_toleration.operator")

# Seconds before each new run after a failed one. One more failure in a row than there are backoffs ends
# the process (a Deployment restarts it, and its restart count shows the problem).
RESTART_BACKOFFS: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0, 30.0)
# A run that lasted this long was healthy: a failure after it starts the backoffs from the first again.
HEALTHY_RUN_SECONDS = 120.0


async def keep_running(
    run_once: Callable[[], Awaitable[None]],
    stop: asyncio.Event,
    *,
    restarting: Callable[[Exception, float], None],
    backoffs: Sequence[float] = RESTART_BACKOFFS,
    healthy_after: float = HEALTHY_RUN_SECONDS,
) -> None:
    """Awaits `run_once()` again after each failure until `stop` is set. A run that ends without being
    stopped failed too, error or not (kopf also returns when one of its tasks ends without an error).
    `restarting(error, delay)` is told before each wait. One more failure in a row than `backoffs` has
    entries (runs shorter than `healthy_after`) is raised. A failure once `stop` is set is only logged:
    the stop was asked for, and kopf may take seconds to report a failure that came just before it."""
    clock = asyncio.get_running_loop().time
    failures = 0
    while True:
        started = clock()
        try:
            await run_once()
            if stop.is_set():
                return
            raise StoppedUnasked("kopf stopped without an error and without being asked to")
        except Exception as error:
            if stop.is_set():
                logger.warning("operator failed while stopping", extra={"error": f"{type(error).__name__}: {error}"})
                return
            if clock() - started >= healthy_after:
                failures = 0
            if failures >= len(backoffs):
                raise
            delay = backoffs[failures]
            failures += 1
            restarting(error, delay)
        try:
            await asyncio.wait_for(stop.wait(), timeout=delay)
            return
        except TimeoutError:
            pass


class StoppedUnasked(RuntimeError):
    pass


class _StopAcrossThreads:
    """A stop asked from one thread and awaited in another thread's event loop, whichever comes first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asked = False
        self._waiter: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    def bind(self) -> asyncio.Event:
        """In the loop that awaits it: the event the stop sets."""
        event = asyncio.Event()
        with self._lock:
            self._waiter = (asyncio.get_running_loop(), event)
            if self._asked:
                event.set()
        return event

    def ask(self) -> None:
        with self._lock:
            self._asked = True
            if self._waiter is not None:
                loop, event = self._waiter
                # the loop may close between a check and the call: its end is a stop too
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(event.set)


async def run_in_own_loop(main: Callable[[asyncio.Event], Awaitable[None]], stop: asyncio.Event, name: str) -> None:
    """Runs `main(own_stop)` to its end in a new thread (named `name`) with a new event loop, and sets
    `own_stop` there once `stop` is set here (or this call is cancelled). Returns or raises as `main` does.
    Whatever `main` leaves in its loop, or cancels there, never touches the caller's tasks."""
    stop_across = _StopAcrossThreads()

    async def own() -> None:
        await main(stop_across.bind())

    executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
    finished = asyncio.get_running_loop().run_in_executor(executor, asyncio.run, own())
    stopping = asyncio.create_task(stop.wait())
    either: set[asyncio.Future[Any]] = {finished, stopping}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        if not finished.done():
            stop_across.ask()
            # also when cancelled: the thread's loop closes before this returns
            await asyncio.wait({finished})
        executor.shutdown(wait=False)
    return finished.result()
