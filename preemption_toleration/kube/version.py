"""The API server's minor release, which decides how the scheduler it runs with counts some requests."""

from __future__ import annotations

import re

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

_LEADING_DIGITS = re.compile(r"\d+")


def minor_of(text: object) -> int | None:
    """`37` of "37" and of "37+" (managed control planes append a sign); None when there are no digits."""
    found = _LEADING_DIGITS.match(text) if isinstance(text, str) else None
    return int(found.group()) if found else None


async def server_minor(api: ApiClient) -> int | None:
    """The API server's minor release (GET /version); None when it cannot be read."""
    try:
        info = await client.VersionApi(api).get_code()
    except (ApiException, OSError, TimeoutError):
        return None
    return minor_of(info.minor)
