"""Our own components run as real processes against the session's control plane."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from preemption_toleration.cli.run_replicas import MAX_REPLICAS
from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.components import ComponentError, ComponentProcess
from preemption_toleration.devcluster.processes import free_port, free_ports
from preemption_toleration.logs import REGISTERED
from preemption_toleration.manifests.scheduler_extender import scheduler_extender_of
from preemption_toleration.manifests.webhook_configurations import GUARD_NAME
from tests.integration.helpers import START_SECONDS
from tests.metrics import by_label, total

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "crds" / "preemptiontolerationpolicies.yaml"
INSTALL_NAMESPACE = "preemption-toleration"  # config/manager's namespace, where config/rbac's accounts live
OPERATOR_USER = f"system:serviceaccount:{INSTALL_NAMESPACE}:operator"
WEBHOOK_USER = f"system:serviceaccount:{INSTALL_NAMESPACE}:webhook"


def install_crd(cluster: LocalCluster) -> None:
    """Our CRD and kopf's peering CRD with the peering object the operator replicas share."""
    for manifest, crd in (
        (CRD_FILE, "preemptiontolerationpolicies.preemption-toleration.dev"),
        (ROOT / "config" / "crd" / "kopf-peering.yaml", "clusterkopfpeerings.kopf.dev"),
    ):
        subprocess.run(cluster.kubectl_argv("apply", "-f", str(manifest)), check=True, capture_output=True)
        subprocess.run(
            cluster.kubectl_argv("wait", "--for=condition=Established", f"--timeout={START_SECONDS}s", f"crd/{crd}"),
            check=True,
            capture_output=True,
        )
    # the ClusterKopfPeering of config/manager/operator.yaml
    peering = {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "preemption-toleration"}}
    subprocess.run(
        cluster.kubectl_argv("apply", "-f", "-"), input=json.dumps(peering), text=True, check=True, capture_output=True
    )


class WebhookServer:
    """`ptol webhook` on a free loopback port, its log in the cluster directory (`name`.log)."""

    def __init__(self, cluster: LocalCluster, name: str, *args: str) -> None:
        self.port = free_port()
        self.base = f"https://127.0.0.1:{self.port}"
        self.process = ComponentProcess(
            "webhook",
            cluster.kubeconfig,
            cluster.logs_dir / f"{name}.log",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *args,
        )


class OperatorProcess(ComponentProcess):
    """`ptol operator` in a subprocess, with its log in the cluster directory."""

    command = "operator"

    def __init__(
        self, cluster: LocalCluster, *extra_args: str, log_name: str = "operator.log", log_level: str = "INFO"
    ) -> None:
        super().__init__(
            self.command, cluster.kubeconfig, Path(cluster.logs_dir) / log_name, *extra_args, log_level=log_level
        )
        self.cluster = cluster


class RunProcess(OperatorProcess):
    """`ptol run` (operator and webhooks in one process), registered with the API server by URL."""

    command = "run"

    def __init__(self, cluster: LocalCluster, *extra_args: str) -> None:
        # /metrics apart from the HTTPS port, as `ptol run` serves it; replica i of --webhook-replicas on the port + i
        metrics_port = free_ports(MAX_REPLICAS)
        super().__init__(
            cluster, "--metrics-address", f"127.0.0.1:{metrics_port}", *extra_args, log_name="ptol-run.log"
        )
        self.metrics_base = f"http://127.0.0.1:{metrics_port}"

    def start(self) -> int:
        since = super().start()
        try:
            self.wait_for(REGISTERED, since, timeout=START_SECONDS)
        except ComponentError as error:
            raise AssertionError(f"{error}\n{self.log()[-3000:]}") from error
        return since

    def stop(self) -> None:
        super().stop()
        for kind, name in (
            ("validatingwebhookconfiguration", "preemption-toleration"),
            ("validatingwebhookconfiguration", "preemption-toleration-guard"),
            ("validatingwebhookconfiguration", "preemption-toleration-kueue"),
            ("mutatingwebhookconfiguration", "preemption-toleration"),
        ):
            subprocess.run(
                self.cluster.kubectl_argv("delete", kind, name, "--ignore-not-found"), capture_output=True, check=False
            )


@contextmanager
def ptol_run(cluster: LocalCluster, *extra_args: str) -> Iterator[RunProcess]:
    """`ptol run` with the CRDs installed, for a module's tests; stopped (and unregistered) after."""
    install_crd(cluster)
    process = RunProcess(cluster, *extra_args)
    process.start()
    try:
        yield process
    finally:
        process.stop()


@contextmanager
def rbac_installed(cluster: LocalCluster) -> Iterator[None]:
    """The CRDs, config/manager's namespace and config/rbac's accounts and roles; the roles removed after."""
    install_crd(cluster)
    for args in (
        ("apply", "-f", str(ROOT / "config" / "manager" / "namespace.yaml")),
        ("apply", "-k", str(ROOT / "config" / "rbac")),
    ):
        subprocess.run(cluster.kubectl_argv(*args), check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(
            cluster.kubectl_argv("delete", "-k", str(ROOT / "config" / "rbac"), "--ignore-not-found"),
            capture_output=True,
            check=False,
        )


def registered_extender(cluster: LocalCluster) -> dict[str, Any]:
    """The scheduler extender entry for the server `ptol run` registered (its guard configuration's URL
    and CA), as config/scheduler writes it."""
    found = subprocess.run(
        cluster.kubectl_argv("get", "validatingwebhookconfiguration", GUARD_NAME, "-o", "json"),
        check=True,
        capture_output=True,
        text=True,
    )
    return scheduler_extender_of(json.loads(found.stdout))


@contextmanager
def scheduler_extended(
    cluster: LocalCluster, *entries: dict[str, Any], after: list[dict[str, Any]] | None = None
) -> Iterator[None]:
    """kube-scheduler restarted with these extender entries (by default `ptol run`'s), then with `after`
    (by default none). Call it from the main thread: the scheduler process is tied to the thread that
    starts it."""
    cluster.restart_scheduler(list(entries) or [registered_extender(cluster)])
    try:
        yield
    finally:
        cluster.restart_scheduler(after or [])


class Server:
    """The webhook server `ptol run` runs, as the scheduler's extender entry names it, and its /metrics (on a
    port of its own, plain HTTP)."""

    def __init__(self, entry: dict[str, Any], metrics_base: str) -> None:
        self.base = entry["urlPrefix"].rsplit("/extender", 1)[0]
        self.context = ssl.create_default_context(cadata=base64.b64decode(entry["tlsConfig"]["caData"]).decode())
        self.metrics_base = metrics_base

    @classmethod
    def of(cls, process: RunProcess) -> Server:
        """The server of this `ptol run`, by the guard configuration it registered."""
        return cls(registered_extender(process.cluster), process.metrics_base)

    async def metric(self, name: str, label: str) -> dict[str, float]:
        """A counter's samples by one label, read from /metrics."""
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.metrics_base}/metrics") as response,
        ):
            return by_label(await response.text(), name, label)

    async def total(self, name: str) -> float:
        """The sum of a metric's samples, read from /metrics."""
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.metrics_base}/metrics") as response,
        ):
            return total(await response.text(), name)

    async def extender_nodes(self) -> dict[str, float]:
        return await self.metric("ptol_extender_nodes_total", "choice")

    async def refusals(self) -> float:
        return sum((await self.metric("ptol_guard_refusals_total", "kind")).values())


EXTENDER_MODES = {False: "guard alone", True: "with the extender"}  # the test ids of `extended=(False, True)`


def ptol_run_fixture(
    *flags: str,
    extended: bool | tuple[bool, ...] = False,
    before: Callable[[LocalCluster], AbstractContextManager[object]] | None = None,
) -> Any:
    """A module's `ptol run` with the flags its tests need, as a module-scoped fixture (`components =
    ptol_run_fixture("--resync-seconds", "3")`). With `extended`, the scheduler asks it as its extender meanwhile;
    with `(False, True)`, the module's tests run twice, with the guard alone and with the extender (the fixture's
    param). `before(cluster)` is entered before `ptol run` starts and left after it stops: objects that predate
    the webhooks."""
    modes = extended if isinstance(extended, tuple) else (extended,)

    @pytest.fixture(
        scope="module",
        params=list(modes) if len(modes) > 1 else None,
        ids=[EXTENDER_MODES[mode] for mode in modes] if len(modes) > 1 else None,
    )
    def components(cluster: LocalCluster, request: pytest.FixtureRequest) -> Iterator[RunProcess]:
        with before(cluster) if before else nullcontext(), ptol_run(cluster, *flags) as process:
            if getattr(request, "param", modes[0]):
                with scheduler_extended(cluster):
                    yield process
            else:
                yield process

    return components
