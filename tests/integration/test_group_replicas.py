"""The guard's one decision per victim group of `disruptionMode: all` and preemption with the chart's two
webhook replicas (`tests.integration.replicas`) on the pod-group control plane (Kubernetes 1.37): the
scheduler deletes a group's members in parallel, its requests spread over both replicas, and stops at the
first refusal without restoring what it deleted. A toleration that ends while the scheduler retries must end
for both replicas at once: the group is refused whole, then preempted whole, never left in part; round after
round, and with a replica that joins late, its memory empty, in the middle of the refusals."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.guard.adapter.partial_groups import BATCH_SECONDS
from preemption_toleration.guard.group_claims import DECISION, lease_name
from tests.integration import groups
from tests.integration.chart import slate
from tests.integration.components import INSTALL_NAMESPACE
from tests.integration.conftest import Kubectl
from tests.integration.groups import (
    GROUP,
    PLURAL,
    VERSION,
    create_group,
    half_over,
    placed,
    read_group,
    until_all_gone,
    until_placed,
)
from tests.integration.helpers import SCHEDULING_SECONDS, eventually
from tests.integration.replicas import Replicas, until_registered, webhook_replicas

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


async def refused_then_preempted_whole(
    api: ApiClient,
    namespace: str,
    nodes: list[str],
    replicas: Replicas,
    classes: dict[str, str],
    name: str,
    late: int | None = None,
) -> None:
    """One round: a group of 4 members protected 20 s from now, whole (two of them scheduled a minute ago),
    filling both nodes; a preemptor group of 2 that needs their room. Refused while the toleration runs, then
    preempted whole; `late`: the replica that joins once the refusals began. The preemptors go after."""
    victims = await half_over(api, namespace, classes["guarded"], f"{name}-victims")
    before = sum(await replicas.totals("ptol_guard_refusals_total"))
    preemptors = await create_group(api, namespace, f"{name}-preemptors", classes["high"], 2)
    await eventually(
        lambda: replicas.totals("ptol_guard_refusals_total"),
        lambda found: sum(found) > before,
        timeout=SCHEDULING_SECONDS,
        what="a refusal",
    )
    if late is not None:
        await asyncio.to_thread(replicas.join_late, late)
    found = await placed(api, namespace, [*victims, *preemptors])
    assert all(found[victim] in nodes for victim in victims), found  # refused whole: every member runs
    # The scheduler retries until the toleration ends, then deletes the members through both replicas.
    await until_all_gone(api, namespace, victims)
    await until_placed(api, namespace, preemptors)
    await asyncio.sleep(BATCH_SECONDS + 1)
    assert sum(await replicas.totals("ptol_guard_groups_left_in_part_total")) == 0, name
    # The decisions were the replicas' shared claim: the group's Lease holds the last one, an allowance.
    uid = (await read_group(api, namespace, f"{name}-victims"))["metadata"]["uid"]
    lease = await client.CoordinationV1Api(api).read_namespaced_lease(lease_name(uid), INSTALL_NAMESPACE)
    assert '"refused":false' in lease.metadata.annotations[DECISION]
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    for preemptor in preemptors:
        await core.delete_namespaced_pod(preemptor, namespace, grace_period_seconds=0)
    for group in (f"{name}-victims", f"{name}-preemptors"):
        await custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, group)
    await until_all_gone(api, namespace, preemptors)


async def test_a_toleration_that_ends_while_the_scheduler_retries_ends_for_both_replicas_at_once(
    group_api: ApiClient,
    group_namespace: str,
    group_nodes: list[str],
    group_kubectl: Kubectl,
    replicas: Replicas,
    classes: dict[str, str],
) -> None:
    await until_registered(group_kubectl)
    for round_ in range(2):
        await refused_then_preempted_whole(group_api, group_namespace, group_nodes, replicas, classes, f"r{round_}")
    made = await replicas.totals("ptol_guard_group_decisions_total", outcome="made")
    assert sum(made) >= 4, made  # each round's refusal, and its allowance once the toleration ended
    # A replica that joins late, with nothing in memory, in the middle of a group's refusals.
    replicas.route([0])
    replicas.processes[1].stop()
    await refused_then_preempted_whole(group_api, group_namespace, group_nodes, replicas, classes, "late", late=1)
