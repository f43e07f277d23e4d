"""The build lock: a second `ptol dev cluster install` or `up` that must wait says so at once and names who
holds the lock (its pid and command, which the holder writes into the lock file), then when its turn comes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from preemption_toleration.devcluster.toolchain import command_line, describe_holder, exclusive_lock, holder_record

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("rule", "record", "now", "expected"),
    [
        (
            "pid, command and for how long",
            holder_record(4242, "ptol dev cluster install --kubernetes-version 1.36.3", 1000.0),
            1000.0 + 9 * 60 + 5,
            "pid 4242 (ptol dev cluster install --kubernetes-version 1.36.3) for 9 min",
        ),
        ("seconds under two minutes", holder_record(7, "pytest", 1000.0), 1030.4, "pid 7 (pytest) for 30 s"),
        ("an older ptol writes nothing", "", 0.0, "another process, which does not say which"),
        ("not a record", "garbage\n", 0.0, "another process, which does not say which"),
        ("a record without a field", '{"pid": 1}\n', 0.0, "another process, which does not say which"),
        ("JSON of another shape", "[1, 2]\n", 0.0, "another process, which does not say which"),
    ],
)
def test_describe_holder(rule: str, record: str, now: float, expected: str) -> None:
    assert describe_holder(record, now) == expected, rule


@pytest.mark.parametrize(
    ("rule", "argv", "expected"),
    [
        (
            "a console script by its name",
            ["/somewhere/.venv/bin/ptol", "dev", "cluster", "install", "--kubernetes-version", "1.36.3"],
            "ptol dev cluster install --kubernetes-version 1.36.3",
        ),
        ("python -m PACKAGE by the package", ["/x/site-packages/pytest/__main__.py", "-q", "tests"], "pytest -q tests"),
        ("python -c", ["-c", "/tmp/lock"], "python -c /tmp/lock"),
        ("arguments quoted as a shell would need", ["ptol", "demo", "--dir", "a b"], "ptol demo --dir 'a b'"),
    ],
)
def test_command_line(rule: str, argv: list[str], expected: str) -> None:
    assert command_line(argv) == expected, rule


HOLDER = """\
import sys
from pathlib import Path
from preemption_toleration.devcluster.toolchain import exclusive_lock
with exclusive_lock(Path(sys.argv[1]), print):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_process_that_must_wait_says_so_at_once_and_names_the_holder(tmp_path: Path) -> None:
    lock = tmp_path / ".lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "held\n"
        said: list[str] = []
        took = threading.Event()

        def wait_for_the_lock() -> None:
            with exclusive_lock(lock, said.append):
                took.set()
                said.append(lock.read_text())

        waiter = threading.Thread(target=wait_for_the_lock)
        waiter.start()
        deadline = time.monotonic() + 10
        while not said and time.monotonic() < deadline:
            time.sleep(0.05)
        # at once, naming the holder (the seconds it has held the lock depend on the machine's load)
        path = re.escape(str(lock))
        waiting = (
            rf"waiting for the build lock {path}, held by pid {holder.pid} \(python -c {path}\) for \d+ s; "
            "going on when it is released"
        )
        assert said and re.fullmatch(waiting, said[0]), said
        assert not took.is_set()
        holder.stdin.write("\n")
        holder.stdin.flush()
        waiter.join(timeout=10)
        assert took.is_set()
        assert re.fullmatch(r"took the build lock after waiting \d+ s", said[1]), said
        assert describe_holder(said[2], time.time()).startswith(f"pid {os.getpid()} ("), said  # the new holder
        assert lock.read_text() == ""  # released: it names no one
    finally:
        holder.kill()
        holder.wait()


def test_an_uncontended_lock_says_nothing_and_names_its_holder_while_held(tmp_path: Path) -> None:
    lock = tmp_path / ".lock"
    said: list[str] = []
    with exclusive_lock(lock, said.append):
        assert describe_holder(lock.read_text(), time.time()).startswith(f"pid {os.getpid()} (")
    assert said == [] and lock.read_text() == ""
