"""The hold of a repeated refusal (the guard's pacing of the scheduler's retry loop) ends early once steering
has made the preemption: the scheduler's next attempt then finds its preemptor nominated. On looptime's
virtual clock."""

from __future__ import annotations

import asyncio

from preemption_toleration.serving.handling import Hold
from tests.unit.virtual_clock import VIRTUAL_CLOCK, running_loop_is_current  # noqa: F401 - an autouse fixture

pytestmark = VIRTUAL_CLOCK


async def test_a_hold_without_release_lasts_its_seconds() -> None:
    assert await Hold(1.0).wait() == 1.0


async def test_a_hold_ends_when_steering_made_the_preemption() -> None:
    steered = asyncio.Event()
    asyncio.get_running_loop().call_later(0.25, steered.set)
    assert await Hold(1.0, steered).wait() == 0.25


async def test_a_release_that_never_comes_ends_with_the_hold() -> None:
    assert await Hold(1.0, asyncio.Event()).wait() == 1.0
