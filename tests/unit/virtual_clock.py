"""The operator's unit tests' virtual clock: looptime, on pytest-asyncio's session-scoped event loop.

looptime turns itself on for a test only if that loop is the event loop policy's current one; a test
elsewhere in the session that calls asyncio.run() leaves none current, and looptime then stays off without
a word (the waits become real ones). Modules that use it import this autouse fixture."""

from __future__ import annotations

import asyncio

import pytest


@pytest.fixture(autouse=True)
async def running_loop_is_current() -> None:
    asyncio.set_event_loop(asyncio.get_running_loop())
