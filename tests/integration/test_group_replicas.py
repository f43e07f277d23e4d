"""The guard's one decision per victim group of `disruptionMode: all` and preemption with the chart's two
webhook replicas (`tests.integration.replicas`) on the pod-group control plane (Kubernetes 1.37): the
scheduler deletes a group's members in parallel, its requests spread over both replicas, and stops at the
first refusal without restoring what it deleted. A toleration that ends while the scheduler retries must end
for both replicas at once: the group is refused whole, then preempted whole, never left in part."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.guard.group_claims import DECISION, lease_name
from preemption_toleration.webhooks.partial_groups import BATCH_SECONDS
from tests.integration import groups
from tests.integration.chart import slate
from tests.integration.components import INSTALL_NAMESPACE
from tests.integration.conftest import Kubectl
from tests.integration.groups import create_group, placed, read_group, until_all_gone, until_placed
from tests.integration.helpers import SCHEDULING_SECONDS, eventually
from tests.integration.replicas import Replicas, until_registered, webhook_replicas
from tests.integration.test_guard_pod_groups import half_over

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@pytest.fixture
def replicas(group_cluster: LocalCluster, group_kubectl: Kubectl, tmp_path: Path) -> Iterator[Replicas]:
    """The chart on the pod-group control plane, the extender off (a managed cluster), two replicas started."""
    with (
        slate(group_cluster, group_kubectl),
        webhook_replicas(group_cluster, group_kubectl, tmp_path, 2, "--set", "extender.enabled=false") as found,
    ):
        found.start()
        yield found


@pytest.fixture
async def classes(group_api: ApiClient) -> AsyncIterator[dict[str, str]]:
    async with groups.priority_classes(group_api, "high", "guarded") as names:
        yield names


async def test_a_toleration_that_ends_while_the_scheduler_retries_ends_for_both_replicas_at_once(
    group_api: ApiClient,
    group_namespace: str,
    group_nodes: list[str],
    group_kubectl: Kubectl,
    replicas: Replicas,
    classes: dict[str, str],
) -> None:
    await until_registered(group_kubectl)
    victims = await half_over(group_api, group_namespace, classes["guarded"])  # protected 20 s, whole
    preemptors = await create_group(group_api, group_namespace, "preemptors", classes["high"], 2)
    refused = await eventually(
        lambda: replicas.totals("ptol_guard_refusals_total"),
        lambda found: sum(found) > 0,
        timeout=SCHEDULING_SECONDS,
        what="a refusal",
    )
    found = await placed(group_api, group_namespace, [*victims, *preemptors])
    assert all(found[victim] in group_nodes for victim in victims), (found, refused)
    # The scheduler retries until the toleration ends, then deletes the members through both replicas.
    await until_all_gone(group_api, group_namespace, victims)
    await until_placed(group_api, group_namespace, preemptors)
    await asyncio.sleep(BATCH_SECONDS + 1)
    assert sum(await replicas.totals("ptol_guard_groups_left_in_part_total")) == 0
    # The decisions were the replicas' shared claim: the group's Lease holds the last one, an allowance.
    uid = (await read_group(group_api, group_namespace, "victims"))["metadata"]["uid"]
    lease = await client.CoordinationV1Api(group_api).read_namespaced_lease(lease_name(uid), INSTALL_NAMESPACE)
    assert '"refused":false' in lease.metadata.annotations[DECISION]
    made = await replicas.totals("ptol_guard_group_decisions_total", outcome="made")
    assert sum(made) >= 2, made  # the refusal, and the allowance once it ended
