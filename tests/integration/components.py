"""Our own components run as real processes against the session's control plane."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from preemption_toleration.devcluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "crds" / "preemptiontolerationpolicies.yaml"


def install_crd(cluster: LocalCluster) -> None:
    """Our CRD and kopf's peering CRD with the peering object the operator replicas share."""
    for manifest, crd in (
        (CRD_FILE, "preemptiontolerationpolicies.preemption-toleration.dev"),
        (ROOT / "config" / "crd" / "kopf-peering.yaml", "clusterkopfpeerings.kopf.dev"),
    ):
        subprocess.run(cluster.kubectl_argv("apply", "-f", str(manifest)), check=True, capture_output=True)
        subprocess.run(
            cluster.kubectl_argv("wait", "--for=condition=Established", "--timeout=60s", f"crd/{crd}"),
            check=True,
            capture_output=True,
        )
    peering = ROOT / "config" / "manager" / "kopf-peering.yaml"
    subprocess.run(cluster.kubectl_argv("apply", "-f", str(peering)), check=True, capture_output=True)


class OperatorProcess:
    """`ptol operator` in a subprocess, with its log in the cluster directory."""

    command = "operator"

    def __init__(
        self, cluster: LocalCluster, *extra_args: str, log_name: str = "operator.log", log_level: str = "INFO"
    ) -> None:
        self.cluster = cluster
        self.extra_args = extra_args
        self.log_level = log_level
        self.log_path = Path(cluster.logs_dir) / log_name
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> int:
        """Start it; returns where this run's lines begin in the (shared, appended) log."""
        log = open(self.log_path, "ab")
        log.write(f"--- {self.command} start {time.strftime('%H:%M:%S')}\n".encode())
        log.flush()
        start_of_this_run = log.tell()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "preemption_toleration", self.command,
             "--kubeconfig", str(self.cluster.kubeconfig), *self.extra_args],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "PTOL_LOG_LEVEL": self.log_level},
        )
        log.close()
        return start_of_this_run

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


class RunProcess(OperatorProcess):
    """`ptol run` (operator and webhooks in one process), registered with the API server by URL."""

    command = "run"

    def __init__(self, cluster: LocalCluster, *extra_args: str) -> None:
        super().__init__(cluster, *extra_args, log_name="ptol-run.log")

    def start(self) -> int:
        start_of_this_run = super().start()
        assert self.process is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if b"webhook configurations registered" in self.log_path.read_bytes()[start_of_this_run:]:
                return start_of_this_run
            if self.process.poll() is not None:
                break
            time.sleep(0.3)
        raise AssertionError(f"ptol run did not register its webhooks:\n{self.log()[-3000:]}")

    def stop(self) -> None:
        super().stop()
        for kind, name in (("validatingwebhookconfiguration", "preemption-toleration"),
                           ("validatingwebhookconfiguration", "preemption-toleration-guard"),
                           ("mutatingwebhookconfiguration", "preemption-toleration")):
            subprocess.run(self.cluster.kubectl_argv("delete", kind, name, "--ignore-not-found"),
                           capture_output=True, check=False)
