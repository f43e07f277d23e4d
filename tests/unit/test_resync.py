"""The operator's one resync task: a reconcile per period, postponed by any other reconcile, never two at
once, and alive after any failure."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.kube.peering import Peering
from preemption_toleration.operator.resync import ResyncClock, resync_forever

PERIOD = 0.2
logger = logging.getLogger("test-resync")


class Reconciles:
    def __init__(self, failures: list[BaseException] | None = None) -> None:
        self.runs = 0
        self.failures = list(failures or [])
        self.outcomes: Counter[str] = Counter()

    async def __call__(self) -> None:
        self.runs += 1
        if self.failures:
            raise self.failures.pop(0)


@asynccontextmanager
async def resyncing(
    reconciles: Reconciles, clock: ResyncClock, pending: Callable[[], bool] = lambda: False
) -> AsyncIterator[None]:
    task = asyncio.create_task(
        resync_forever(
            clock=clock,
            period=PERIOD,
            pending=pending,
            reconcile=reconciles,
            api=None,
            peering=None,  # standalone: always the active replica
            count=lambda outcome: reconciles.outcomes.update([outcome]),
            logger=logger,
        )
    )
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled(), "the resync task ended on its own"


async def test_one_reconcile_per_period_and_none_at_start() -> None:
    reconciles = Reconciles()
    async with resyncing(reconciles, ResyncClock()):
        await asyncio.sleep(PERIOD / 2)
        assert reconciles.runs == 0  # kopf's resume handlers reconcile at start
        await asyncio.sleep(PERIOD * 5)
    assert 2 <= reconciles.runs <= 6
    assert reconciles.outcomes == {"ran": reconciles.runs}


async def test_a_reconcile_asked_by_another_trigger_counts_as_the_periods_resync() -> None:
    reconciles, clock = Reconciles(), ResyncClock()
    async with resyncing(reconciles, clock):
        for _ in range(12):  # events keep the operator reconciling more often than the period
            clock.started()
            await asyncio.sleep(PERIOD / 4)
    assert reconciles.runs == 0


async def test_no_resync_is_asked_while_a_reconcile_waits_or_runs() -> None:
    reconciles, busy = Reconciles(), [True]
    async with resyncing(reconciles, ResyncClock(), pending=lambda: busy[0]):
        await asyncio.sleep(PERIOD * 3)
        assert reconciles.runs == 0
        busy[0] = False
        await asyncio.sleep(1.5)  # the task looks again each second
    assert reconciles.runs >= 1


async def test_a_failed_resync_is_counted_and_the_next_period_runs_again(caplog: Any) -> None:
    unexpected = RuntimeError("a bug")
    reconciles = Reconciles([ApiException(status=503, reason="Service Unavailable"), unexpected])
    with caplog.at_level(logging.WARNING, logger="test-resync"):
        async with resyncing(reconciles, ResyncClock()):
            await asyncio.sleep(PERIOD * 5)
    assert reconciles.outcomes["failed"] == 2 and reconciles.outcomes["ran"] >= 1
    assert [r.getMessage() for r in caplog.records][:2] == ["resync failed", "resync failed"]
    assert caplog.records[1].exc_info is not None and caplog.records[1].exc_info[1] is unexpected


async def test_a_standby_looks_again_soon_and_resyncs_once_it_is_the_active_replica(
    caplog: Any, monkeypatch: Any
) -> None:
    answers = [(False, "peers of the same or a higher priority are live: b")] * 3

    async def peering_says(api: Any, peering: Peering) -> tuple[bool, str]:
        return answers.pop(0) if answers else (True, "")

    monkeypatch.setattr("preemption_toleration.operator.resync.is_active", peering_says)
    reconciles = Reconciles()
    task = asyncio.create_task(
        resync_forever(
            clock=ResyncClock(),
            period=PERIOD,
            pending=lambda: False,
            reconcile=reconciles,
            api=None,
            peering=Peering("preemption-toleration", "me", 100),
            count=lambda outcome: reconciles.outcomes.update([outcome]),
            logger=logger,
        )
    )
    with caplog.at_level(logging.INFO, logger="test-resync"):
        for _ in range(100):  # three looks as a standby, one period apart here (at most 10 s in general)
            if reconciles.outcomes["standby"] == 3:
                break
            await asyncio.sleep(PERIOD / 4)
        assert reconciles.outcomes == {"standby": 3} and reconciles.runs == 0
        for _ in range(100):  # the next look finds this replica active, and it resyncs at once
            if reconciles.runs:
                break
            await asyncio.sleep(PERIOD / 4)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert reconciles.runs >= 1 and reconciles.outcomes["standby"] == 3
    messages = [record.getMessage() for record in caplog.records]
    assert messages == ["resync paused", "resync resumed"]
