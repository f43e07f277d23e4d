"""Small helpers for integration tests."""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import yaml

T = TypeVar("T")


def unique_name(hint: str) -> str:
    """A DNS-1123 name derived from `hint` with a random suffix."""
    base = re.sub(r"[^a-z0-9-]+", "-", hint.lower()).strip("-")[:40].strip("-") or "t"
    return f"{base}-{uuid.uuid4().hex[:6]}"


async def eventually(
    probe: Callable[[], Awaitable[T]],
    check: Callable[[T], bool],
    *,
    timeout: float = 60.0,
    interval: float = 0.5,
    what: str = "condition",
) -> T:
    """Poll `probe()` until `check(result)` holds; fail with the last result after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = await probe()
        if check(result):
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not reached after {timeout:.0f} s; last: {result!r}")
        await asyncio.sleep(interval)


def denied(result: subprocess.CompletedProcess[str], webhook: str) -> str:
    """The message of `webhook` that kubectl printed when the webhook refused its request."""
    assert result.returncode != 0, result.stdout
    prefix = f'admission webhook "{webhook}" denied the request: '
    assert prefix in result.stderr, result.stderr
    return result.stderr.split(prefix, 1)[1]


def with_value(args: list[str], flag: str, value: str) -> list[str]:
    """`args` with the value after `flag` replaced (e.g. a port this machine has free)."""
    index = args.index(flag)
    return [*args[: index + 1], value, *args[index + 2 :]]


def by_kind_and_name(text: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The objects of a multi-document YAML text (what kustomize or helm renders), by kind and name."""
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(text) if d}
