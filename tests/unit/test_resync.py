"""The operator's one resync task: a reconcile per period, postponed by any other reconcile, never two at
once, and alive after any failure. On looptime's virtual clock: the periods are the real ones, and each
test asserts when every run happened, to the second."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.operator.caches import PolicyFeed
from preemption_toleration.operator.resync import (
    PENDING_RETRY_SECONDS,
    STANDBY_RECHECK_SECONDS,
    ResyncClock,
    Retry,
    reconcile_on_changes,
    resync_forever,
    standby_reason,
)
from tests.unit.virtual_clock import VIRTUAL_CLOCK, running_loop_is_current  # noqa: F401 - an autouse fixture

pytestmark = VIRTUAL_CLOCK

PERIOD = 60.0
logger = logging.getLogger("test-resync")


def now() -> float:
    return asyncio.get_running_loop().time()


class Reconciles:
    """The reconcile the resync asks for, and the outcomes it counts, each with when (seconds since
    `start`)."""

    def __init__(self, failures: list[BaseException] | None = None) -> None:
        self.start = now()
        self.failures = list(failures or [])
        self.times: list[float] = []
        self.counted: list[tuple[str, float]] = []

    @property
    def runs(self) -> int:
        return len(self.times)

    @property
    def outcomes(self) -> Counter[str]:
        return Counter(outcome for outcome, _ in self.counted)

    async def __call__(self) -> None:
        self.times.append(now() - self.start)
        if self.failures:
            raise self.failures.pop(0)

    def count(self, outcome: str) -> None:
        self.counted.append((outcome, now() - self.start))


@asynccontextmanager
async def running(loop: Coroutine[Any, Any, None], what: str) -> AsyncIterator[None]:
    """Runs `loop` as a task while the block runs, then cancels it: it must not have ended on its own."""
    task = asyncio.create_task(loop)
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled(), f"{what} ended on its own"


def resyncing(
    reconciles: Reconciles,
    clock: ResyncClock,
    pending: Callable[[], bool] = lambda: False,
    paused: Callable[[], str | None] | None = None,  # standalone: always the active replica
) -> AbstractAsyncContextManager[None]:
    resync = resync_forever(
        clock=clock,
        period=PERIOD,
        pending=pending,
        reconcile=reconciles,
        paused=paused,
        count=reconciles.count,
        logger=logger,
    )
    return running(resync, "the resync task")


async def test_one_reconcile_per_period_and_none_at_start() -> None:
    reconciles = Reconciles()
    async with resyncing(reconciles, ResyncClock()):
        await asyncio.sleep(PERIOD / 2)
        assert reconciles.runs == 0  # kopf's resume handlers reconcile at start
        await asyncio.sleep(PERIOD * 5)
    assert reconciles.times == pytest.approx([60, 120, 180, 240, 300])
    assert reconciles.outcomes == {"ran": 5}


async def test_a_reconcile_asked_by_another_trigger_counts_as_the_periods_resync() -> None:
    reconciles, clock = Reconciles(), ResyncClock()
    async with resyncing(reconciles, clock):
        for _ in range(12):  # events keep the operator reconciling more often than the period
            clock.started()
            await asyncio.sleep(PERIOD / 4)
        assert reconciles.runs == 0
        await asyncio.sleep(PERIOD)  # the last of them, 15 s ago, counts as the next period's start
    assert reconciles.times == pytest.approx([11 * PERIOD / 4 + PERIOD])


async def test_no_resync_is_asked_while_a_reconcile_waits_or_runs() -> None:
    reconciles, busy = Reconciles(), [True]
    async with resyncing(reconciles, ResyncClock(), pending=lambda: busy[0]):
        await asyncio.sleep(PERIOD * 3 + 0.5)
        assert reconciles.runs == 0
        busy[0] = False
        await asyncio.sleep(PERIOD / 2)
    # the task looks again each PENDING_RETRY_SECONDS once its period is due, and runs at the first look
    # that finds nothing pending; that run starts the next period
    assert reconciles.times == pytest.approx([PERIOD * 3 + PENDING_RETRY_SECONDS])


async def test_a_failed_resync_is_counted_and_the_next_period_runs_again(caplog: Any) -> None:
    unexpected = RuntimeError("a bug")
    reconciles = Reconciles([ApiException(status=503, reason="Service Unavailable"), unexpected])
    with caplog.at_level(logging.WARNING, logger="test-resync"):
        async with resyncing(reconciles, ResyncClock()):
            await asyncio.sleep(PERIOD * 3 + 1)
    assert reconciles.counted == [
        ("failed", pytest.approx(60)),
        ("failed", pytest.approx(120)),
        ("ran", pytest.approx(180)),
    ]
    assert [r.getMessage() for r in caplog.records] == ["resync failed", "resync failed"]
    assert caplog.records[1].exc_info is not None and caplog.records[1].exc_info[1] is unexpected


async def test_a_standby_looks_again_soon_and_resyncs_once_it_is_the_active_replica(caplog: Any) -> None:
    answers: list[str | None] = ["paused by a peer"] * 3

    def paused() -> str | None:
        return answers.pop(0) if answers else None

    reconciles = Reconciles()
    with caplog.at_level(logging.INFO, logger="test-resync"):
        async with resyncing(reconciles, ResyncClock(), paused=paused):
            await asyncio.sleep(PERIOD + 3 * STANDBY_RECHECK_SECONDS + 1)
    # a standby looks again every STANDBY_RECHECK_SECONDS, not once a period, and the look that finds this
    # replica active resyncs at once
    assert reconciles.counted == [
        ("standby", pytest.approx(60)),
        ("standby", pytest.approx(70)),
        ("standby", pytest.approx(80)),
        ("ran", pytest.approx(90)),
    ]
    assert [record.getMessage() for record in caplog.records] == ["resync paused", "resync resumed"]
    assert [getattr(record, "reason", None) for record in caplog.records] == ["paused by a peer", None]


async def test_a_peered_replica_stands_by_unless_its_stream_of_policies_is_live_past_a_listing() -> None:
    feed = PolicyFeed()
    reason = standby_reason(feed)
    assert reason() is not None and "paused" in str(reason())
    feed.stream_started()
    assert reason() is not None
    feed.listing_complete()
    assert reason() is None
    feed.stream_ended()
    assert reason() is not None


def reconciling_on_changes(
    reconciles: Reconciles, changes: asyncio.Event, paused: Callable[[], str | None] | None = None
) -> AbstractAsyncContextManager[None]:
    loop = reconcile_on_changes(changes=changes, reconcile=reconciles, paused=paused, logger=logger)
    return running(loop, "the task")


async def test_a_burst_of_changes_is_one_reconcile_and_a_failure_spares_the_next(caplog: Any) -> None:
    reconciles, changes = Reconciles([RuntimeError("a bug")]), asyncio.Event()
    with caplog.at_level(logging.WARNING, logger="test-resync"):
        async with reconciling_on_changes(reconciles, changes):
            for _ in range(100):
                changes.set()
            await asyncio.sleep(5)
            changes.set()
            await asyncio.sleep(5)
    assert reconciles.times == pytest.approx([0, 5])
    assert [record.getMessage() for record in caplog.records] == ["reconcile after a change failed"]


async def test_changes_seen_by_a_standby_are_left_to_the_active_replica() -> None:
    asked: list[float] = []

    def paused() -> str | None:
        asked.append(now())
        return "paused by a peer"

    reconciles, changes = Reconciles(), asyncio.Event()
    async with reconciling_on_changes(reconciles, changes, paused):
        changes.set()
        await asyncio.sleep(5)
    assert reconciles.runs == 0 and len(asked) == 1


async def test_a_failed_reconcile_asks_for_one_retry_however_many_fail_and_a_success_cancels_it() -> None:
    """A lasting failure costs one reconcile per delay, not a chain of retries per failed run."""
    start, asked = now(), []
    retry = Retry(10.0, lambda: asked.append(now() - start))
    retry.after(failed=True)
    await asyncio.sleep(4)
    retry.after(failed=True)  # another run failed meanwhile (a class event's): still one retry, at 10 s
    await asyncio.sleep(7)
    assert asked == [10.0] and not retry.pending
    retry.after(failed=True)
    await asyncio.sleep(5)
    retry.after(failed=False)  # a run succeeded: nothing left to retry
    await asyncio.sleep(20)
    assert asked == [10.0] and not retry.pending
