"""`helm install`, `helm upgrade` and `helm uninstall` of the chart on the local control plane.

The chart's objects are real: its Deployments, Service, ServiceAccounts, RBAC and webhook configurations
(which call the Service) go to the API server as helm sends them. Only the pods' processes are ours, since
no container runtime runs here: `ptol webhook` and `ptol operator` run on loopback with the container
arguments of the installed Deployments and a token of the chart's ServiceAccounts, and the API server
reaches the Service's ClusterIP through the test bed's service proxy (as kube-proxy would take it to a pod).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.devcluster.processes import free_port
from preemption_toleration.manifests.webhook_configurations import GUARD_NAME
from tests.integration.chart import (
    CHART,
    CRD,
    RELEASE,
    SERVICE,
    ca_bundles,
    clean_slate,
    container_args,
    helm,
    install_release,
    live,
    logs_on_failure,
    registered,
    started_and_answering,
    stopped_and_removed,
    token_kubeconfig,
)
from tests.integration.components import INSTALL_NAMESPACE
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import START_SECONDS, eventually, unique_name, with_value
from tests.integration.objects import MIN, TOL, apply, apply_class_and_policy, class_manifest, ours, read_class
from tests.integration.pods import create_bound

UNPULLABLE = "registry.invalid/preemption-toleration"  # an image no node could pull

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]
__all__ = ["clean_slate"]  # a fixture


@pytest.fixture
async def pods_namespace(api: ApiClient) -> AsyncIterator[str]:
    name = unique_name("chart")
    await client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    await client.CoreV1Api(api).delete_namespace(name)


async def test_helm_install_upgrade_and_uninstall_on_the_real_api_server(
    api: ApiClient,
    cluster: LocalCluster,
    kubectl: Kubectl,
    clean_slate: None,
    make_node: MakeNode,
    pods_namespace: str,
    tmp_path: Path,
) -> None:
    image = ("--set", f"image.repository={UNPULLABLE}")
    installed = install_release(cluster, *image)
    assert installed.returncode == 0, installed.stderr
    assert "It keeps, on purpose," in installed.stdout  # NOTES.txt: what uninstall leaves
    assert "once a replica is ready" in installed.stdout  # NOTES.txt: when the webhooks become active
    pc, ptp, bad = unique_name("chart-class"), unique_name("chart-policy"), unique_name("chart-bad")
    # No server has been ready (its image cannot even be pulled): nothing is registered, and classes and
    # policies apply as before the install.
    assert registered(kubectl) == []
    apply_class_and_policy(kubectl, pc, ptp)

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
    try:
        with logs_on_failure(webhook, operator):
            # registered once ready, with its CA (self-managed TLS); admission through the Service
            await started_and_answering(webhook, operator, kubectl, bad, START_SECONDS)

            # the operator, with the chart's RBAC, writes the annotations of the policy applied before
            await eventually(
                lambda: read_class(api, pc),
                lambda c: ours(c) == {MIN: "10000", TOL: "-1"},
                timeout=START_SECONDS,
                what="annotations",
            )

            # the guard, through the Service: an Eviction by a preemptor of priority 9000 is refused
            node = (await make_node()).metadata.name
            await create_bound(api, pods_namespace, "protected", pc, node, cpu="1")
            with pytest.raises(ApiException) as refused:
                await _evict_by_preemptor(api, pods_namespace, "protected")
            assert refused.value.status == 403
            assert json.loads(refused.value.body)["message"].startswith(
                'admission webhook "pods.guard.preemption-toleration.dev" denied the request: '
                f"pod {pods_namespace}/protected (PriorityClass {pc}"
            )
            for process in (webhook, operator):
                assert "forbidden" not in process.log().lower(), process.log()[-3000:]

        # helm upgrade with changed values changes what it should; the webhook's pods, rolled with the new
        # arguments, register the configurations they now ask for
        upgraded = helm(
            cluster,
            "upgrade",
            RELEASE,
            str(CHART),
            "--namespace",
            INSTALL_NAMESPACE,
            *image,
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
        webhook_args = container_args(kubectl, SERVICE)[1:]
        assert webhook_args[webhook_args.index("--guard") + 1] == "audit"
        assert webhook_args[webhook_args.index("--guard-failure-policy") + 1] == "Fail"
        webhook.stop()
        webhook_args = with_value(webhook_args, "--metrics-address", f"127.0.0.1:{webhook_metrics}")
        webhook = as_its_account("webhook", *webhook_args, "--host", "127.0.0.1", "--port", str(port))
        webhook.wait_for("webhook server listening", webhook.start(), timeout=START_SECONDS)
        await eventually(
            lambda: _async(live, kubectl, "validatingwebhookconfiguration", GUARD_NAME),
            lambda guard: guard["webhooks"][0]["failurePolicy"] == "Fail",
            timeout=START_SECONDS,
            what="the guard registered with failurePolicy Fail",
        )
        assert live(kubectl, "deployment", SERVICE, "-n", INSTALL_NAMESPACE)["spec"]["replicas"] == 3
        assert live(kubectl, "validatingadmissionpolicy", "preemption-toleration-priorityclasses")
        assert all(ca_bundles(kubectl))
        # both the webhook and the admission policy now refuse it (which one answers first varies)
        after = kubectl("apply", "-f", "-", input=class_manifest(bad, annotations={TOL: "abc"}), check=False).stderr
        assert f'PriorityClass "{bad}": annotation {TOL}="abc" is not a base-10 integer' in after, after

        # with the server down and the guard registered Fail, an eviction is refused for want of an answer,
        # except in the release's own namespace, which the guard never judges (its own pods must drain)
        webhook.stop()
        await create_bound(api, pods_namespace, "unanswered", pc, node, cpu="100m")
        with pytest.raises(ApiException) as unanswered:
            await _evict_by_preemptor(api, pods_namespace, "unanswered")
        assert (
            'failed calling webhook "pods.guard.preemption-toleration.dev"'
            in json.loads(unanswered.value.body)["message"]
        )
        await create_bound(api, INSTALL_NAMESPACE, "own", pc, node, cpu="100m")
        await _evict_by_preemptor(api, INSTALL_NAMESPACE, "own")

        # helm uninstall: the configurations the server registered go with its ClusterRole (the garbage
        # collector); the CRD and the policies are kept, and it says so
        uninstalled = helm(cluster, "uninstall", RELEASE, "--namespace", INSTALL_NAMESPACE, "--wait")
        assert uninstalled.returncode == 0, uninstalled.stderr
        assert "These resources were kept due to the resource policy:" in uninstalled.stdout
        assert f"[CustomResourceDefinition] {CRD}" in uninstalled.stdout
        await eventually(
            lambda: _async(registered, kubectl),
            lambda found: found == [],
            timeout=START_SECONDS,
            what="configurations collected",
        )
        assert kubectl(
            "get", "validatingadmissionpolicy", "preemption-toleration-priorityclasses", check=False
        ).returncode
        assert live(kubectl, "crd", CRD) and live(kubectl, "ptp", ptp)
        # a cluster without the webhooks takes any PriorityClass again
        apply(kubectl, class_manifest(bad, annotations={TOL: "600", MIN: "10000"}))
    finally:
        stopped_and_removed(kubectl, (operator, webhook), ptp, pc, bad)


async def _evict_by_preemptor(api: ApiClient, namespace: str, name: str) -> None:
    """Evict the pod as a preemptor of priority 9000 would (the priority the guard judges is annotated)."""
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"preemption-toleration.scheduling.x-k8s.io/preemptor-priority": "9000"},
        },
    }
    await client.CoreV1Api(api).create_namespaced_pod_eviction(name, namespace, eviction)


async def _async(function: Any, *args: Any) -> Any:
    return function(*args)
