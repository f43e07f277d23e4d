"""Background processes that can be found again and stopped from another shell.

Each process runs in its own session (so its own process group): stopping it signals the whole group,
so nothing it forked is left behind, and a Ctrl-C in the terminal that started it does not reach it.
A record keeps the pid and the kernel's start time of the process, so a reused pid is never signalled.
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class ProcessRecord:
    name: str
    pid: int
    start_time: int  # field 22 of /proc/PID/stat: identifies this process among pid reuses
    argv: list[str]
    log: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcessRecord:
        return cls(**data)


def spawn(
    name: str,
    argv: Sequence[str],
    log: Path,
    *,
    env: Mapping[str, str] | None = None,
    die_with_parent: bool = False,
) -> tuple[ProcessRecord, subprocess.Popen[bytes]]:
    """Start `argv` in a new session with stdout and stderr appended to `log`.

    With `die_with_parent`, the kernel sends SIGTERM to the process when the thread that started it exits
    (e.g. a test run killed with SIGKILL), so call it from the main thread.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=None if env is None else dict(env),
            start_new_session=True,
            preexec_fn=end_with_starting_thread if die_with_parent else None,
        )
    record = ProcessRecord(name, proc.pid, _start_time(proc.pid) or 0, list(argv), str(log))
    return record, proc


def is_running(record: ProcessRecord) -> bool:
    start = _start_time(record.pid)
    return start is not None and start == record.start_time and not _is_zombie(record.pid)


def terminate(record: ProcessRecord, *, timeout: float = 10.0, popen: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM the process group, then SIGKILL it after `timeout` seconds."""
    if not is_running(record):
        _reap(popen)
        return
    _signal_group(record.pid, signal.SIGTERM)
    if not _wait_gone(record, timeout, popen):
        _signal_group(record.pid, signal.SIGKILL)
        _wait_gone(record, 5.0, popen)
    # Stragglers of the group (the leader is gone): kill whatever is left.
    _signal_group(record.pid, signal.SIGKILL)
    if popen is not None:  # our own child: collect it rather than leave a zombie
        try:
            popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


# Ports handed out below the kernel's range for outgoing connections (Linux's default starts at 32768), from here
LOWEST_PORT = 10000
PORT_TRIES = 200


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago, for a process started next to listen on."""
    return free_ports(1, host)


def free_ports(count: int, host: str = "127.0.0.1") -> int:
    """The first of `count` consecutive TCP ports that were free a moment ago, for processes started next to
    listen on. Taken below the kernel's range for outgoing connections, so that none made meanwhile takes one
    (a port the kernel chose from that range, as binding port 0 does, may be any connection's a moment later)."""
    top = _outgoing_ports_start() - count
    for _ in range(PORT_TRIES):
        first = random.randrange(LOWEST_PORT, top)
        if all(_bindable(host, port) for port in range(first, first + count)):
            return first
    raise OSError(f"no {count} free consecutive ports between {LOWEST_PORT} and {top + count}")


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _outgoing_ports_start() -> int:
    """The first port of the kernel's range for outgoing connections (32768 where it cannot be read)."""
    try:
        first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768
    return max(first, LOWEST_PORT + 1000)


def log_tail(path: str | Path, lines: int = 20) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def wait_until(condition: Callable[[], bool], *, timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def end_with_starting_thread() -> None:
    """In a child, before exec: SIGTERM when the thread that started it ends (PR_SET_PDEATHSIG)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_gone(record: ProcessRecord, timeout: float, popen: subprocess.Popen[bytes] | None) -> bool:
    def gone() -> bool:
        _reap(popen)
        return not is_running(record)

    return wait_until(gone, timeout=timeout, interval=0.05)


def _reap(popen: subprocess.Popen[bytes] | None) -> None:
    if popen is not None:
        popen.poll()


def _proc_stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain spaces.
    return raw[raw.rindex(")") + 2 :].split()


def _start_time(pid: int) -> int | None:
    fields = _proc_stat(pid)
    return int(fields[19]) if fields else None


def _is_zombie(pid: int) -> bool:
    fields = _proc_stat(pid)
    return fields is not None and fields[0] == "Z"
