"""Run a long-lived coroutine until SIGINT or SIGTERM, then let it finish its cleanup."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine
from typing import Any


def run_until_signalled(main: Callable[[asyncio.Event], Coroutine[Any, Any, None]]) -> int:
    async def runner() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await main(stop)

    asyncio.run(runner())
    return 0
