"""Work the webhook server does again every so often, for as long as it runs (re-registering its webhook
configurations, renewing its certificate, sweeping steering's Leases)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


async def every(seconds: float, action: Callable[[], Awaitable[None]], failed: Callable[[Exception], None]) -> None:
    """Runs `action` every `seconds`, for ever, the first time after `seconds`. A failure is `failed`'s to
    report; the server keeps serving and the next round tries again."""
    while True:
        await asyncio.sleep(seconds)
        try:
            await action()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - keep serving, try again next round
            failed(error)
