"""Coalescing of reconcile triggers: a burst of requests costs one run, and every caller gets the result of a
run that started after its request. On looptime's virtual clock: each run lasts RUN_SECONDS exactly."""

import asyncio

import pytest

from preemption_toleration.operator.coalescer import Coalescer
from tests.unit.virtual_clock import VIRTUAL_CLOCK, running_loop_is_current  # noqa: F401 - an autouse fixture

pytestmark = VIRTUAL_CLOCK

RUN_SECONDS = 1.0


def now() -> float:
    return asyncio.get_running_loop().time()


class Work:
    def __init__(self, fail_on=()):
        self.started_at = now()
        self.starts: list[tuple[int, float]] = []  # the state each run saw, and when it started
        self.state = 0
        self.fail_on = set(fail_on)

    async def __call__(self) -> int:
        seen = self.state
        self.starts.append((seen, now() - self.started_at))
        await asyncio.sleep(RUN_SECONDS)
        if len(self.starts) in self.fail_on:
            raise RuntimeError(f"run {len(self.starts)} failed")
        return seen


async def test_a_burst_of_requests_shares_one_run() -> None:
    work = Work()
    coalescer = Coalescer(work)

    async def change_and_request(i: int) -> int:
        work.state = i
        return await coalescer.request()

    results = await asyncio.gather(*(change_and_request(i) for i in range(1, 101)))
    assert coalescer.runs == 1 and work.starts == [(100, 0)]
    assert all(result == 100 for result in results)  # every caller saw a run that saw every change


async def test_a_request_during_a_run_gets_a_later_run() -> None:
    work = Work()
    coalescer = Coalescer(work)
    first = asyncio.create_task(coalescer.request())
    await asyncio.sleep(RUN_SECONDS / 2)  # the first run is under way, having seen state 0
    work.state = 1
    assert await coalescer.request() == 1
    assert await first == 0
    assert work.starts == [(0, 0), (1, pytest.approx(RUN_SECONDS))]  # the second starts when the first ends


async def test_settle_time_gathers_requests_made_just_after_the_first() -> None:
    work = Work()
    coalescer = Coalescer(work, settle_seconds=5)
    first = asyncio.create_task(coalescer.request())
    await asyncio.sleep(4)
    work.state = 1
    second = asyncio.create_task(coalescer.request())
    assert await asyncio.gather(first, second) == [1, 1]
    assert coalescer.runs == 1 and work.starts == [(1, pytest.approx(5))]


async def test_a_failed_run_raises_for_its_callers_and_the_next_run_goes_on() -> None:
    coalescer = Coalescer(Work(fail_on={1}))
    with pytest.raises(RuntimeError, match="run 1 failed"):
        await coalescer.request()
    assert await coalescer.request() == 0
    assert not coalescer.pending
