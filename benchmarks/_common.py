"""Helpers shared by the benchmarks: a description of the machine, timing a call, and saving results as JSON.

Every benchmark saves its figures to benchmarks/results/<name>.json with `save_results`, which adds the
machine description: figures from different machines or days are then never compared by mistake.

Importing it also puts the repository root on the path of a benchmark run as a script (`python
benchmarks/X.py`), for the builders of the objects it creates, which it shares with the tests
(`tests/builders.py`): import it before them.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
REPOSITORY_ROOT = Path(__file__).resolve().parents[1]
if str(REPOSITORY_ROOT) not in sys.path:
    sys.path.append(str(REPOSITORY_ROOT))


def _memory_total_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def machine_info() -> dict[str, Any]:
    """Platform, CPU count, memory, Python version and the date (UTC) of the run."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": _memory_total_bytes(),
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def code_revision(checkout: str) -> str:
    """The commit a checkout of the project is at, for the results of a run against it (`--code`)."""
    found = subprocess.run(
        ["git", "-C", checkout, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return found.stdout.strip() if found.returncode == 0 else f"{checkout} (not a git checkout)"


def save_results(name: str, payload: Mapping[str, Any]) -> Path:
    """Write `payload` with the machine description to results/<name>.json; returns the file."""
    path = RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"benchmark": name, "machine": machine_info(), **payload}, indent=2) + "\n")
    return path


def shown(path: Path) -> str:
    """`path` relative to the working directory when it is below it (for "saved to ..." lines)."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def timed(
    action: Callable[[], object], repeat: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[float, float]:
    """Runs `action` `repeat` times: (median, p99) of its duration by `clock`, in milliseconds."""
    samples = []
    for _ in range(repeat):
        started = clock()
        action()
        samples.append(clock() - started)
    samples.sort()
    return statistics.median(samples) * 1e3, samples[min(int(len(samples) * 0.99), len(samples) - 1)] * 1e3
