"""Keeping kopf running: new runs after failures, with backoffs and a limit, and runs in a loop of their own.

The backoff tests run on looptime's virtual clock with the real backoffs, and assert when each run started.
The own-loop tests run on the real clock: a thread's progress is no timer looptime could skip to."""

import asyncio
import threading

import pytest

from preemption_toleration.operator.supervision import HEALTHY_RUN_SECONDS, keep_running, run_in_own_loop
from tests.unit.virtual_clock import ON_OWN_LOOP, running_loop_is_current  # noqa: F401 - an autouse fixture

pytestmark = ON_OWN_LOOP

Outcome = Exception | str | None  # raised; "stop": the stop is set and the run ends; None: it just ends


def now() -> float:
    return asyncio.get_running_loop().time()


class Runs:
    """A run_once whose runs have the given outcomes in turn, each lasting `lasting` seconds."""

    def __init__(self, outcomes: list[Outcome], lasting: float = 0.0) -> None:
        self.outcomes = list(outcomes)
        self.lasting = lasting
        self.start = now()
        self.starts: list[float] = []  # when each run started, in seconds since this object was made
        self.restarts: list[tuple[str, float]] = []
        self.stop = asyncio.Event()

    @property
    def count(self) -> int:
        return len(self.starts)

    async def __call__(self) -> None:
        self.starts.append(now() - self.start)
        await asyncio.sleep(self.lasting)
        outcome = self.outcomes.pop(0)
        if outcome == "stop":
            self.stop.set()
        elif isinstance(outcome, Exception):
            raise outcome

    def restarting(self, error: Exception, delay: float) -> None:
        self.restarts.append((str(error), delay))


BACKOFFS = (1.0, 2.0)
HEALTHY = HEALTHY_RUN_SECONDS
UNASKED = "kopf stopped without an error and without being asked to"
RULES = [
    # (rule, outcomes, seconds each run lasts, when each run starts, restarts told, raises)
    (
        "a run that ends unasked failed too",
        [None, None, None],
        0,
        [0, 1, 3],
        [(UNASKED, 1.0), (UNASKED, 2.0)],
        "without being asked",
    ),
    (
        "a failed run is run again after each backoff in turn, until a stop",
        [RuntimeError("404"), RuntimeError("404 again"), "stop"],
        0,
        [0, 1, 3],
        [("404", 1.0), ("404 again", 2.0)],
        None,
    ),
    (
        "one more failure in a row than there are backoffs is raised",
        [RuntimeError("a"), RuntimeError("b"), RuntimeError("c")],
        10,
        [0, 11, 23],
        [("a", 1.0), ("b", 2.0)],
        "c",
    ),
    (
        "a failure after a healthy run starts the backoffs from the first again",
        [RuntimeError("a"), RuntimeError("b"), RuntimeError("c"), "stop"],
        HEALTHY,
        [0, HEALTHY + 1, 2 * (HEALTHY + 1), 3 * (HEALTHY + 1)],
        [("a", 1.0), ("b", 1.0), ("c", 1.0)],
        None,
    ),
]


@pytest.mark.looptime
@pytest.mark.parametrize(
    ("outcomes", "lasting", "starts", "restarts", "raises"),
    [rule[1:] for rule in RULES],
    ids=[rule[0] for rule in RULES],
)
async def test_keep_running(
    outcomes: list[Outcome], lasting: float, starts: list[float], restarts: list[tuple[str, float]], raises: str | None
) -> None:
    run_once = Runs(outcomes, lasting)
    supervised = keep_running(run_once, run_once.stop, restarting=run_once.restarting, backoffs=BACKOFFS)
    if raises is None:
        await supervised
    else:
        with pytest.raises(RuntimeError, match=raises):
            await supervised
    assert (run_once.starts, run_once.restarts) == (pytest.approx(starts), restarts)


@pytest.mark.looptime
async def test_a_stop_during_a_backoff_ends_it_without_another_run() -> None:
    run_once = Runs([RuntimeError("404"), None])
    stop = asyncio.Event()
    supervised = asyncio.create_task(keep_running(run_once, stop, restarting=run_once.restarting, backoffs=(60,)))
    await asyncio.sleep(30)
    stop.set()
    await supervised
    assert run_once.count == 1 and now() - run_once.start == pytest.approx(30)


@pytest.mark.looptime
async def test_a_failure_while_stopping_is_logged_not_raised_nor_run_again(caplog: pytest.LogCaptureFixture) -> None:
    """kopf reports a failure seconds after it happened: a SIGTERM in between is still a clean stop."""
    stop = asyncio.Event()
    runs = []

    async def fails_at_stop() -> None:
        runs.append(1)
        stop.set()
        raise RuntimeError("404 just before the stop")

    await keep_running(fails_at_stop, stop, restarting=lambda error, delay: None)
    assert runs == [1]
    assert "operator failed while stopping" in caplog.text


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
