"""One real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK) for the whole test
run, of Kubernetes 1.37.2 or the release `PTOL_KUBERNETES_VERSION` names.

Fixtures:
- `cluster`: the session's `LocalCluster` (admin kubeconfig at `cluster.kubeconfig`);
- `api`: a kubernetes_asyncio `ApiClient` as the admin (session-wide);
- `namespace`: a fresh namespace with its `default` ServiceAccount per test; its pods are removed after;
- `make_node`: creates simulated Nodes for one test and deletes them after;
- `kubectl`: runs the cluster's kubectl with the admin kubeconfig (`group_kubectl`: the pod-group control plane's);
- `alice`: runs kubectl as another cluster admin, who is not the operator (so managed annotations are hers
  to be refused);
- `server`: the webhook server of a module's `ptol run`, the module's `components` fixture (made by
  `components.ptol_run_fixture` with the flags the module needs);
- `group_cluster`, `group_api`: a second control plane of the same release with pod groups on (`ptol dev
  cluster up --feature pod-groups`), started when a test first asks for it; skipped before 1.37;
  `group_namespace` and `group_nodes` (two of 2 CPUs) are there;
- `kueue_cluster`, `kueue_kubectl`: a third control plane of the same release with Kueue's controller manager
  (`ptol dev cluster up --feature kueue`), started when a test first asks for it; skipped before 1.37.

Async tests must run in the session's event loop (the `api` client lives there): mark them
`pytest.mark.asyncio(loop_scope="session")`, as the modules here do with `pytestmark`.

Set PTOL_TEST_CLUSTER_DIR to keep the cluster's directory (logs, kubeconfig) at a known place.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import (
    LocalCluster,
    create_node,
    delete_namespace,
    delete_node,
    ensure_namespace,
    ensure_toolchain,
)
from preemption_toleration.devcluster.features import KUEUE, POD_GROUPS, features_named
from tests.integration.components import RunProcess, Server
from tests.integration.helpers import START_SECONDS, unique_name
from tests.integration.objects import MIN, TOL, apply, class_manifest

Kubectl = Callable[..., "subprocess.CompletedProcess[str]"]
MakeNode = Callable[..., Awaitable[client.V1Node]]


def _progress(message: str) -> None:
    # Outside pytest's capture: building the toolchain takes minutes and should say so.
    print(message, file=sys.__stderr__, flush=True)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    toolchain = ensure_toolchain(_progress)  # instant once `ptol dev cluster install` has run
    explicit = os.environ.get("PTOL_TEST_CLUSTER_DIR")
    directory = Path(explicit) if explicit else tmp_path_factory.mktemp("cluster")
    with _running(LocalCluster(directory, toolchain)) as local:
        yield local


@contextmanager
def _running(local: LocalCluster, features: tuple[str, ...] = ()) -> Iterator[LocalCluster]:
    # Started from the main thread and tied to it: nothing survives the test run, even a killed one.
    local.start(die_with_parent=True, features=features)
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="session")
async def api(cluster: LocalCluster) -> AsyncIterator[ApiClient]:
    async with await cluster.api_client() as api_client:
        yield api_client


@pytest.fixture(scope="session")
def group_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    toolchain = ensure_toolchain(_progress)
    try:
        features_named([POD_GROUPS.name], toolchain.version)
    except ValueError as error:
        pytest.skip(str(error))
    with _running(LocalCluster(tmp_path_factory.mktemp("group-cluster"), toolchain), (POD_GROUPS.name,)) as local:
        yield local


@pytest.fixture(scope="session")
def kueue_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    toolchain = ensure_toolchain(_progress)
    try:
        features_named([KUEUE.name], toolchain.version)
    except ValueError as error:
        pytest.skip(str(error))
    with _running(LocalCluster(tmp_path_factory.mktemp("kueue-cluster"), toolchain), (KUEUE.name,)) as local:
        yield local


@pytest.fixture(scope="session")
def kueue_kubectl(kueue_cluster: LocalCluster) -> Kubectl:
    return kubectl_of(kueue_cluster)


@pytest.fixture(scope="session")
async def group_api(group_cluster: LocalCluster) -> AsyncIterator[ApiClient]:
    async with await group_cluster.api_client() as api_client:
        yield api_client


@pytest.fixture
async def group_namespace(group_api: ApiClient, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A fresh namespace on the pod-group control plane; its pods removed after."""
    async with _fresh_namespace(group_api, request.node.name) as name:
        yield name


@pytest.fixture
async def group_nodes(group_api: ApiClient) -> AsyncIterator[list[str]]:
    """Two nodes of 2 CPUs on the pod-group control plane (room for four pods of 1 CPU), deleted after."""
    names = [unique_name("node") for _ in range(2)]
    for name in names:
        await create_node(group_api, name, cpu="2")
    yield names
    for name in names:
        await delete_node(group_api, name)


@pytest.fixture
async def namespace(api: ApiClient, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    async with _fresh_namespace(api, request.node.name) as name:
        yield name


@asynccontextmanager
async def _fresh_namespace(api: ApiClient, hint: str) -> AsyncIterator[str]:
    name = unique_name(hint)
    await ensure_namespace(api, name)
    yield name
    await delete_namespace(api, name)


@pytest.fixture
async def make_node(api: ApiClient) -> AsyncIterator[MakeNode]:
    created: list[str] = []

    async def make(name: str | None = None, **capacity: str) -> client.V1Node:
        node_name = name or unique_name("node")
        created.append(node_name)
        return await create_node(api, node_name, **capacity)

    yield make
    for node_name in created:
        await delete_node(api, node_name)


@pytest.fixture(scope="session")
def kubectl(cluster: LocalCluster) -> Kubectl:
    return kubectl_of(cluster)


@pytest.fixture(scope="session")
def group_kubectl(group_cluster: LocalCluster) -> Kubectl:
    return kubectl_of(group_cluster)


def kubectl_of(cluster: LocalCluster) -> Kubectl:
    """The cluster's kubectl as its admin; a failure raises unless `check` is False."""

    def run(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            cluster.kubectl_argv(*args),
            input=input,
            capture_output=True,
            text=True,
            timeout=START_SECONDS,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    return run


@pytest.fixture(scope="session")
def alice(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    """kubectl as another cluster admin, who is not the operator."""
    kubeconfig = cluster.write_kubeconfig(tmp_path_factory.mktemp("alice") / "kubeconfig", "alice", ["system:masters"])

    def run(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = [str(cluster.toolchain.kubectl), "--kubeconfig", str(kubeconfig), *args]
        result = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=START_SECONDS, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stderr}")
        return result

    return run


@pytest.fixture(scope="module")
def server(components: RunProcess) -> Server:
    """The webhook server of the module's `ptol run` (its `components` fixture) and its /metrics."""
    return Server.of(components)


@pytest.fixture(scope="module")
def steering_classes(kubectl: Kubectl) -> Iterator[dict[str, str]]:
    """The steering tests' classes: `high` (9000), `low` (8000), `prot` (8000, protected from below 10000 for ever)."""
    suffix = unique_name("s").split("-")[-1]
    names = {"high": f"shigh-{suffix}", "low": f"slow-{suffix}", "prot": f"sprot-{suffix}"}
    apply(kubectl, class_manifest(names["high"], 9000))
    apply(kubectl, class_manifest(names["low"], 8000))
    apply(kubectl, class_manifest(names["prot"], 8000, annotations={MIN: "10000", TOL: "-1"}))
    yield names
    for name in names.values():
        kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)
