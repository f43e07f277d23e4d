"""Keeping kopf running: new runs after failures, with backoffs and a limit, and runs in a loop of their own."""

import asyncio
import threading

import pytest

from preemption_toleration.operator.supervision import keep_running, run_in_own_loop


class Runs:
    """A run_once whose runs fail with the given errors in turn, then end (None: stopped), each lasting
    `lasting` seconds on a fake clock."""

    def __init__(self, outcomes: list[Exception | None], lasting: float = 0.0) -> None:
        self.outcomes = list(outcomes)
        self.lasting = lasting
        self.now = 0.0
        self.count = 0
        self.restarts: list[tuple[str, float]] = []

    async def __call__(self) -> None:
        self.count += 1
        self.now += self.lasting
        outcome = self.outcomes.pop(0)
        if outcome is not None:
            raise outcome

    def restarting(self, error: Exception, delay: float) -> None:
        self.restarts.append((str(error), delay))


BACKOFFS = (0.001, 0.002)
RULES = [
    # (rule, outcomes, seconds each run lasts, runs, restarts told, raises)
    ("a run that ends (stopped) is not run again", [None], 0, 1, [], None),
    (
        "a failed run is run again after each backoff in turn",
        [RuntimeError("404"), RuntimeError("404 again"), None],
        0,
        3,
        [("404", 0.001), ("404 again", 0.002)],
        None,
    ),
    (
        "one more failure in a row than there are backoffs is raised",
        [RuntimeError("a"), RuntimeError("b"), RuntimeError("c")],
        0,
        3,
        [("a", 0.001), ("b", 0.002)],
        "c",
    ),
    (
        "a failure after a healthy run starts the backoffs from the first again",
        [RuntimeError("a"), RuntimeError("b"), RuntimeError("c"), None],
        10,
        4,
        [("a", 0.001), ("b", 0.001), ("c", 0.001)],
        None,
    ),
]


@pytest.mark.parametrize(
    ("outcomes", "lasting", "runs", "restarts", "raises"),
    [rule[1:] for rule in RULES],
    ids=[rule[0] for rule in RULES],
)
async def test_keep_running(
    outcomes: list[Exception | None], lasting: float, runs: int, restarts: list[tuple[str, float]], raises: str | None
) -> None:
    run_once = Runs(outcomes, lasting)
    supervised = keep_running(
        run_once,
        asyncio.Event(),
        restarting=run_once.restarting,
        backoffs=BACKOFFS,
        healthy_after=5,
        clock=lambda: run_once.now,
    )
    if raises is None:
        await supervised
    else:
        with pytest.raises(RuntimeError, match=raises):
            await supervised
    assert (run_once.count, run_once.restarts) == (runs, restarts)


async def test_a_stop_during_a_backoff_ends_it_without_another_run() -> None:
    run_once = Runs([RuntimeError("404"), None])
    stop = asyncio.Event()
    supervised = asyncio.create_task(keep_running(run_once, stop, restarting=run_once.restarting, backoffs=(60,)))
    await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(supervised, timeout=5)
    assert run_once.count == 1


async def test_a_failure_while_stopping_is_raised_not_run_again() -> None:
    stop = asyncio.Event()

    async def fails_at_stop() -> None:
        stop.set()
        raise RuntimeError("failed while stopping")

    with pytest.raises(RuntimeError, match="while stopping"):
        await keep_running(fails_at_stop, stop, restarting=lambda error, delay: None, backoffs=(0.001,))


async def test_own_loop_runs_in_another_thread_and_stops_when_asked() -> None:
    seen: dict[str, object] = {}

    async def main(own_stop: asyncio.Event) -> None:
        seen["thread"] = threading.current_thread().name
        seen["loop"] = asyncio.get_running_loop()
        await own_stop.wait()

    stop = asyncio.Event()
    running = asyncio.create_task(run_in_own_loop(main, stop, "operator"))
    await asyncio.sleep(0.05)
    assert not running.done()
    stop.set()
    await asyncio.wait_for(running, timeout=5)
    assert str(seen["thread"]).startswith("operator") and seen["loop"] is not asyncio.get_running_loop()


async def test_own_loop_cancelling_all_its_tasks_leaves_the_callers_alone() -> None:
    """What a stopped kopf does: cancel every task of its loop that it did not start with."""
    neighbour = asyncio.create_task(asyncio.sleep(30))

    async def main(own_stop: asyncio.Event) -> None:
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()
        raise RuntimeError("watch failed")

    with pytest.raises(RuntimeError, match="watch failed"):
        await run_in_own_loop(main, asyncio.Event(), "operator")
    assert not neighbour.cancelled() and not neighbour.done()
    neighbour.cancel()


async def test_own_loop_a_stop_asked_before_the_loop_started_is_not_lost() -> None:
    stop = asyncio.Event()
    stop.set()

    async def main(own_stop: asyncio.Event) -> None:
        await asyncio.wait_for(own_stop.wait(), timeout=5)

    await asyncio.wait_for(run_in_own_loop(main, stop, "operator"), timeout=10)


async def test_own_loop_cancelled_caller_waits_for_the_loop_to_close() -> None:
    closed = threading.Event()

    async def main(own_stop: asyncio.Event) -> None:
        try:
            await own_stop.wait()
            await asyncio.sleep(0.1)  # a cleanup that takes a while
        finally:
            closed.set()

    running = asyncio.create_task(run_in_own_loop(main, asyncio.Event(), "operator"))
    await asyncio.sleep(0.05)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert closed.is_set()
