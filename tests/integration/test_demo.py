"""The README's first command ends with `ptol demo`: run it to the end, as a newcomer would, with --once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.components import ROOT

pytestmark = pytest.mark.integration

DEMO_SECONDS = 600  # its own control plane started, every story played and everything stopped


def test_demo_plays_the_stories_and_stops_everything(tmp_path: Path) -> None:
    directory = tmp_path / "demo"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "preemption_toleration",
            "demo",
            "--once",
            "--dir",
            str(directory),
            "--guarantee-seconds",
            "10",
        ],
        capture_output=True,
        text=True,
        timeout=DEMO_SECONDS,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert f"Applying the samples in {ROOT / 'config' / 'samples'} (7 PriorityClasses, 2 policies)" in out
    policies = out.split("PreemptionTolerationPolicies (kubectl get ptp):\n", 1)[1].split("\n\n")[0].splitlines()
    assert policies[0].split() == ["NAME", "TARGET", "MINIMUM", "TOLERATION", "READY", "REASON"]
    assert {line.split()[0]: line.split()[-2:] for line in policies[1:5]} == {
        "batch-non-preempted": ["True", "Applied"],  # the samples give every policy's class
        "guaranteed-10min": ["True", "Applied"],
        "low-non-preempted": ["True", "Applied"],
        "low-guaranteed": ["True", "Applied"],
    }
    assert (
        'denied the request: PriorityClass "demo-mistake": annotation '
        'preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority="10k" is not a base-10 integer' in out
    )
    assert "Restarting kube-scheduler with the extender at https://127.0.0.1:" in out
    assert "kept by the scheduler's extender: demo-node is no candidate for high-a, since train-a tolerates it" in out
    assert "high-c was nudged back into the scheduler's queue" in out
    summary = out.split("What happened:\n", 1)[1].splitlines()
    assert summary[0].split() == ["STORY", "VICTIM", "PREEMPTOR", "OUTCOME", "AFTER"]
    outcomes = [" ".join(line.split()[1:-2]) for line in summary[1:6]]
    assert outcomes == [
        "train-a (low-non-preempted) high-a (9000) not a victim",
        "train-a (low-non-preempted) critical-a (10000) preempted",
        "batch-b (low) high-b (9000) preempted",
        "train-c (low-guaranteed) high-c (9000) preempted after 10 s",
        "batch-d + train-d high-d (9000) nothing deleted",
    ]
    # --once stopped every process it started (their command lines name the demo's directory)
    assert [cmdline for cmdline in _command_lines() if str(directory) in cmdline] == []


def _command_lines() -> list[str]:
    lines = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                pass  # the process ended meanwhile
    return lines
