"""The operator's triggers: the reconcile after changes (of the classes, which the operator's own watch follows,
and of the policies, which kopf's does: caches.py; and a failed reconcile's retry), and the resync, one task per
operator that asks for a reconcile once per period, the safety net that repairs drift nobody was told about.

A reconcile asked by any trigger counts as the period's resync, so a busy operator resyncs no more than
it already reconciles. kopf pauses the handlers of a standby replica but not these tasks, so under peering
they ask `paused` first and leave the work to the active replica: kopf stops the watch of policies it
shares with the operator while it pauses (policy_stream.py), so a replica whose stream is not live past a
complete listing stands by.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from preemption_toleration.kube.client import API_ERRORS
from preemption_toleration.operator.caches import PolicyFeed
from preemption_toleration.telemetry.declared import ResyncOutcome

PENDING_RETRY_SECONDS = 1.0  # a reconcile is already waiting or running: look again this soon
# A standby looks again this often (or once per period, if shorter): kopf resumes each object once per
# process, not again when a replica takes over, so the new active's first resync should not wait a period.
STANDBY_RECHECK_SECONDS = 10.0


def _now() -> float:
    """The running event loop's clock: monotonic, and virtual in the unit tests (looptime)."""
    return asyncio.get_running_loop().time()


def standby_reason(policies: PolicyFeed) -> Callable[[], str | None]:
    """Why a peered replica stands by now (None: it is the active one), read from its stream of policies."""

    def reason() -> str | None:
        if policies.listed.is_set():
            return None
        return "kopf has paused the watch of policies (a live peer of the same or a higher priority) or lists them"

    return reason


@dataclass
class ResyncClock:
    """When the last reconcile started (on the event loop's clock), whatever asked for it."""

    last: float = 0.0

    def started(self) -> None:
        self.last = _now()


class Retry:
    """At most one retry pending: after a reconcile that failed, `ask` is called `delay` seconds later, unless a
    reconcile succeeded meanwhile (`after(failed=False)` cancels it). However many reconciles fail meanwhile,
    one call comes, so a lasting failure costs a reconcile per `delay`, not one more chain of retries per failed
    run."""

    def __init__(self, delay: float, ask: Callable[[], None]) -> None:
        self.delay = delay
        self.ask = ask
        self._pending: asyncio.TimerHandle | None = None

    @property
    def pending(self) -> bool:
        return self._pending is not None

    def after(self, *, failed: bool) -> None:
        if not failed:
            self.cancel()
        elif self._pending is None:
            self._pending = asyncio.get_running_loop().call_later(self.delay, self._due)

    def cancel(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def _due(self) -> None:
        self._pending = None
        self.ask()


async def resync_forever(
    *,
    clock: ResyncClock,
    period: float,
    pending: Callable[[], bool],
    reconcile: Callable[[], Awaitable[Any]],
    paused: Callable[[], str | None] | None,
    count: Callable[[ResyncOutcome], None],
    logger: logging.Logger,
) -> None:
    """Runs until cancelled. `count` gets each period's outcome: ran, standby or failed. `paused`: None for a
    replica that runs alone, else why it stands by now (None: it is the active one)."""
    clock.last = max(clock.last, _now())  # the start reconciles everything (the policies' listing asks for it)
    was_active = True
    standby_until = 0.0  # a standby's next look
    while True:
        wait = max(clock.last + period, standby_until) - _now()
        if wait > 0:
            await asyncio.sleep(wait)
            continue
        if pending():
            await asyncio.sleep(PENDING_RETRY_SECONDS)
            continue
        try:
            if paused is not None:
                why_not = paused()
                active = why_not is None
                if active != was_active:
                    logger.info("resync " + ("resumed" if active else "paused"), extra={"reason": why_not})
                    was_active = active
                if not active:
                    standby_until = _now() + min(period, STANDBY_RECHECK_SECONDS)
                    count(ResyncOutcome.STANDBY)
                    continue
            asked = _now()
            await reconcile()  # sets the clock when it starts; a reconcile that never does still counts
            clock.last = max(clock.last, asked)
            count(ResyncOutcome.RAN)
        except asyncio.CancelledError:
            raise
        except API_ERRORS as error:
            clock.started()
            count(ResyncOutcome.FAILED)
            logger.warning("resync failed", extra={"error": f"{type(error).__name__}: {error}"})
        except Exception:
            clock.started()  # the loop must outlive any bug; it is counted and logged with its traceback
            count(ResyncOutcome.FAILED)
            logger.exception("resync failed")


async def reconcile_on_changes(
    *,
    changes: asyncio.Event,
    reconcile: Callable[[], Awaitable[Any]],
    paused: Callable[[], str | None] | None,
    logger: logging.Logger,
) -> None:
    """Runs until cancelled: one reconcile after each burst of changes (`changes` set once or many times),
    on the active replica only. A reconcile that raises is logged; the resync runs it again."""
    while True:
        await changes.wait()
        changes.clear()
        try:
            if paused is not None and paused() is not None:
                continue  # the active replica reconciles; the resync logs this replica's pause
            await reconcile()
        except asyncio.CancelledError:
            raise
        except API_ERRORS as error:
            logger.warning("reconcile after a change failed", extra={"error": f"{type(error).__name__}: {error}"})
        except Exception:
            logger.exception("reconcile after a change failed")  # the loop must outlive any bug
