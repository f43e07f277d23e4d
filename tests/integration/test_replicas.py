"""Two webhook replicas behind the one Service, as the chart runs them (its default `webhook.replicas`), with
steering on and the extender off (a managed cluster): both are `ptol webhook` with the installed
Deployment's arguments and a token of the chart's ServiceAccount, and the test bed's service proxy spreads
the API server's connections over them, as kube-proxy spreads them over a Service's pods. What one replica
knows, the other must not contradict: a Lease left acting is acted on once, and one preemption is steered
once, whichever replica the scheduler's requests reach."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import ExitStack
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.devcluster.processes import free_port
from preemption_toleration.webhooks.steering_leases import DONE, LEASE_PREFIX, STATE
from tests.integration import steering as bed
from tests.integration.chart import (
    SERVICE,
    clean_slate,
    container_args,
    install_release,
    live,
    logs_on_failure,
    registered,
    token_kubeconfig,
)
from tests.integration.components import INSTALL_NAMESPACE
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import REACTION_SECONDS, START_SECONDS, eventually, with_value
from tests.integration.pods import create_bound, read_pod, until_bound, until_gone
from tests.integration.steering import steering_classes
from tests.integration.test_extender_victims import pod_names_on
from tests.metrics import total

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]
__all__ = ["clean_slate", "steering_classes"]  # fixtures

UNPULLABLE = "registry.invalid/preemption-toleration"  # no pod of the release runs: the processes are ours
REPLICAS = 2


class Replicas:
    """The release's webhook replicas: processes of this machine, each on a port of its own."""

    def __init__(self, processes: list[ComponentProcess], metrics: list[int]) -> None:
        self.processes = processes
        self.metrics = metrics

    def start(self) -> None:
        """Every replica at once, then each until it listens."""
        since = [process.start() for process in self.processes]
        for process, start in zip(self.processes, since, strict=True):
            process.wait_for("webhook server listening", start, timeout=START_SECONDS)

    def stop(self) -> None:
        for process in self.processes:
            process.stop()

    async def steering(self, outcome: str) -> list[float]:
        """Each replica's count of `ptol_steering_total{outcome}`."""
        found = []
        async with aiohttp.ClientSession() as session:
            for port in self.metrics:
                async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                    found.append(total(await response.text(), "ptol_steering_total", outcome=outcome))
        return found


@pytest.fixture
async def replicas(
    cluster: LocalCluster, kubectl: Kubectl, clean_slate: None, tmp_path: Path
) -> AsyncIterator[Replicas]:
    """The chart installed with steering on and the extender off; its webhook replicas made, not started."""
    installed = install_release(
        cluster,
        "--set",
        f"image.repository={UNPULLABLE}",
        "--set",
        "guard.steering=on",
        "--set",
        "extender.enabled=false",
        "--set",
        f"webhook.replicas={REPLICAS}",
        # the release's own pods (their image is never pulled here) stay pending: on the test's nodes, of their
        # high priority, they would preempt the tests' pods
        "--set-string",
        "nodeSelector.preemption-toleration\\.dev/no-such-node=true",
    )
    assert installed.returncode == 0, installed.stderr
    kubeconfig = token_kubeconfig(cluster, kubectl, "webhook", tmp_path / "webhook.kubeconfig")
    arguments = container_args(kubectl, SERVICE)[1:]
    ports, metrics = [free_port() for _ in range(REPLICAS)], [free_port() for _ in range(REPLICAS)]
    processes = [
        ComponentProcess(
            "webhook",
            kubeconfig,
            tmp_path / f"webhook-{index}.log",
            *with_value(arguments, "--metrics-address", f"127.0.0.1:{metrics[index]}"),
            "--host",
            "127.0.0.1",
            "--port",
            str(ports[index]),
            env={"POD_NAME": f"webhook-{index}"},
        )
        for index in range(REPLICAS)
    ]
    service = live(kubectl, "service", SERVICE, "-n", INSTALL_NAMESPACE)
    cluster.route_service(service["spec"]["clusterIP"], 443, [f"127.0.0.1:{port}" for port in ports])
    found = Replicas(processes, metrics)
    with ExitStack() as stack:
        stack.callback(found.stop)
        stack.enter_context(logs_on_failure(*processes))
        yield found


async def until_registered(kubectl: Kubectl) -> None:
    async def configurations() -> int:
        return len(registered(kubectl))

    await eventually(configurations, lambda found: found == 3, timeout=START_SECONDS, what="registration")


async def test_one_lease_left_acting_is_acted_on_once_by_two_replicas_starting_together(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    replicas: Replicas,
    kubectl: Kubectl,
    steering_classes: dict[str, str],
) -> None:
    """A replica stopped in the middle of an action for a preemptor it had nominated: its Lease is left acting.
    Both replicas start at once and find it: one takes it over (a write at the version both read), the other
    finds it claimed; the victim a fresh plan chooses is preempted once."""
    node = (await make_node(cpu="1", memory="8Gi")).metadata.name
    plain = await create_bound(api, namespace, "plain", steering_classes["low"], node, cpu="1")
    preemptor = await bed.held_pending(api, namespace, "pending", steering_classes["high"], nominated=node)
    listed = f"{namespace}/plain={plain['metadata']['uid']}"
    lease = bed.left_lease(preemptor["uid"], f"{namespace}/pending", node, listed, 20)
    coordination = client.CoordinationV1Api(api)
    await coordination.create_namespaced_lease(INSTALL_NAMESPACE, lease)
    replicas.start()
    await until_gone(api, namespace, "plain")
    lease_name = LEASE_PREFIX + preemptor["uid"]
    looked_at = "steering: the actions left in the middle were looked at"

    async def logs() -> list[str]:
        return [process.log() for process in replicas.processes]

    await eventually(
        logs, lambda found: all(looked_at in log for log in found), timeout=REACTION_SECONDS, what=looked_at
    )
    # the other replica found the Lease claimed, or already done
    assert sum(await replicas.steering("resumed")) == 1
    assert sum(await replicas.steering("claimed-elsewhere")) <= 1
    state = (await coordination.read_namespaced_lease(lease_name, INSTALL_NAMESPACE)).metadata.annotations
    assert state[STATE] == DONE
    nominated = await read_pod(api, namespace, "pending")
    assert (nominated or {}).get("status", {}).get("nominatedNodeName") == node
    await coordination.delete_namespaced_lease(lease_name, INSTALL_NAMESPACE)


async def test_a_preemption_refused_through_two_replicas_is_steered_once(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    replicas: Replicas,
    kubectl: Kubectl,
    steering_classes: dict[str, str],
) -> None:
    """The managed-cluster scenario: the stock scheduler picks the protected pod's node, the guard (either
    replica) refuses, and steering (whichever replica the refusal reached) preempts the plain pod upstream's
    plugin would have chosen: the preemptor is bound there, the protected pod stays, one action in all."""
    replicas.start()
    await until_registered(kubectl)
    node_a, node_b, preemptor = await bed.two_full_nodes(api, namespace, make_node, steering_classes)
    await client.CoreV1Api(api).create_namespaced_pod(namespace, preemptor)
    await until_bound(api, namespace, "high", node_b, timeout=REACTION_SECONDS)
    assert await pod_names_on(api, namespace) == {"protected": node_a, "high": node_b}
    steered = await eventually(
        lambda: replicas.steering("steered"), lambda found: sum(found) >= 1, timeout=REACTION_SECONDS, what="steered"
    )
    assert sum(steered) == 1, steered
    await bed.event_of(api, namespace, "high", "PreemptionSteered")
    assert len(await bed.events(api, namespace, "high", "PreemptionSteered")) == 1
