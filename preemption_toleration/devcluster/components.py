"""Our own long-running commands (`ptol operator`, `ptol run`) as child processes, for the demo and the tests:
started with their output appended to a log, waited for by a line of that log, stopped with SIGINT."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from preemption_toleration.devcluster.processes import end_with_starting_thread


class ComponentError(RuntimeError):
    pass


class ComponentProcess:
    def __init__(
        self,
        command: str,
        kubeconfig: str | Path,
        log_path: Path,
        *extra_args: str,
        log_level: str = "INFO",
        launcher: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        """`launcher`: what runs `ptol` (default: this Python, with the checkout's package), e.g. a
        `podman run` of the image (devcluster.image.run_argv); `env` is added to the launcher's environment."""
        self.command = command
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.extra_args = extra_args
        self.log_level = log_level
        self.launcher = tuple(launcher) or (sys.executable, "-m", "preemption_toleration")
        self.env = dict(env or {})
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> int:
        """Start it; returns where this run's lines begin in the (shared, appended) log."""
        with open(self.log_path, "ab") as log:
            log.write(f"--- {self.command} start {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            start_of_this_run = log.tell()
            self.process = subprocess.Popen(
                [
                    *self.launcher,
                    self.command,
                    "--kubeconfig",
                    str(self.kubeconfig),
                    *self.extra_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", "PTOL_LOG_LEVEL": self.log_level, **self.env},
                # Started from the main thread (the tests, the benchmarks), it ends with its starter, even one
                # killed with SIGKILL; from another thread (the demo's), that thread's end would stop it early.
                preexec_fn=end_with_starting_thread if threading.current_thread() is threading.main_thread() else None,
            )
        return start_of_this_run

    def wait_for(self, line: str, since: int, timeout: float) -> None:
        """Wait until this run has logged `line`; ComponentError if it exits or takes too long."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if line.encode() in self.log_path.read_bytes()[since:]:
                return
            if self.process.poll() is not None:
                raise ComponentError(
                    f"ptol {self.command} exited with code {self.process.returncode}; log: {self.log_path}"
                )
            time.sleep(0.3)
        raise ComponentError(f"ptol {self.command} did not log {line!r} within {timeout:.0f} s; log: {self.log_path}")

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

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")
