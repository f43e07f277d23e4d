"""No traceback, ever: every subcommand, run as a process with a scrubbed environment (an empty HOME, no
KUBECONFIG, not in a cluster), under each condition that applies, ends with one line that says what failed
and what to do, and the exit code of docs/cli.md ("Exit codes"). The long-running commands retry a server
that is down: they say so in a log line, and stop cleanly on SIGTERM. All cases run at once, in parallel."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from preemption_toleration.cli.failures import EXIT_NO_CLUSTER_CONFIG, EXIT_STDOUT_CLOSED, EXIT_UNREACHABLE, explained

ROOT = Path(__file__).resolve().parents[2]
# (`ptol webhook` on a free port: 8443 may be taken on a machine that runs tests)
CLUSTER_COMMANDS = [
    ("explain", "pod", "default/p"),
    ("explain", "pc", "low"),
    ("operator",),
    ("webhook", "--port", "0"),
    ("run",),
]
LONG_RUNNING = {"operator", "webhook", "run"}
# A long-running command's line saying that it retries: ours (informers) or kopf's.
RETRY_LINE = re.compile(r"failed.*retr.*|retr.*failed.*")
RETRY_WAIT_SECONDS = 30.0
STOP_WAIT_SECONDS = 30.0


@dataclass(frozen=True)
class Case:
    condition: str
    argv: tuple[str, ...]
    code: int | None  # None: long-running, stopped with SIGTERM once it printed its retry line
    says: tuple[str, ...]  # what its line (or retry line) says
    stdout_closed: bool = False

    @property
    def id(self) -> str:
        words = list(itertools.takewhile(lambda word: not word.startswith(("-", "{")), self.argv))[:2]
        return f"{self.condition}:{'-'.join(words) or self.argv[0].lstrip('-')}"


NO_CONFIGURATION = ("no cluster configuration", "--kubeconfig", "KUBECONFIG", "in-cluster service account")
KUBECONFIGS = {
    "kubeconfig-not-found": ("{tmp}/nope.yaml", ("does not exist", "--kubeconfig")),
    "kubeconfig-without-context": ("{tmp}/empty.yaml", ("cannot be used", "current-context", "kubectl config view")),
    "kubeconfig-not-a-mapping": ("{tmp}/text.yaml", ("cannot be used", "kubectl config view")),
    "kubeconfig-empty": ("{tmp}/zero.yaml", ("is empty", "--kubeconfig or KUBECONFIG", "kubectl config view")),
}
PRINTING = [
    ("--help",),
    ("--version",),
    ("crd",),
    ("webhook-config",),
    ("admission-policy",),
    ("explain", "--help"),
    ("validate", "-f", "{tmp}/missing.yaml"),
    ("dev", "cluster", "status", "--dir", "{tmp}/no-cluster"),
]


def cases() -> list[Case]:
    found = [Case("no-config", command, EXIT_NO_CLUSTER_CONFIG, NO_CONFIGURATION) for command in CLUSTER_COMMANDS]
    for condition, (path, says) in KUBECONFIGS.items():
        found += [
            Case(condition, (*command, "--kubeconfig", path), EXIT_NO_CLUSTER_CONFIG, says)
            for command in CLUSTER_COMMANDS
        ]
    for command in CLUSTER_COMMANDS:
        long_running = command[0] in LONG_RUNNING
        code, says = (None, ("ClientConnectorError",)) if long_running else (EXIT_UNREACHABLE, ("cannot reach",))
        found.append(Case("server-refuses", (*command, "--kubeconfig", "{tmp}/refused.yaml"), code, says))
    found += [Case("stdout-closed", command, EXIT_STDOUT_CLOSED, (), stdout_closed=True) for command in PRINTING]
    return found


CASES = cases()


@dataclass(frozen=True)
class Outcome:
    code: int
    stderr: str
    retry_line: str | None = None


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def refusing_kubeconfig(port: int) -> str:
    return (
        "apiVersion: v1\nkind: Config\ncurrent-context: refused\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}', insecure-skip-tls-verify: true}}}}]\n"
        "users: [{name: u, user: {token: not-a-token}}]\n"
        "contexts: [{name: refused, context: {cluster: c, user: u}}]\n"
    )


def scrubbed_environment(home: Path) -> dict[str, str]:
    """Only PATH and an empty HOME: no KUBECONFIG, no KUBERNETES_SERVICE_HOST, no PTOL_* variable."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}


def run_case(case: Case, tmp: Path, env: dict[str, str]) -> Outcome:
    argv = [sys.executable, "-m", "preemption_toleration", *(word.format(tmp=tmp) for word in case.argv)]
    if case.stdout_closed:
        reader, writer = os.pipe()
        os.close(reader)  # nobody reads: the first write fails with EPIPE
        try:
            done = subprocess.run(argv, env=env, cwd=ROOT, stdout=writer, stderr=subprocess.PIPE, timeout=60)
        finally:
            os.close(writer)
        return Outcome(done.returncode, done.stderr.decode())
    if case.code is not None:
        done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, timeout=60)
        return Outcome(done.returncode, done.stderr.decode())
    return run_until_retry(argv, env)


def run_until_retry(argv: list[str], env: dict[str, str]) -> Outcome:
    """Starts a long-running command, waits for its retry line, stops it with SIGTERM."""
    process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    lines: list[str] = []
    retried = threading.Event()

    def read(stream: Iterator[str]) -> None:
        for line in stream:
            lines.append(line)
            if RETRY_LINE.search(line):
                retried.set()

    reader = threading.Thread(target=read, args=(process.stderr,), daemon=True)
    reader.start()
    deadline = time.monotonic() + RETRY_WAIT_SECONDS
    while not retried.is_set() and process.poll() is None and time.monotonic() < deadline:
        retried.wait(0.1)
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(STOP_WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
    reader.join(5)
    retry_line = next((line for line in lines if RETRY_LINE.search(line)), None)
    return Outcome(code, "".join(lines), retry_line)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[Outcome]]]:
    tmp = tmp_path_factory.mktemp("no-traceback")
    home = tmp / "home"
    home.mkdir()
    (tmp / "empty.yaml").write_text("{}\n")
    (tmp / "text.yaml").write_text("just some text\n")
    (tmp / "zero.yaml").write_text("")
    (tmp / "refused.yaml").write_text(refusing_kubeconfig(closed_port()))
    env = scrubbed_environment(home)
    with ThreadPoolExecutor(max_workers=max(4, 2 * (os.cpu_count() or 1))) as pool:
        # the long-running ones first: they take longest
        ordered = sorted(CASES, key=lambda case: case.code is not None)
        yield {case.id: pool.submit(run_case, case, tmp, env) for case in ordered}


def test_the_case_ids_are_unique() -> None:
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_no_traceback(case: Case, outcomes: dict[str, Future[Outcome]]) -> None:
    outcome = outcomes[case.id].result()
    assert "Traceback" not in outcome.stderr, outcome.stderr
    if case.code is None:  # long-running: a retry line naming the failure, then a clean stop
        assert outcome.retry_line is not None, f"no retry line in:\n{outcome.stderr}"
        assert all(fragment in outcome.retry_line for fragment in case.says), outcome.retry_line
        assert outcome.code == 0, outcome.stderr
        return
    assert outcome.code == case.code, outcome.stderr
    if case.stdout_closed:  # nobody reads any more: nothing else to say
        assert outcome.stderr == ""
        return
    lines = outcome.stderr.splitlines()
    assert len(lines) == 1, outcome.stderr
    command = case.argv[0]
    assert lines[0].startswith(f"ptol {command}: error: "), lines[0]
    assert all(fragment in lines[0] for fragment in case.says), lines[0]


def _forbidden() -> Exception:
    from kubernetes_asyncio.client.exceptions import ApiException

    error = ApiException(status=403, reason="Forbidden")
    error.body = json.dumps({"kind": "Status", "message": 'priorityclasses "low" is forbidden'})
    return error


@pytest.mark.parametrize(
    "error, code, line",
    [
        pytest.param(
            _forbidden(),
            1,
            'the API server answered 403 Forbidden: priorityclasses "low" is forbidden',
            id="an-error-answer",
        ),
        pytest.param(
            FileNotFoundError(2, "No such file or directory", "tls.crt"),
            1,
            "[Errno 2] No such file or directory: 'tls.crt'",
            id="a-missing-file",
        ),
        pytest.param(TimeoutError(), EXIT_UNREACHABLE, "cannot reach the API server: timed out;", id="a-timeout"),
        pytest.param(KeyError("spec"), 70, "unexpected KeyError: 'spec' (a bug: please report it", id="a-bug"),
    ],
)
def test_every_error_is_one_line_and_an_exit_code(error: Exception, code: int, line: str) -> None:
    message, exit_code = explained(error)
    assert (exit_code, "\n" in message) == (code, False)
    assert message.startswith(line), message
