"""The wait before kopf starts again: until the watched resources are served, a stop, or the time limit."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.operator.served import wait_until
from tests.unit.virtual_clock import ON_OWN_LOOP, running_loop_is_current  # noqa: F401 - an autouse fixture

pytestmark = ON_OWN_LOOP


def answers(*results: bool | Exception) -> Callable[[], Awaitable[bool]]:
    """A condition that gives these results in turn (an exception is raised), then keeps the last."""
    queue = list(results)

    async def condition() -> bool:
        result = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(result, Exception):
            raise result
        return result

    return condition


POLL = 0.5


@pytest.mark.looptime
@pytest.mark.parametrize(
    ("rule", "condition", "timeout", "expected", "seconds"),
    [
        ("served at once", answers(True), 10.0, True, 0),
        ("served after a few polls", answers(False, False, True), 10.0, True, 2 * POLL),
        ("an API error counts as not served yet", answers(ApiException(status=503), True), 10.0, True, POLL),
        ("never served: gives up at the time limit", answers(False), 3.0, False, 3.0),
        ("a zero time limit asks once", answers(False, True), 0.0, False, 0),
    ],
)
async def test_wait_until(
    rule: str, condition: Callable[[], Awaitable[bool]], timeout: float, expected: bool, seconds: float
) -> None:
    """On looptime's virtual clock: the answer, and how long it took to come, with the real poll."""
    started = asyncio.get_running_loop().time()
    result = await wait_until(condition, asyncio.Event(), timeout=timeout, poll=POLL)
    assert (result, asyncio.get_running_loop().time() - started) == (expected, pytest.approx(seconds)), rule


@pytest.mark.looptime
async def test_a_stop_ends_the_wait_at_once() -> None:
    stop = asyncio.Event()
    stop.set()
    assert await wait_until(answers(True), stop, timeout=10.0, poll=POLL) is False
