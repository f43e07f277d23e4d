"""`ptol run --dev-cluster DIR` on a control plane of `ptol dev cluster up`: the local kube-scheduler calls
`ptol run` as its extender while it runs, and no longer after it stops."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client

from preemption_toleration.devcluster import LocalCluster, ensure_namespace
from preemption_toleration.devcluster.cluster import CONTROL_PLANE_PROCESSES
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.devcluster.processes import free_port
from tests.integration.components import Server, install_crd
from tests.integration.helpers import SLOW_SECONDS, START_SECONDS, eventually
from tests.integration.objects import MIN, TOL, class_manifest
from tests.integration.pods import create_bound, pod_body, stays

pytestmark = [pytest.mark.integration]

SCHEDULER_IN_USE = "local kube-scheduler restarted with this process as its extender"
NAMESPACE = "work"


def ptol(*args: str, timeout: float = SLOW_SECONDS) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "preemption_toleration", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def own_cluster(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A second control plane, started as a user starts one: `ptol dev cluster up` (detached processes).
    It depends on the session's cluster only so that the toolchain is built first."""
    directory = tmp_path_factory.mktemp("own-cluster")
    started = ptol(
        "dev", "cluster", "up", "--dir", str(directory), "--nodes", "1", "--node-cpu", "2", "--namespace", NAMESPACE
    )
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield LocalCluster(directory)
    finally:
        ptol("dev", "cluster", "down", "--dir", str(directory))


def reread(local: LocalCluster) -> LocalCluster:
    """The cluster as its directory records it now (`ptol run` restarted its scheduler)."""
    return LocalCluster(local.directory)


def extenders_of(local: LocalCluster) -> list[dict[str, object]]:
    config = yaml.safe_load((local.directory / "scheduler-config.yaml").read_text())
    return list(config.get("extenders") or [])


@pytest.mark.asyncio(loop_scope="session")
async def test_ptol_run_makes_the_local_scheduler_call_it_and_restores_it_on_exit(own_cluster: LocalCluster) -> None:
    install_crd(own_cluster)
    kubectl = own_cluster.kubectl_argv
    subprocess.run(kubectl("apply", "-f", "-"), input=class_manifest("high", 9000), text=True, check=True)
    subprocess.run(
        kubectl("apply", "-f", "-"),
        text=True,
        check=True,
        input=class_manifest("protected", 8000, annotations={MIN: "10000", TOL: "-1"}),
    )
    metrics_port = free_port()
    run = ComponentProcess(
        "run",
        own_cluster.kubeconfig,
        own_cluster.logs_dir / "ptol-run.log",
        "--dev-cluster",
        str(own_cluster.directory),
        "--metrics-address",
        f"127.0.0.1:{metrics_port}",
    )
    since = run.start()
    try:
        run.wait_for(SCHEDULER_IN_USE, since, timeout=SLOW_SECONDS)
        [entry] = extenders_of(own_cluster)
        assert entry["preemptVerb"] == "preempt" and entry["ignorable"] is True
        assert reread(own_cluster).running_components() == list(CONTROL_PLANE_PROCESSES)
        server = Server(entry, f"http://127.0.0.1:{metrics_port}")
        async with await own_cluster.api_client() as api:
            await ensure_namespace(api, NAMESPACE)
            await create_bound(api, NAMESPACE, "train", "protected", "node-1", cpu="2")
            await client.CoreV1Api(api).create_namespaced_pod(NAMESPACE, pod_body("high", "high", "node-1", cpu="2"))
            # The scheduler asks `ptol run`, which leaves the node out: the protected pod never gets a DELETE.
            await eventually(
                server.extender_nodes,
                lambda found: found.get("dropped", 0) > 0,
                timeout=START_SECONDS,
                what="the extender left node-1 out",
            )
            await stays(api, NAMESPACE, "train", "high", "node-1", attempts=1)
            assert await server.refusals() == 0
    finally:
        run.stop()
    assert "local kube-scheduler restarted without the extender" in run.log()[since:]
    assert extenders_of(own_cluster) == []
    assert "kube-scheduler" in reread(own_cluster).running_components()
    assert ptol("dev", "cluster", "status", "--dir", str(own_cluster.directory)).returncode == 0


def test_ptol_run_refuses_a_kubeconfig_of_another_cluster(own_cluster: LocalCluster, cluster: LocalCluster) -> None:
    result = ptol(
        "run",
        "--dev-cluster",
        str(own_cluster.directory),
        "--kubeconfig",
        str(cluster.kubeconfig),
        timeout=START_SECONDS,
    )
    assert result.returncode == 2
    assert result.stderr == (
        f"ptol run: error: --dev-cluster: the kubeconfig {cluster.kubeconfig} does not point at "
        f"the control plane in {own_cluster.directory} ({own_cluster.server}); drop "
        "--kubeconfig (KUBECONFIG) to use that cluster's own\n"
    )


def test_ptol_run_leaves_a_cluster_that_belongs_to_its_starter_alone(cluster: LocalCluster) -> None:
    """The session's cluster is tied to the test process: a scheduler restarted by `ptol run` would outlive it."""
    result = ptol("run", "--dev-cluster", str(cluster.directory), timeout=START_SECONDS)
    assert result.returncode == 2
    assert result.stderr == (
        f"ptol run: error: --dev-cluster: the control plane in {cluster.directory} belongs to "
        "the process that started it (`ptol demo` or a test session), which configures its "
        "scheduler itself\n"
    )


def test_ptol_run_needs_a_running_control_plane_in_the_directory(tmp_path: Path) -> None:
    result = ptol("run", "--dev-cluster", str(tmp_path), timeout=START_SECONDS)
    assert result.returncode == 2
    assert result.stderr == (
        f"ptol run: error: --dev-cluster: no local control plane runs in {tmp_path} "
        "(start one with `ptol dev cluster up`)\n"
    )
