"""Coalescing of reconcile triggers: any number of requests made while a run waits or works are served by
one run that starts after the last of them.

A burst of 1,000 policy events thus costs a few global reconciles, not 1,000, and each caller still gets
the result of a run that saw its change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

R = TypeVar("R")


class Coalescer(Generic[R]):
    def __init__(self, work: Callable[[], Awaitable[R]], settle_seconds: float = 0.0) -> None:
        self.work = work
        # A pause before each run, so that the events of one `kubectl apply` of many objects share it.
        self.settle_seconds = settle_seconds
        self.runs = 0
        self._requested = 0
        self._done = 0
        self._outcome: R | BaseException | None = None
        self._finished = asyncio.Condition()
        self._runner: asyncio.Task[None] | None = None

    @property
    def pending(self) -> bool:
        return self._done < self._requested

    async def request(self) -> R:
        """Waits for a run that starts after this call; returns its result or raises its error."""
        self._requested += 1
        ticket = self._requested
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run(), name="reconcile")
        async with self._finished:
            await self._finished.wait_for(lambda: self._done >= ticket)
            outcome = self._outcome
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome  # type: ignore[return-value]

    async def _run(self) -> None:
        while self._done < self._requested:
            if self.settle_seconds:
                await asyncio.sleep(self.settle_seconds)
            target = self._requested  # requests made from now on need another run
            outcome: R | BaseException
            try:
                outcome = await self.work()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - handed to every waiter of this run
                outcome = error
            self.runs += 1
            async with self._finished:
                self._outcome, self._done = outcome, target
                self._finished.notify_all()

    async def close(self) -> None:
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
