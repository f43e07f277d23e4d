"""The components do their whole job with nothing but the roles of config/rbac, as in a real install.

The operator and the webhook server run as their service accounts (client certificates with the service
accounts' user names, which RBAC's ServiceAccount subjects match), with the Deployments' arguments. A
missing permission would crash-loop a real install; here it fails a test. (test_manifests.py checks the
other side: what the service accounts must not do.)
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.core.annotations import PREEMPTOR_PRIORITY
from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.devcluster.processes import free_port
from preemption_toleration.manifests.webhook_configurations import GUARD_NAME, NAME
from tests.integration.chart import inert_release_configurations
from tests.integration.components import INSTALL_NAMESPACE, OPERATOR_USER, ROOT, WEBHOOK_USER, rbac_installed
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import (
    ANSWER_SECONDS,
    REACTION_SECONDS,
    SLOW_SECONDS,
    START_SECONDS,
    eventually,
    unique_name,
    with_value,
)
from tests.integration.objects import (
    MIN,
    TOL,
    apply,
    apply_class_and_policy,
    class_manifest,
    ours,
    read_class,
    wait_annotations,
    wait_ready,
)
from tests.integration.pods import create_bound, events_of

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

NAMESPACE, OPERATOR, WEBHOOK = INSTALL_NAMESPACE, OPERATOR_USER, WEBHOOK_USER
GROUPS = ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"]


def deployment_args(component: str) -> list[str]:
    """The container arguments of one Deployment in config/manager."""
    documents = yaml.safe_load_all((ROOT / "config" / "manager" / f"{component}.yaml").read_text())
    [deployment] = [d for d in documents if d and d["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


@pytest.fixture(scope="module")
def roles(cluster: LocalCluster, kubectl: Kubectl) -> Iterator[None]:
    with rbac_installed(cluster):
        yield
    kubectl("delete", "secret", "webhook-tls", "-n", NAMESPACE, "--ignore-not-found", check=False)


def run_as(cluster: LocalCluster, tmp_path: Path, user: str, command: str, *args: str) -> ComponentProcess:
    kubeconfig = cluster.write_kubeconfig(tmp_path / f"{command}.kubeconfig", user, GROUPS)
    process = ComponentProcess(command, kubeconfig, tmp_path / f"{command}.log", *args)
    process.start()
    return process


def no_permission_errors(process: ComponentProcess) -> None:
    log = process.log()  # the API's 403 reads "... is forbidden: User ... cannot ..." in every client's errors
    assert "forbidden" not in log.lower(), log[-3000:]


async def test_the_operator_does_its_job_with_its_role_alone(
    api: ApiClient, cluster: LocalCluster, kubectl: Kubectl, roles: None, tmp_path: Path
) -> None:
    health, metrics = free_port(), free_port()
    args = with_value(deployment_args("operator")[1:], "--liveness", f"http://127.0.0.1:{health}/healthz")
    args = with_value(args, "--metrics", f"127.0.0.1:{metrics}")
    operator = run_as(cluster, tmp_path, OPERATOR, "operator", *args, "--resync-seconds", "3")
    pc, ptp = unique_name("sa-class"), unique_name("sa-policy")
    try:
        apply_class_and_policy(kubectl, pc, ptp)
        await wait_annotations(
            api, pc, {MIN: "10000", TOL: "-1"}, START_SECONDS, "annotations applied by the operator's service account"
        )
        await wait_ready(api, ptp, "True", "Applied")  # its status subresource
        events = await client.CoreV1Api(api).list_namespaced_event(
            "default", field_selector=f"involvedObject.name={ptp}"
        )
        assert "Applied" in {event.reason for event in events.items}
        kubectl("delete", "ptp", ptp, "--wait=true", f"--timeout={START_SECONDS}s")
        await eventually(
            lambda: read_class(api, pc), lambda c: ours(c) == {}, timeout=START_SECONDS, what="annotations released"
        )
        # the Deployment's liveness probe and the metrics it scrapes
        assert _get(f"http://127.0.0.1:{health}/healthz")[0] == 200
        status, text = _get(f"http://127.0.0.1:{metrics}/metrics")
        assert status == 200 and 'ptol_operator_writes_total{action="released",result="ok"}' in text
        assert operator.running(), operator.log()[-3000:]
        no_permission_errors(operator)
    finally:
        operator.stop()
        kubectl("delete", "ptp", ptp, "--ignore-not-found", "--wait=false", check=False)
        kubectl("delete", "priorityclass", pc, "--ignore-not-found", check=False)


async def test_the_operator_stopped_by_an_error_starts_again_and_does_its_job(
    api: ApiClient, cluster: LocalCluster, kubectl: Kubectl, roles: None, tmp_path: Path
) -> None:
    """kopf ends the whole operator when a request fails with an error it does not retry. Seen: a 404 for
    our CRD while a restarted API server does not serve it yet. Made here on purpose: a kubeconfig whose
    token the API server refuses (401), fixed while the operator runs. kopf runs out of credentials and
    stops; `ptol operator` runs it again after a backoff, in the same process, and it logs in again from
    the fixed kubeconfig and does its job."""
    health, metrics = free_port(), free_port()
    args = with_value(deployment_args("operator")[1:], "--liveness", f"http://127.0.0.1:{health}/healthz")
    args = with_value(args, "--metrics", f"127.0.0.1:{metrics}")
    kubeconfig = cluster.write_kubeconfig(tmp_path / "operator.kubeconfig", OPERATOR, GROUPS)
    valid = kubeconfig.read_text()
    refused = yaml.safe_load(valid)
    refused["users"][0]["user"] = {"token": "refused-by-the-api-server"}
    kubeconfig.write_text(yaml.safe_dump(refused))
    operator = ComponentProcess("operator", kubeconfig, tmp_path / "operator.log", *args, "--resync-seconds", "3")
    operator.start()
    pc, ptp = unique_name("restart-class"), unique_name("restart-policy")
    try:
        operator.wait_for("operator stopped by an error; starting it again", 0, timeout=START_SECONDS)
        kubeconfig.write_text(valid)
        apply_class_and_policy(kubectl, pc, ptp)
        await wait_annotations(
            api, pc, {MIN: "10000", TOL: "-1"}, SLOW_SECONDS, "annotations applied by the operator started again"
        )
        await wait_ready(api, ptp, "True", "Applied")
        assert operator.running(), operator.log()[-3000:]
        restarts = _samples(_get(f"http://127.0.0.1:{metrics}/metrics")[1])["ptol_operator_restarts_total"]
        assert restarts >= 1, operator.log()[-3000:]
    finally:
        kubectl("delete", "ptp", ptp, "--ignore-not-found", "--wait=true", f"--timeout={START_SECONDS}s", check=False)
        operator.stop()
        kubectl("delete", "priorityclass", pc, "--ignore-not-found", check=False)


@pytest.fixture
def inert_configurations(kubectl: Kubectl) -> Iterator[None]:
    """An installed release's configurations, inert; the webhook server registers its own over them."""
    with inert_release_configurations(kubectl):
        yield


async def test_the_webhook_server_does_its_job_with_its_role_alone(
    api: ApiClient,
    cluster: LocalCluster,
    kubectl: Kubectl,
    roles: None,
    inert_configurations: None,
    make_node: MakeNode,
    namespace: str,
    tmp_path: Path,
) -> None:
    port, metrics_port = free_port(), free_port()
    webhook = run_as(
        cluster,
        tmp_path,
        WEBHOOK,
        "webhook",
        *with_value(deployment_args("webhook")[1:], "--metrics-address", f"127.0.0.1:{metrics_port}"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    )
    pc = unique_name("sa-guarded")
    try:
        # no operator runs here: the class carries its annotations itself
        apply(kubectl, class_manifest(pc, annotations={MIN: "10000", TOL: "-1"}))
        node = (await make_node(cpu="2")).metadata.name
        await create_bound(api, namespace, "victim", pc, node, cpu="1")

        # its Secret (create, get), and its configurations registered with that CA (patch: server-side apply)
        secret = await eventually(
            lambda: _secret(api), lambda s: s is not None, timeout=START_SECONDS, what="the webhook-tls Secret"
        )
        ca = base64.b64decode(secret.data["ca.crt"])
        bundles = await eventually(
            lambda: _ca_bundles(kubectl),
            lambda b: b == {base64.b64encode(ca).decode()},
            timeout=REACTION_SECONDS,
            what="the CA in every configuration's caBundle",
        )
        assert len(bundles) == 1

        # ready once its watches of classes, policies, pods and nodes have listed (list, watch)
        context = ssl.create_default_context(cadata=ca.decode())
        context.check_hostname = False  # the certificate names the Service; this is 127.0.0.1
        base = f"https://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            await eventually(
                lambda: _status(session, f"{base}/readyz", context),
                lambda s: s == 200,
                timeout=START_SECONDS,
                what="/readyz",
            )

            # a preemption of the protected pod: refused, and an Event on the victim (events create)
            async def refuse() -> dict:
                async with session.post(
                    f"{base}/guard/pods", json=_eviction_review(namespace), ssl=context
                ) as response:
                    return (await response.json())["response"]

            answer = await eventually(
                refuse, lambda r: not r["allowed"], timeout=REACTION_SECONDS, what="the guard's refusal"
            )
            # /metrics on its own port, as the Deployment serves it (for the NetworkPolicy to close)
            async with session.get(f"{base}/metrics", ssl=context) as response:
                assert response.status == 404
            async with session.get(f"http://127.0.0.1:{metrics_port}/metrics") as response:
                metrics = await response.text()
        assert answer["status"]["code"] == 403
        figures = _samples(metrics)
        for kind in ("priorityclasses", "preemptiontolerationpolicies", "pods", "nodes"):  # the watch caches
            assert figures[f'ptol_webhook_cache_lists_total{{kind="{kind}"}}'] >= 1
        assert figures['ptol_webhook_cache_objects{kind="pods"}'] >= 1  # the victim, at least
        assert answer["status"]["message"].startswith(f"pod {namespace}/victim (PriorityClass {pc}, priority 8000)")
        await eventually(
            lambda: events_of(api, namespace, "victim"),
            bool,
            timeout=REACTION_SECONDS,
            what="the PreemptionRefused Event",
        )
        assert webhook.running(), webhook.log()[-3000:]
        no_permission_errors(webhook)
    finally:
        webhook.stop()
        kubectl("delete", "priorityclass", pc, "--ignore-not-found", check=False)


def _samples(text: str) -> dict[str, float]:
    """Prometheus text: each sample's name and labels, with its value."""
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=ANSWER_SECONDS) as response:
        return response.status, response.read().decode()


async def _secret(api: ApiClient) -> client.V1Secret | None:
    secrets = await client.CoreV1Api(api).list_namespaced_secret(NAMESPACE, field_selector="metadata.name=webhook-tls")
    return secrets.items[0] if secrets.items else None


async def _ca_bundles(kubectl: Kubectl) -> set[str]:
    bundles: set[str] = set()
    for kind, name in (
        ("validatingwebhookconfiguration", NAME),
        ("mutatingwebhookconfiguration", NAME),
        ("validatingwebhookconfiguration", GUARD_NAME),
    ):
        found = json.loads(kubectl("get", kind, name, "-o", "json").stdout)
        bundles |= {webhook["clientConfig"].get("caBundle", "") for webhook in found["webhooks"]}
    return bundles


async def _status(session: aiohttp.ClientSession, url: str, context: ssl.SSLContext) -> int:
    try:
        async with session.get(url, ssl=context) as response:
            return response.status
    except aiohttp.ClientError:
        return 0


def _eviction_review(namespace: str) -> dict:
    eviction = {
        "apiVersion": "policy/v1beta1",
        "kind": "Eviction",
        "metadata": {"name": "victim", "namespace": namespace, "annotations": {PREEMPTOR_PRIORITY: "9000"}},
    }
    kind = {"group": "policy", "version": "v1beta1", "kind": "Eviction"}
    resource = {"group": "", "version": "v1", "resource": "pods"}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": unique_name("review"),
            "kind": kind,
            "resource": resource,
            "subResource": "eviction",
            "requestKind": kind,
            "requestResource": resource,
            "requestSubResource": "eviction",
            "name": "victim",
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": eviction,
            "oldObject": None,
            "dryRun": False,
        },
    }
