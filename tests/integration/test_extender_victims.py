"""The scheduler extender against the real kube-scheduler: with `ptol run` serving `/extender/preempt`,
the scheduler chooses only victims that do not tolerate the preemptor (the issue's cases a and c)."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from prometheus_client.parser import text_string_to_metric_families

from preemption_toleration.devcluster import LocalCluster
from tests.integration.components import RunProcess, ptol_run
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import eventually, unique_name
from tests.integration.objects import MIN, TOL, class_manifest
from tests.integration.pods import SETTLE_SECONDS, create_bound, node_of, pod_body, read_pod

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


def _guard_client_config(kubectl: Kubectl) -> tuple[str, str]:
    """(base URL, base64 CA bundle) of the webhook server `ptol run` registered."""
    import json

    registered = json.loads(kubectl("get", "validatingwebhookconfiguration", "preemption-toleration-guard",
                                    "-o", "json").stdout)
    config = registered["webhooks"][0]["clientConfig"]
    return config["url"].rsplit("/guard/", 1)[0], config["caBundle"]


@pytest.fixture(scope="module")
def extended(cluster: LocalCluster, kubectl: Kubectl) -> Iterator[tuple[RunProcess, str, str]]:
    """`ptol run`, and the scheduler configured with its extender as the README shows (ignorable, HTTPS)."""
    with ptol_run(cluster) as process:
        base, ca_bundle = _guard_client_config(kubectl)
        cluster.restart_scheduler([{
            "urlPrefix": f"{base}/extender", "preemptVerb": "preempt", "weight": 1, "enableHTTPS": True,
            "tlsConfig": {"caData": ca_bundle}, "httpTimeout": "5s", "ignorable": True,
            "nodeCacheCapable": False}])
        try:
            yield process, base, ca_bundle
        finally:
            cluster.restart_scheduler()


@pytest.fixture(scope="module")
def classes(extended: tuple[RunProcess, str, str], kubectl: Kubectl) -> Iterator[dict[str, str]]:
    suffix = unique_name("x").split("-")[-1]
    names = {role: f"{role}-{suffix}" for role in ("high", "low", "protected", "protected-low")}
    values = {"high": 9000, "low": 8000, "protected": 8000, "protected-low": 7000}
    for role, name in names.items():
        notes = {MIN: "10000", TOL: "-1"} if role.startswith("protected") else {}
        kubectl("apply", "-f", "-", input=class_manifest(name, values[role], annotations=notes))
    yield names
    for name in names.values():
        kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)


async def extender_nodes(base: str, ca_bundle: str) -> dict[str, float]:
    """ptol_extender_nodes_total by choice, read from the server's /metrics."""
    context = ssl.create_default_context(cadata=base64.b64decode(ca_bundle).decode())
    async with aiohttp.ClientSession() as session, session.get(f"{base}/metrics", ssl=context) as response:
        text = await response.text()
    return {sample.labels["choice"]: sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == "ptol_extender_nodes_total"}


async def pod_names_on(api: ApiClient, namespace: str) -> dict[str, Any]:
    pods = (await client.CoreV1Api(api).list_namespaced_pod(namespace)).items
    return {pod.metadata.name: pod.spec.node_name for pod in pods}


async def test_a_preemptor_that_needs_a_protected_pod_deletes_nothing(
    api: ApiClient, namespace: str, make_node: MakeNode, classes: dict[str, str],
    extended: tuple[RunProcess, str, str],
) -> None:
    """Case a: one node of 3 CPUs, a plain and a protected pod of 1 CPU, a preemptor of 3 CPUs. As with
    upstream's plugin, the node is no candidate: nothing is deleted and the preemptor stays pending."""
    _, base, ca_bundle = extended
    node = (await make_node(cpu="3", memory="8Gi")).metadata.name
    before = (await extender_nodes(base, ca_bundle)).get("dropped", 0)
    await create_bound(api, namespace, "plain", classes["low"], node, cpu="1")
    await create_bound(api, namespace, "protected", classes["protected"], node, cpu="1")
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", classes["high"], node, cpu="3"))
    await eventually(lambda: extender_nodes(base, ca_bundle), lambda found: found.get("dropped", 0) > before,
                     timeout=60, what="the extender left the node out")
    for _ in range(SETTLE_SECONDS):
        assert await pod_names_on(api, namespace) == {"plain": node, "protected": node, "high": None}
        await asyncio.sleep(1)


async def test_the_scheduler_preempts_a_plain_pod_instead_of_the_protected_one_it_chose(
    api: ApiClient, namespace: str, make_node: MakeNode, classes: dict[str, str],
    extended: tuple[RunProcess, str, str],
) -> None:
    """Case c: the stock scheduler would preempt the protected pod (the lowest priority); the extender
    gives it one of the plain pods instead, which is the one preempted."""
    node = (await make_node(cpu="3", memory="8Gi")).metadata.name
    await create_bound(api, namespace, "protected", classes["protected-low"], node, cpu="1")
    await create_bound(api, namespace, "plain-a", classes["low"], node, cpu="1")
    await create_bound(api, namespace, "plain-b", classes["low"], node, cpu="1")
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", classes["high"], node, cpu="1"))
    await eventually(lambda: read_pod(api, namespace, "high"), lambda pod: node_of(pod) == node, timeout=90,
                     what="high bound")
    left = await pod_names_on(api, namespace)
    assert left["protected"] == node
    assert sorted(name for name in left if name.startswith("plain")) in (["plain-a"], ["plain-b"])
