"""Small helpers for integration tests."""

from __future__ import annotations

import asyncio
import functools
import re
import subprocess
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import yaml

from preemption_toleration import pki

T = TypeVar("T")

# How long a test waits, by what it waits for. Each is a bound, not a pause: a wait ends when its condition
# holds, and these only say when to give up on a machine shared with other work.
ANSWER_SECONDS = 10  # one request to a server that is up, a dry run answered with a warning
REACTION_SECONDS = 30  # a running component acting on a change: annotations written, an Event, a refusal
START_SECONDS = 60  # a process started and registered, a command run, a state reached after a restart
SCHEDULING_SECONDS = 90  # the scheduler binding or preempting a pod, through its backoffs
# a helm run, an image's process, a pod created while the control plane restarts, a burst of 50 policies worked
# through after a fault
SLOW_SECONDS = 180


def unique_name(hint: str) -> str:
    """A DNS-1123 name derived from `hint` with a random suffix."""
    base = re.sub(r"[^a-z0-9-]+", "-", hint.lower()).strip("-")[:40].strip("-") or "t"
    return f"{base}-{uuid.uuid4().hex[:6]}"


async def eventually(
    probe: Callable[[], Awaitable[T]],
    check: Callable[[T], bool],
    *,
    timeout: float = START_SECONDS,
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


async def past_the_second_of(timestamp: str) -> None:
    """Returns once the clock has passed the second of an API `timestamp`, such as a creationTimestamp: those
    have whole seconds, so an object created after this is younger by its timestamp too, not only by its name."""
    next_second = datetime.fromisoformat(timestamp).astimezone(UTC) + timedelta(seconds=1)
    await asyncio.sleep(max(0.0, (next_second - datetime.now(UTC)).total_seconds()))


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


@functools.cache
def _tls_files() -> dict[str, str]:
    """A CA and a serving pair in files, standing for those the pod mounts (ptol reads them as it parses)."""
    directory = Path(tempfile.mkdtemp(prefix="ptol-chart-tls-"))
    ca = pki.generate_ca("test-ca")
    serving = pki.issue_serving_cert(ca, "webhook", dns_names=["webhook"])
    files = {"--ca-file": ca.cert_pem, "--cert-file": serving.cert_pem, "--key-file": serving.key_pem}
    for flag, pem in files.items():
        (directory / flag.strip("-")).write_bytes(pem)
    return {flag: str(directory / flag.strip("-")) for flag in files}


def with_local_tls_files(args: list[str]) -> list[str]:
    """`args` with the certificate files the pod mounts replaced by local ones of the same kind."""
    for flag, path in _tls_files().items():
        if flag in args:
            args = with_value(args, flag, path)
    return args
