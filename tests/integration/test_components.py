"""Our components started by the harness end with the process that started them, even one killed with
SIGKILL (a killed test run leaves no `ptol webhook` behind, retrying its watches)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from preemption_toleration.devcluster import LocalCluster

pytestmark = [pytest.mark.integration]

STARTER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from preemption_toleration.devcluster.components import ComponentProcess
    component = ComponentProcess("webhook", sys.argv[1], Path(sys.argv[2]), "--host", "127.0.0.1", "--port", "0")
    component.start()
    print(component.process.pid, flush=True)
    time.sleep(600)
""")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path(f"/proc/{pid}").exists() else "X"
    return state not in ("Z", "X")


def test_a_component_ends_with_its_starter_killed_by_sigkill(cluster: LocalCluster, tmp_path: Path) -> None:
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(cluster.kubeconfig), str(tmp_path / "webhook.log")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert starter.stdout is not None
    component = int(starter.stdout.readline())
    assert alive(component)
    starter.send_signal(signal.SIGKILL)
    starter.wait()
    deadline = time.monotonic() + 30  # SIGTERM, then its drain (5 s by default)
    while alive(component) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(component), "ptol webhook outlived the process that started it"
