"""The scheduler extender against the real kube-scheduler: with `ptol run` serving `/extender/preempt` and
the scheduler configured with config/scheduler's entry, the scheduler chooses only victims that do not
tolerate the preemptor (the issue's cases a, b, c), a waiting preemptor is retried when a toleration ends
(d), an extender outage leaves the guard alone in charge (f), and the guard knows the exact preemptor (g).
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration import pki
from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.devcluster.processes import free_port
from preemption_toleration.manifests.scheduler_extender import scheduler_extender
from tests.integration.components import RunProcess, Server, ptol_run_fixture, registered_extender, scheduler_extended
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import REACTION_SECONDS, START_SECONDS, eventually, unique_name
from tests.integration.objects import MIN, TOL, apply, class_manifest
from tests.integration.pods import create_bound, node_of, pod_body, read_pod, set_scheduled_at, stays, until_bound

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

GUARANTEE_SECONDS = 20


components = ptol_run_fixture(extended=True)  # the scheduler with config/scheduler's entry (ignorable, HTTPS)


@pytest.fixture(scope="module")
def classes(components: RunProcess, kubectl: Kubectl) -> Iterator[dict[str, str]]:
    suffix = unique_name("x").split("-")[-1]
    roles = {"critical": 10000, "high": 9000, "low": 8000, "protected": 8000, "protected-low": 7000, "guaranteed": 8000}
    names = {role: f"{role}-{suffix}" for role in roles}
    for role, name in names.items():
        notes = {MIN: "10000", TOL: "-1"} if role.startswith("protected") else {}
        if role == "guaranteed":
            notes = {MIN: "10000", TOL: str(GUARANTEE_SECONDS)}
        apply(kubectl, class_manifest(name, roles[role], annotations=notes))
    yield names
    for name in names.values():
        kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)


async def pod_names_on(api: ApiClient, namespace: str) -> dict[str, Any]:
    pods = (await client.CoreV1Api(api).list_namespaced_pod(namespace)).items
    return {pod.metadata.name: pod.spec.node_name for pod in pods}


def on_nodes(body: dict[str, Any], *nodes: str) -> dict[str, Any]:
    """The pod may go to any of these nodes (and no other node of the shared cluster)."""
    del body["spec"]["nodeSelector"]
    body["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": list(nodes)}]}
                ]
            }
        }
    }
    return body


async def test_a_preemptor_that_needs_a_protected_pod_deletes_nothing(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    classes: dict[str, str],
    server: Server,
) -> None:
    """Case a (the guard alone's known limit): one node of 3 CPUs, a plain and a protected pod of 1 CPU, a
    preemptor of 3 CPUs. As with upstream's plugin, the node is no candidate: nothing is deleted and the
    preemptor stays pending."""
    node = (await make_node(cpu="3", memory="8Gi")).metadata.name
    before = (await server.extender_nodes()).get("dropped", 0)
    refusals = await server.refusals()
    await create_bound(api, namespace, "plain", classes["low"], node, cpu="1")
    await create_bound(api, namespace, "protected", classes["protected"], node, cpu="1")
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", classes["high"], node, cpu="3"))
    await eventually(
        server.extender_nodes,
        lambda found: found.get("dropped", 0) > before,
        timeout=START_SECONDS,
        what="the extender left the node out",
    )
    await stays(api, namespace, "protected", "high", node, attempts=1, spared=("plain",))
    assert await pod_names_on(api, namespace) == {"plain": node, "protected": node, "high": None}
    assert await server.refusals() == refusals, "no protected pod was even asked for"


async def test_the_preemptor_goes_to_the_node_whose_victim_does_not_tolerate_it(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    classes: dict[str, str],
    server: Server,
) -> None:
    """Case b: node-a holds a protected pod of the lowest priority, which the stock scheduler would pick;
    node-b holds a plain pod. high preempts the plain pod on node-b, and the protected pod never receives
    a DELETE: the guard refuses nothing."""
    node_a = (await make_node(cpu="2", memory="8Gi")).metadata.name
    node_b = (await make_node(cpu="2", memory="8Gi")).metadata.name
    refusals = await server.refusals()
    await create_bound(api, namespace, "protected", classes["protected-low"], node_a, cpu="2")
    await create_bound(api, namespace, "plain", classes["low"], node_b, cpu="2")
    high = on_nodes(pod_body("high", classes["high"], node_a, cpu="2"), node_a, node_b)
    await client.CoreV1Api(api).create_namespaced_pod(namespace, high)
    await until_bound(api, namespace, "high", node_b)
    assert await pod_names_on(api, namespace) == {"protected": node_a, "high": node_b}
    assert await server.refusals() == refusals


async def test_the_scheduler_preempts_a_plain_pod_instead_of_the_protected_one_it_chose(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    classes: dict[str, str],
    server: Server,
) -> None:
    """Case c: the stock scheduler would preempt the protected pod (the lowest priority); the extender
    gives it one of the plain pods instead, which is the one preempted."""
    node = (await make_node(cpu="3", memory="8Gi")).metadata.name
    await create_bound(api, namespace, "protected", classes["protected-low"], node, cpu="1")
    await create_bound(api, namespace, "plain-a", classes["low"], node, cpu="1")
    await create_bound(api, namespace, "plain-b", classes["low"], node, cpu="1")
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", classes["high"], node, cpu="1"))
    await until_bound(api, namespace, "high", node)
    left = await pod_names_on(api, namespace)
    assert left["protected"] == node
    assert sorted(name for name in left if name.startswith("plain")) in (["plain-a"], ["plain-b"])


def _scheduled_at(pod: dict[str, Any]) -> datetime:
    [condition] = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    moment = condition["lastTransitionTime"]
    return moment if isinstance(moment, datetime) else datetime.fromisoformat(moment.replace("Z", "+00:00"))


async def _deleted_at(api: ApiClient, namespace: str, name: str, timeout: float) -> datetime:
    """When the pod was first seen deleting or gone (polled every 0.1 s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = await read_pod(api, namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return datetime.now(UTC)
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} was not preempted within {timeout:.0f} s")


async def test_a_preemptor_held_back_by_a_time_limited_toleration_preempts_when_it_ends(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    classes: dict[str, str],
    server: Server,
) -> None:
    """Case d: a 20 s guarantee ends, and high preempts the pod within 3 s of the end, counted from the
    victim's PodScheduled time plus 20 s: the expiry nudge re-queues high, instead of the scheduler's
    periodic retry a minute or more later."""
    node = (await make_node(cpu="3", memory="8Gi")).metadata.name
    victim = await create_bound(api, namespace, "victim", classes["guaranteed"], node, cpu="2")
    end = _scheduled_at(victim) + timedelta(seconds=GUARANTEE_SECONDS)
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", classes["high"], node, cpu="2"))
    nudged = (await server.metric("ptol_preemptor_nudges_total", "outcome")).get("nudged", 0)
    deleted = await _deleted_at(api, namespace, "victim", timeout=GUARANTEE_SECONDS + 60)
    assert end <= deleted <= end + timedelta(seconds=3), f"preempted {(deleted - end).total_seconds():.1f} s after"
    assert (await server.metric("ptol_preemptor_nudges_total", "outcome")).get("nudged", 0) == nudged + 1
    await until_bound(api, namespace, "high", node)


async def test_the_guard_judges_against_the_preemptor_the_scheduler_works_on(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    classes: dict[str, str],
    components: RunProcess,
    server: Server,
    kubectl: Kubectl,
) -> None:
    """Case g: critical pends for an unrelated reason (64 CPUs), while the scheduler works on high, which
    the victim tolerates. The extender leaves the node out; should the scheduler delete the victim anyway
    (an ignored extender answer, played here by a DELETE as the scheduler), the guard refuses it for high,
    where inference alone would name critical and allow it."""
    process = components
    node = (await make_node(cpu="3", memory="8Gi")).metadata.name
    await create_bound(api, namespace, "victim", classes["protected"], node, cpu="2")
    await client.CoreV1Api(api).create_namespaced_pod(
        namespace, pod_body("critical", classes["critical"], node, cpu="64")
    )
    sources = await server.metric("ptol_guard_preemptor_source_total", "source")
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", classes["high"], node, cpu="2"))
    await eventually(
        lambda: asyncio.to_thread(_extender_decisions_for, process, f"{namespace}/high"),
        bool,
        timeout=START_SECONDS,
        what="the extender called for high",
    )
    refused = kubectl(
        "delete", "pod", "victim", "-n", namespace, "--as=system:kube-scheduler", "--wait=false", check=False
    )
    assert refused.returncode != 0, "the guard allowed the preemption"
    assert f"the preemptor ({namespace}/high, priority 9000)" in refused.stderr
    after = await server.metric("ptol_guard_preemptor_source_total", "source")
    assert after.get("recorded", 0) > sources.get("recorded", 0)
    assert node_of(await read_pod(api, namespace, "victim")) == node


def _extender_decisions_for(process: RunProcess, preemptor: str) -> list[str]:
    return [line for line in process.log().splitlines() if "extender node decision" in line and preemptor in line]


def _serving_files(directory: Path) -> tuple[Path, Path, str]:
    """A CA and a serving pair for 127.0.0.1: (cert file, key file, base64 CA)."""
    ca = pki.generate_ca("extender-test-ca")
    serving = pki.issue_serving_cert(ca, "localhost", dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    cert, key = directory / "extender.crt", directory / "extender.key"
    cert.write_bytes(serving.cert_pem)
    key.write_bytes(serving.key_pem)
    return cert, key, base64.b64encode(ca.cert_pem).decode()


async def test_an_extender_outage_leaves_scheduling_to_the_guard_alone(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    classes: dict[str, str],
    server: Server,
    cluster: LocalCluster,
    tmp_path: Path,
) -> None:
    """Case f: the scheduler's extender is a second `ptol webhook`, killed with SIGKILL. Scheduling goes on
    (the extender is ignorable), and the guard of `ptol run` still refuses the protected victim."""
    cert, key, ca_data = _serving_files(tmp_path)
    port = free_port()
    extender = ComponentProcess(
        "webhook",
        cluster.kubeconfig,
        Path(cluster.logs_dir) / "extender-webhook.log",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--cert-file",
        str(cert),
        "--key-file",
        str(key),
    )
    since = extender.start()
    try:
        extender.wait_for("webhook server listening", since, timeout=START_SECONDS)
        with scheduler_extended(
            cluster,
            scheduler_extender(f"https://127.0.0.1:{port}/extender", ca_data),
            after=[registered_extender(cluster)],
        ):
            assert extender.process is not None
            extender.process.kill()
            extender.process.wait()
            node = (await make_node(cpu="3", memory="8Gi")).metadata.name
            refusals = await server.refusals()
            await create_bound(api, namespace, "protected", classes["protected"], node, cpu="2")
            await create_bound(api, namespace, "other", classes["low"], node, cpu="1")  # scheduling goes on
            await client.CoreV1Api(api).create_namespaced_pod(
                namespace, pod_body("high", classes["high"], node, cpu="2")
            )
            await eventually(
                server.refusals,
                lambda count: count > refusals,
                timeout=START_SECONDS,
                what="the guard refusing the protected victim",
            )
            assert node_of(await read_pod(api, namespace, "protected")) == node
            assert node_of(await read_pod(api, namespace, "high")) is None
    finally:
        extender.stop()


# --- Three departures from upstream's victim choice, found by a differential run against upstream's plugin:
# each reproduction, on the real scheduler with the extender, ends as upstream's plugin ends it.


@pytest.fixture(scope="module")
def upstream_classes(components: RunProcess, kubectl: Kubectl) -> Iterator[dict[str, str]]:
    suffix = unique_name("u").split("-")[-1]
    values = {"low": 1000, "mid": 1050, "high": 1100, "pre": 1200, "top": 1300, "prot": 900, "exempt": 1050}
    names = {role: f"u{role}-{suffix}" for role in values}
    for role, name in names.items():
        notes = {MIN: "5000", TOL: "-1"} if role in ("prot", "exempt") else {}
        apply(kubectl, class_manifest(name, values[role], annotations=notes))
    yield names
    for name in names.values():
        kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)


def labelled(body: dict[str, Any], **labels: str) -> dict[str, Any]:
    body["metadata"]["labels"] = labels
    return body


async def bound(api: ApiClient, namespace: str, body: dict[str, Any]) -> None:
    await client.CoreV1Api(api).create_namespaced_pod(namespace, body)
    name, node = body["metadata"]["name"], body["spec"]["nodeSelector"]["kubernetes.io/hostname"]
    await until_bound(api, namespace, name, node, timeout=REACTION_SECONDS)


async def budget_allows(api: ApiClient, namespace: str, min_available: int, allowed: int, **selector: str) -> None:
    """A PodDisruptionBudget, once the disruption controller says it allows `allowed` disruptions."""
    policy = client.PolicyV1Api(api)
    await policy.create_namespaced_pod_disruption_budget(
        namespace,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "budget"},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": selector}},
        },
    )
    await eventually(
        lambda: policy.read_namespaced_pod_disruption_budget("budget", namespace),
        lambda pdb: (
            pdb.status is not None
            and pdb.status.observed_generation == pdb.metadata.generation
            and pdb.status.current_healthy == min_available + allowed
            and pdb.status.disruptions_allowed == allowed
        ),
        timeout=START_SECONDS,
        what=f"the budget allowing {allowed}",
    )


async def test_equal_priorities_are_ordered_by_start_time_as_upstream_does(
    api: ApiClient, namespace: str, make_node: MakeNode, upstream_classes: dict[str, str]
) -> None:
    """a and b (low) were scheduled 110 s and 105 s ago, but b started first (50 s ago, a 20 s ago). The
    scheduler picks the protected p; the extender chooses again, and, as upstream's MoreImportantPod orders
    by status.startTime, keeps b and preempts a."""
    classes = upstream_classes
    node = (await make_node(cpu="3", memory="8Gi", pods="5")).metadata.name
    now = datetime.now(UTC)
    for name, scheduled, started in (("a", 110, 20), ("b", 105, 50)):
        await bound(api, namespace, pod_body(name, classes["low"], node, cpu="1"))
        await set_scheduled_at(
            api, namespace, name, now - timedelta(seconds=scheduled), started=now - timedelta(seconds=started)
        )
    await bound(api, namespace, pod_body("p", classes["prot"], node, cpu="1"))
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("pre", classes["pre"], node, cpu="1"))
    await until_bound(api, namespace, "pre", node)
    assert await pod_names_on(api, namespace) == {"b": node, "p": node, "pre": node}


async def test_victims_are_returned_most_important_first_as_upstream_sorts_them(
    api: ApiClient, namespace: str, make_node: MakeNode, upstream_classes: dict[str, str]
) -> None:
    """Node na: l (low, under a budget with no disruption left), h (high), p (protected); node nb: m (mid,
    the budget's other pod), k (low). On na the victims are h and l, with one violation; on nb m, with one.
    The scheduler compares the nodes' first victims: sorted, h (1100) against m (1050), so nb, as upstream;
    unsorted, l (1000) would have won na."""
    classes = upstream_classes
    na = (await make_node(cpu="4", memory="8Gi")).metadata.name
    nb = (await make_node(cpu="4", memory="8Gi")).metadata.name
    await bound(api, namespace, labelled(pod_body("l", classes["low"], na, cpu="1"), grp="a"))
    await bound(api, namespace, pod_body("h", classes["high"], na, cpu="1"))
    await bound(api, namespace, pod_body("p", classes["prot"], na, cpu="1"))
    await bound(api, namespace, labelled(pod_body("m", classes["mid"], nb, cpu="2"), grp="a"))
    await bound(api, namespace, pod_body("k", classes["low"], nb, cpu="1"))
    await budget_allows(api, namespace, 2, 0, grp="a")
    await client.CoreV1Api(api).create_namespaced_pod(
        namespace, on_nodes(pod_body("pre", classes["pre"], na, cpu="3"), na, nb)
    )
    await until_bound(api, namespace, "pre", nb)
    assert await pod_names_on(api, namespace) == {"l": na, "h": na, "p": na, "k": nb, "pre": nb}


async def test_a_pod_that_tolerates_the_preemptor_uses_none_of_a_budget(
    api: ApiClient, namespace: str, make_node: MakeNode, upstream_classes: dict[str, str]
) -> None:
    """Node nc: t1 (top), x (low) and e (exempt), x and e under a budget that allows one disruption; node
    nd: t2 (top), y (high). The scheduler's dry run spends the budget's disruption on e and counts x as
    violating, which sends the preemptor to nd. Upstream leaves e out: x violates nothing, and nc wins on
    the lower victim priority."""
    classes = upstream_classes
    nc = (await make_node(cpu="3500m", memory="8Gi")).metadata.name
    nd = (await make_node(cpu="3500m", memory="8Gi")).metadata.name
    await bound(api, namespace, pod_body("t1", classes["top"], nc, cpu="1"))
    await bound(api, namespace, labelled(pod_body("x", classes["low"], nc, cpu="2"), grp="a"))
    await bound(api, namespace, labelled(pod_body("e", classes["exempt"], nc, cpu="500m"), grp="a"))
    await bound(api, namespace, pod_body("t2", classes["top"], nd, cpu="1500m"))
    await bound(api, namespace, pod_body("y", classes["high"], nd, cpu="2"))
    await budget_allows(api, namespace, 1, 1, grp="a")
    await client.CoreV1Api(api).create_namespaced_pod(
        namespace, on_nodes(pod_body("pre", classes["pre"], nc, cpu="1500m"), nc, nd)
    )
    await until_bound(api, namespace, "pre", nc)
    assert await pod_names_on(api, namespace) == {"t1": nc, "e": nc, "t2": nd, "y": nd, "pre": nc}


async def test_the_extender_answers_the_scheduler_and_no_caller_without_its_client_certificate(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    classes: dict[str, str],
    server: Server,
    cluster: LocalCluster,
    tmp_path: Path,
) -> None:
    """The extender endpoint trusts the cluster's CA for client certificates (`ptol run`'s default): a caller
    without a certificate gets 403 and what to do, one with a certificate of another CA cannot even connect,
    and kube-scheduler, presenting its own certificate (LocalCluster gives it as certData/keyData), is
    served: a preemption goes through the extender."""
    url = f"{server.base}/extender/preempt"
    body = {"pod": {"metadata": {"name": "x", "namespace": namespace, "uid": "u"}}, "nodeNameToMetaVictims": {}}
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json=body, ssl=server.context) as response:
            assert response.status == 403
            assert "presents a client certificate signed by the CA" in (await response.json())["error"]
        stranger_ca = pki.generate_ca("not-the-cluster-ca")
        stranger = pki.issue_client_cert(stranger_ca, "system:kube-scheduler")
        (tmp_path / "c.crt").write_bytes(stranger.cert_pem)
        (tmp_path / "c.key").write_bytes(stranger.key_pem)
        context = ssl.create_default_context(cadata=base64.b64decode(entry_ca(cluster)).decode())
        context.load_cert_chain(tmp_path / "c.crt", tmp_path / "c.key")
        with pytest.raises(aiohttp.ClientError):
            async with session.post(url, json=body, ssl=context) as response:
                await response.read()
    # the scheduler's own calls are served: the extender chooses the victims of a preemption
    before = sum((await server.extender_nodes()).values())
    node = (await make_node(cpu="2", memory="8Gi")).metadata.name
    await create_bound(api, namespace, "plain-auth", classes["low"], node, cpu="2")
    preemptor = on_nodes(pod_body("high-auth", classes["high"], node, cpu="2"), node)
    await client.CoreV1Api(api).create_namespaced_pod(namespace, preemptor)
    await until_bound(api, namespace, "high-auth", node)
    assert sum((await server.extender_nodes()).values()) > before


def entry_ca(cluster: LocalCluster) -> str:
    return str(registered_extender(cluster)["tlsConfig"]["caData"])
