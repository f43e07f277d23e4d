"""A gate for the fakes of an API server's endpoint: calls wait while it is closed, and those in flight are
counted (how many a poster sends at once)."""

from __future__ import annotations

import asyncio


class Gate:
    def __init__(self, *, closed: bool = False) -> None:
        self._open = asyncio.Event()
        if not closed:
            self._open.set()
        self.in_flight = self.most_in_flight = 0

    def open(self) -> None:
        self._open.set()

    def close(self) -> None:
        self._open.clear()

    async def passing(self) -> None:
        """Waits while the gate is closed, counted in flight meanwhile."""
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self._open.wait()
        finally:
            self.in_flight -= 1
