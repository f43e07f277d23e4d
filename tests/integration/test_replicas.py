"""Two webhook replicas behind the one Service, as the chart runs them (its default `webhook.replicas`), with
steering on and the extender off (a managed cluster; `tests.integration.replicas`). What one replica knows,
the other must not contradict: a Lease left acting is acted on once, and one preemption is steered once,
whichever replica the scheduler's requests reach."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.steering.adapter.steering_leases import DONE, LEASE_PREFIX, STATE
from tests.integration import steering as bed
from tests.integration.chart import clean_slate
from tests.integration.components import INSTALL_NAMESPACE
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import REACTION_SECONDS, eventually
from tests.integration.pods import create_bound, read_pod, until_bound, until_gone
from tests.integration.replicas import Replicas, until_registered, webhook_replicas
from tests.integration.test_extender_victims import pod_names_on

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]
__all__ = ["clean_slate"]  # a fixture

REPLICAS = 2


@pytest.fixture
def replicas(cluster: LocalCluster, kubectl: Kubectl, clean_slate: None, tmp_path: Path) -> Iterator[Replicas]:
    """The chart installed with steering on and the extender off; its webhook replicas made, not started."""
    values = ("--set", "guard.steering=on", "--set", "extender.enabled=false")
    with webhook_replicas(cluster, kubectl, tmp_path, REPLICAS, *values) as found:
        yield found


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
