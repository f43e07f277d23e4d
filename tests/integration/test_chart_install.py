"""`helm install`, `helm upgrade` and `helm uninstall` of the chart on the local control plane.

The chart's objects are real: its Deployments, Service, ServiceAccounts, RBAC and webhook configurations
(which call the Service) go to the API server as helm sends them. Only the pods' processes are ours, since
no container runtime runs here: `ptol webhook` and `ptol operator` run on loopback with the container
arguments of the installed Deployments and a token of the chart's ServiceAccounts, and the API server
reaches the Service's ClusterIP through the test bed's service proxy (as kube-proxy would take it to a pod).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.devcluster.processes import free_port
from preemption_toleration.webhooks.configurations import GUARD_NAME, NAME
from tests.integration.components import INSTALL_NAMESPACE, ROOT, install_crd
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import eventually, unique_name, with_value
from tests.integration.objects import MIN, TOL, apply_class_and_policy, class_manifest, ours, read_class
from tests.integration.pods import create_bound

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

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
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)


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


@pytest.fixture
async def pods_namespace(api: ApiClient) -> AsyncIterator[str]:
    name = unique_name("chart")
    await client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    await client.CoreV1Api(api).delete_namespace(name)


async def refused_bad_class(kubectl: Kubectl, name: str) -> str:
    """kubectl's error for a PriorityClass with a bad annotation, once the webhook answers through the
    Service (before, the API server reports that it could not call it)."""
    bad = class_manifest(name, annotations={TOL: "abc"})

    async def attempt() -> str:
        return str(kubectl("apply", "-f", "-", input=bad, check=False).stderr)

    return await eventually(attempt, lambda err: "denied the request" in err, timeout=60, what="the webhook's answer")


async def test_helm_install_upgrade_and_uninstall_on_the_real_api_server(
    api: ApiClient,
    cluster: LocalCluster,
    kubectl: Kubectl,
    clean_slate: None,
    make_node: MakeNode,
    pods_namespace: str,
    tmp_path: Path,
) -> None:
    installed = helm(cluster, "install", RELEASE, str(CHART), "--namespace", INSTALL_NAMESPACE, "--create-namespace")
    assert installed.returncode == 0, installed.stderr
    assert "It keeps, on purpose," in installed.stdout  # NOTES.txt: what uninstall leaves
    assert all(live(kubectl, kind, name) for kind, name in CONFIGURATIONS)

    # the pods' processes: the Deployments' arguments, the chart's ServiceAccounts
    port, health, metrics, webhook_metrics = free_port(), free_port(), free_port(), free_port()

    def as_its_account(command: str, *args: str) -> ComponentProcess:
        """`ptol COMMAND` as the installed Deployment runs it, with a token of the chart's ServiceAccount."""
        kubeconfig = token_kubeconfig(cluster, kubectl, command, tmp_path / f"{command}.kubeconfig")
        return ComponentProcess(command, kubeconfig, tmp_path / f"{command}.log", *args)

    webhook_args = with_value(container_args(kubectl, SERVICE)[1:], "--metrics-address", f"127.0.0.1:{webhook_metrics}")
    webhook = as_its_account("webhook", *webhook_args, "--host", "127.0.0.1", "--port", str(port))
    operator_args = container_args(kubectl, "preemption-toleration-operator")[1:]
    operator_args = with_value(operator_args, "--liveness", f"http://127.0.0.1:{health}/healthz")
    operator_args = with_value(operator_args, "--metrics", f"127.0.0.1:{metrics}")
    operator = as_its_account("operator", *operator_args, "--resync-seconds", "3")
    service = live(kubectl, "service", SERVICE, "-n", INSTALL_NAMESPACE)
    cluster.route_service(service["spec"]["clusterIP"], 443, f"127.0.0.1:{port}")
    pc, ptp, bad = unique_name("chart-class"), unique_name("chart-policy"), unique_name("chart-bad")
    try:
        webhook.wait_for("webhook server listening", webhook.start(), timeout=60)
        operator.start()
        # the webhook put its CA in the chart's three configurations (self-managed TLS)
        await eventually(lambda: _async(ca_bundles, kubectl), lambda bundles: all(bundles), timeout=30, what="caBundle")

        # admission, through the Service: a bad PriorityClass is refused with the webhook's message
        error = await refused_bad_class(kubectl, bad)
        assert (
            'admission webhook "priorityclasses.validate.preemption-toleration.dev" denied the request: '
            f'PriorityClass "{bad}": annotation {TOL}="abc" is not a base-10 integer'
        ) in error

        # the operator, with the chart's RBAC, writes a policy's annotations
        apply_class_and_policy(kubectl, pc, ptp)
        await eventually(
            lambda: read_class(api, pc), lambda c: ours(c) == {MIN: "10000", TOL: "-1"}, timeout=60, what="annotations"
        )

        # the guard, through the Service: an Eviction by a preemptor of priority 9000 is refused
        node = (await make_node()).metadata.name
        await create_bound(api, pods_namespace, "protected", pc, node, cpu="1")
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {
                "name": "protected",
                "namespace": pods_namespace,
                "annotations": {"preemption-toleration.scheduling.x-k8s.io/preemptor-priority": "9000"},
            },
        }
        with pytest.raises(ApiException) as refused:
            await client.CoreV1Api(api).create_namespaced_pod_eviction("protected", pods_namespace, eviction)
        assert refused.value.status == 403
        assert json.loads(refused.value.body)["message"].startswith(
            'admission webhook "pods.guard.preemption-toleration.dev" denied the request: '
            f"pod {pods_namespace}/protected (PriorityClass {pc}"
        )
        for process in (webhook, operator):
            assert "forbidden" not in process.log().lower(), process.log()[-3000:]

        # helm upgrade with changed values changes what it should, and keeps the caBundle the webhook wrote
        upgraded = helm(
            cluster,
            "upgrade",
            RELEASE,
            str(CHART),
            "--namespace",
            INSTALL_NAMESPACE,
            "--set",
            "guard.mode=audit",
            "--set",
            "guard.failurePolicy=Fail",
            "--set",
            "webhook.replicas=3",
            "--set",
            "admissionPolicy.enabled=true",
        )
        assert upgraded.returncode == 0, upgraded.stderr
        assert live(kubectl, "validatingwebhookconfiguration", GUARD_NAME)["webhooks"][0]["failurePolicy"] == "Fail"
        assert container_args(kubectl, SERVICE)[-2:] == ["--guard", "audit"]
        assert live(kubectl, "deployment", SERVICE, "-n", INSTALL_NAMESPACE)["spec"]["replicas"] == 3
        assert live(kubectl, "validatingadmissionpolicy", "preemption-toleration-priorityclasses")
        assert all(ca_bundles(kubectl)), "helm upgrade must leave the caBundle the webhook wrote"
        # both the webhook and the admission policy now refuse it (which one answers first varies)
        after = kubectl("apply", "-f", "-", input=class_manifest(bad, annotations={TOL: "abc"}), check=False).stderr
        assert f'PriorityClass "{bad}": annotation {TOL}="abc" is not a base-10 integer' in after, after

        # helm uninstall: no webhook configuration left; the CRD and the policies kept, and it says so
        uninstalled = helm(cluster, "uninstall", RELEASE, "--namespace", INSTALL_NAMESPACE, "--wait")
        assert uninstalled.returncode == 0, uninstalled.stderr
        assert "These resources were kept due to the resource policy:" in uninstalled.stdout
        assert f"[CustomResourceDefinition] {CRD}" in uninstalled.stdout
        for kind, name in CONFIGURATIONS:
            assert kubectl("get", kind, name, check=False).returncode != 0, f"{kind}/{name} left behind"
        assert kubectl(
            "get", "validatingadmissionpolicy", "preemption-toleration-priorityclasses", check=False
        ).returncode
        assert live(kubectl, "crd", CRD) and live(kubectl, "ptp", ptp)
        # a cluster without the webhooks takes any PriorityClass again
        kubectl("apply", "-f", "-", input=class_manifest(bad, annotations={TOL: "600", MIN: "10000"}))
    finally:
        operator.stop()
        webhook.stop()
        kubectl("delete", "ptp", ptp, "--ignore-not-found", "--wait=false", check=False)
        kubectl("patch", "ptp", ptp, "--type=merge", "-p", '{"metadata":{"finalizers":null}}', check=False)
        for name in (pc, bad):
            kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)
        kubectl("delete", "secret", "webhook-tls", "-n", INSTALL_NAMESPACE, "--ignore-not-found", check=False)


async def _async(function: Any, *args: Any) -> Any:
    return function(*args)
