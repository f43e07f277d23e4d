"""Installing the chart on the local control plane, and running its pods' processes on loopback as the
installed Deployments run them, with a token of the chart's ServiceAccounts."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.manifests.webhook_configurations import GUARD_NAME, NAME, service_manifests
from tests.integration.components import INSTALL_NAMESPACE, ROOT, install_crd
from tests.integration.conftest import Kubectl
from tests.integration.helpers import SLOW_SECONDS, START_SECONDS, eventually
from tests.integration.objects import TOL, class_manifest

RELEASE = "preemption-toleration"
CHART = ROOT / "charts" / "preemption-toleration"
CRD = "preemptiontolerationpolicies.preemption-toleration.dev"
SERVICE = "preemption-toleration-webhook"
CONFIGURATIONS = (
    ("validatingwebhookconfiguration", NAME),
    ("mutatingwebhookconfiguration", NAME),
    ("validatingwebhookconfiguration", GUARD_NAME),
)


def helm(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [str(cluster.toolchain.helm), "--kubeconfig", str(cluster.kubeconfig), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=SLOW_SECONDS, check=False)


def install_release(cluster: LocalCluster, *values: str) -> subprocess.CompletedProcess[str]:
    """`helm install` of the chart as the release, in its namespace (made), with `values` ("--set", ...)."""
    install = ("install", RELEASE, str(CHART), "--namespace", INSTALL_NAMESPACE, "--create-namespace")
    return helm(cluster, *install, *values)


def live(kubectl: Kubectl, *args: str) -> Any:
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def container_args(kubectl: Kubectl, deployment: str) -> list[str]:
    found = live(kubectl, "deployment", deployment, "-n", INSTALL_NAMESPACE)
    [container] = found["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


def token_kubeconfig(cluster: LocalCluster, kubectl: Kubectl, account: str, path: Path) -> Path:
    """A kubeconfig holding a token of the chart's ServiceAccount (TokenRequest), as a pod would mount."""
    token = kubectl("create", "token", account, "-n", INSTALL_NAMESPACE, "--duration=1h").stdout.strip()
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"][0]["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def registered(kubectl: Kubectl) -> list[tuple[str, str]]:
    """Which of the project's webhook configurations exist."""
    return [(k, n) for k, n in CONFIGURATIONS if kubectl("get", k, n, check=False).returncode == 0]


def ca_bundles(kubectl: Kubectl) -> list[str]:
    return [
        w.get("clientConfig", {}).get("caBundle", "")
        for k, n in CONFIGURATIONS
        for w in live(kubectl, k, n)["webhooks"]
    ]


@pytest.fixture
def clean_slate(cluster: LocalCluster, kubectl: Kubectl) -> Iterator[None]:
    """The CRD as a kustomize install left it, adopted by Helm as the chart's README says; nothing of
    ours otherwise. Afterwards: no release left, whatever happened."""
    with slate(cluster, kubectl):
        yield


@contextlib.contextmanager
def slate(cluster: LocalCluster, kubectl: Kubectl) -> Iterator[None]:
    """`clean_slate` on `cluster`."""
    install_crd(cluster)
    for verb, extra in (
        ("annotate", [f"meta.helm.sh/release-name={RELEASE}", f"meta.helm.sh/release-namespace={INSTALL_NAMESPACE}"]),
        ("label", ["app.kubernetes.io/managed-by=Helm"]),
    ):
        kubectl(verb, "crd", CRD, "--overwrite", *extra)
    kubectl("delete", "clusterkopfpeering", "preemption-toleration", "--ignore-not-found")
    yield
    helm(cluster, "uninstall", RELEASE, "--namespace", INSTALL_NAMESPACE, "--ignore-not-found", "--wait")
    for kind, name in CONFIGURATIONS:
        kubectl("delete", kind, name, "--ignore-not-found", check=False)
    install_crd(cluster)  # the peering object the other modules' operators share


@contextlib.contextmanager
def logs_on_failure(*processes: ComponentProcess) -> Iterator[None]:
    """An assertion failing inside also prints the end of each process's log and whether it still runs:
    a start that is slow only on a loaded machine is told apart from one that failed."""
    try:
        yield
    except AssertionError as failure:
        tails = "\n".join(
            f"--- ptol {process.command} ({'running' if process.running() else 'exited'}), its log's end:\n"
            f"{process.log()[-4000:]}"
            for process in processes
        )
        raise AssertionError(f"{failure}\n{tails}") from failure


async def started_and_answering(
    webhook: ComponentProcess, operator: ComponentProcess, kubectl: Kubectl, bad: str, timeout: float
) -> None:
    """The release's webhook server and operator started (the server first, until it listens); once ready,
    the server has registered its three configurations, with its CA, and a PriorityClass `bad` (a bad
    annotation) is refused through the Service with the webhook's message."""
    webhook.wait_for("webhook server listening", webhook.start(), timeout=timeout)
    operator.start()

    async def configurations() -> list[tuple[str, str]]:
        return registered(kubectl)

    await eventually(configurations, lambda found: len(found) == 3, timeout=timeout, what="registration")
    assert all(ca_bundles(kubectl))
    await assert_bad_class_refused(kubectl, bad)


async def assert_bad_class_refused(kubectl: Kubectl, name: str) -> None:
    """kubectl's error for a PriorityClass with a bad annotation, once the webhook answers through the
    Service (before, the API server reports that it could not call it), is the webhook's message."""
    bad = class_manifest(name, annotations={TOL: "abc"})

    async def attempt() -> str:
        return str(kubectl("apply", "-f", "-", input=bad, check=False).stderr)

    error = await eventually(
        attempt, lambda err: "denied the request" in err, timeout=START_SECONDS, what="the webhook's answer"
    )
    assert (
        'admission webhook "priorityclasses.validate.preemption-toleration.dev" denied the request: '
        f'PriorityClass "{name}": annotation {TOL}="abc" is not a base-10 integer'
    ) in error


@contextlib.contextmanager
def inert_release_configurations(kubectl: Kubectl) -> Iterator[None]:
    """The three webhook configurations of an installed release, calling its Service (which does not exist
    here), made inert (they match no object) so that nothing in the cluster waits on them; removed after."""
    configurations = service_manifests()
    for configuration in configurations:
        for webhook in configuration["webhooks"]:
            webhook["failurePolicy"] = "Ignore"
            webhook["objectSelector"] = {"matchLabels": {"preemption-toleration.dev/test": "matches-nothing"}}
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(configurations))
    try:
        yield
    finally:
        for kind, name in CONFIGURATIONS:
            kubectl("delete", kind, name, "--ignore-not-found", check=False)


def stopped_and_removed(kubectl: Kubectl, processes: tuple[ComponentProcess, ...], ptp: str, *classes: str) -> None:
    """A test's installation undone: its processes stopped, its policy, classes and serving Secret deleted."""
    for process in processes:
        process.stop()
    kubectl("delete", "ptp", ptp, "--ignore-not-found", "--wait=false", check=False)
    for name in classes:
        kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)
    kubectl("delete", "secret", "webhook-tls", "-n", INSTALL_NAMESPACE, "--ignore-not-found", check=False)
