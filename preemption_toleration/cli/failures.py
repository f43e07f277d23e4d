"""How a command ends when it fails: one line, `ptol COMMAND: error: what failed; what to do`, and an exit
code from the table in docs/cli.md ("Exit codes"). Never a traceback, unless $PTOL_TRACEBACK asks for it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

EXIT_FAILED = 1  # the command's own failure: a finding, an object not found, an error answer, a file or port
EXIT_USAGE = 2  # argparse's own code, also for options that do not go together
EXIT_NO_CLUSTER_CONFIG = 3  # no kubeconfig and not in a cluster, or a kubeconfig that cannot be used
EXIT_UNREACHABLE = 4  # the API server could not be reached (refused, timed out, TLS)
EXIT_INTERNAL = 70  # an unexpected error: a bug (EX_SOFTWARE)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
EXIT_STDOUT_CLOSED = 141  # the reader of stdout went away (128 + SIGPIPE), as `| head` does

TRACEBACK_ENV = "PTOL_TRACEBACK"  # set (to anything) to get the traceback of an unexpected error


def program_name(argv0: str | None = None) -> str:
    """`ptol`, or `kubectl ptol` when run as the kubectl plugin (an executable named kubectl-ptol)."""
    name = Path(sys.argv[0] if argv0 is None else argv0).name
    if name.startswith("kubectl-"):
        return "kubectl " + name.removeprefix("kubectl-").replace("-", " ").replace("_", "-")
    return "ptol"


def refused(command: str, problem: str, code: int = EXIT_USAGE) -> int:
    """Says `ptol COMMAND: error: PROBLEM` on stderr and returns `code` (by default: a usage error)."""
    print(f"{program_name()} {command}: error: {problem}", file=sys.stderr)
    return code


class CommandError(Exception):
    """A failure a command reports with its message and exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


def _detail(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def _answer_message(body: object) -> str:
    """The `message` of a Status the API server answered with, if there is one."""
    try:
        status = json.loads(body) if isinstance(body, str | bytes) else None
    except ValueError:
        return ""
    return str(status.get("message") or "") if isinstance(status, dict) else ""


def explained(error: Exception) -> tuple[str, int]:
    """The message and exit code of an error that ended a command."""
    import aiohttp
    from kubernetes_asyncio.client.exceptions import ApiException

    from preemption_toleration.kube.client import ClusterConfigError

    if isinstance(error, CommandError):
        return str(error), error.code
    if isinstance(error, ClusterConfigError):
        return str(error), EXIT_NO_CLUSTER_CONFIG
    if isinstance(error, aiohttp.ClientError | asyncio.TimeoutError):
        detail = _detail(error) if str(error) else "timed out"
        return (
            f"cannot reach the API server: {detail}; check that the cluster is up and that the kubeconfig "
            "(--kubeconfig, $KUBECONFIG) names its server",
            EXIT_UNREACHABLE,
        )
    if isinstance(error, OSError):  # a file, a port: its message names it
        return _detail(error), EXIT_FAILED
    if isinstance(error, ApiException):
        message = _answer_message(error.body)
        answered = f"the API server answered {error.status} {error.reason}" + (f": {message}" if message else "")
        return answered, EXIT_FAILED
    return (
        f"unexpected {type(error).__name__}: {_detail(error)} (a bug: please report it with the traceback that "
        f"{TRACEBACK_ENV}=1 prints)",
        EXIT_INTERNAL,
    )


def require_cluster_configuration(kubeconfig: str | None) -> None:
    """Fail fast (ClusterConfigError) when there is no usable cluster configuration, before a long-running
    command starts anything that would retry it forever (kopf's login does)."""
    from preemption_toleration.kube.client import load_configuration

    asyncio.run(load_configuration(kubeconfig))
