"""The operator's unit tests' virtual clock: looptime, each test on an event loop of its own.

A loop of its own: pytest-asyncio's session-scoped loop carries whatever earlier tests left running, which
can keep looptime from ever moving its clock. And made current first: looptime turns itself on only for the
event loop policy's current loop, and a test that calls asyncio.run() leaves none current, after which
looptime stays off without a word (the waits become real ones). Modules that use it set
`pytestmark = VIRTUAL_CLOCK` (or `ON_OWN_LOOP` and mark their tests `looptime`) and import the fixture."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio

ON_OWN_LOOP = pytest.mark.asyncio(loop_scope="function")
# a module's plain (not async) tests carry the mark too, and are left as they are: nothing to warn of
_PLAIN_TESTS_TOO = pytest.mark.filterwarnings("ignore:The test <Function .* is marked with '@pytest.mark.asyncio'")
VIRTUAL_CLOCK = [ON_OWN_LOOP, pytest.mark.looptime, _PLAIN_TESTS_TOO]


@pytest_asyncio.fixture(autouse=True, loop_scope="function")
async def running_loop_is_current() -> None:
    asyncio.set_event_loop(asyncio.get_running_loop())
