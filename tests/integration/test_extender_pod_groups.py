"""The scheduler extender and pod groups on the pod-group control plane (Kubernetes 1.37, `--feature
pod-groups`): the scheduler proposes a `disruptionMode: all` group whole as one node's victims, its members
on other nodes included, and takes from the extender's answer only the pods of that node
(`docs/scheduler-extender.md`, "Pod groups"). The extender leaves out a node whose group tolerates the
preemptor, so the scheduler does not even try it; and where it chooses a node's victims again, it never takes
part of a group."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.guard.adapter.partial_groups import BATCH_SECONDS
from tests.integration import groups
from tests.integration.components import RunProcess, Server, ptol_run, scheduler_extended
from tests.integration.groups import placed, placed_group, until_all_gone, until_placed
from tests.integration.helpers import SCHEDULING_SECONDS, eventually
from tests.integration.pods import pod_body, until_bound, until_gone
from tests.integration.test_guard_pod_groups import half_over

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@pytest.fixture(scope="module")
def extender(group_cluster: LocalCluster) -> Iterator[RunProcess]:
    """`ptol run` on the pod-group control plane, its scheduler calling it as its extender."""
    with ptol_run(group_cluster, "--resync-seconds", "3") as process, scheduler_extended(group_cluster):
        yield process


@pytest.fixture
async def classes(group_api: ApiClient, extender: RunProcess) -> AsyncIterator[dict[str, str]]:
    async with groups.priority_classes(group_api, "high", "guarded", "plain", "low-guarded", "forever") as names:
        yield names


async def test_a_protected_group_across_nodes_is_left_out_until_its_toleration_ends_then_preempted_whole(
    group_api: ApiClient, group_namespace: str, group_nodes: list[str], classes: dict[str, str], extender: RunProcess
) -> None:
    """A lone pod of `high` needs a member's room on the first node: the scheduler proposes the group whole,
    two members on the other node included. While the group's 20 s run, the extender leaves the node out and
    the scheduler deletes nothing: the guard is not even asked. Then the scheduler preempts the group whole, as
    it chose (the extender's answer, which names members of the other node, is one it cannot take)."""
    server = Server.of(extender)
    victims = await half_over(group_api, group_namespace, classes["guarded"])
    refusals, nodes = await server.refusals(), await server.extender_nodes()
    core = client.CoreV1Api(group_api)
    await core.create_namespaced_pod(group_namespace, pod_body("lone", classes["high"], group_nodes[0], cpu="1"))
    await eventually(
        server.extender_nodes,
        lambda found: found.get("dropped", 0) > nodes.get("dropped", 0),
        timeout=SCHEDULING_SECONDS,
        what="the node left out",
    )
    found = await placed(group_api, group_namespace, [*victims, "lone"])
    assert all(found[victim] in group_nodes for victim in victims) and found["lone"] is None, found
    assert await server.refusals() == refusals  # no deletion tried: the scheduler chose no protected victim
    await until_all_gone(group_api, group_namespace, victims)
    await until_bound(group_api, group_namespace, "lone", group_nodes[0])
    assert (await server.extender_nodes()).get("across-nodes", 0) > nodes.get("across-nodes", 0)
    await asyncio.sleep(BATCH_SECONDS + 1)
    assert await server.total("ptol_guard_groups_left_in_part_total") == 0


async def test_victims_chosen_again_never_take_part_of_a_group(
    group_api: ApiClient, group_namespace: str, group_nodes: list[str], classes: dict[str, str], extender: RunProcess
) -> None:
    """The first node holds a plain `all` group of two members of 500m and a pod of 1 CPU protected 20 s, of
    a lower priority than the group's; a lone pod of `high` of 500m must go there. The scheduler keeps the group
    (its higher priority) and proposes the protected pod; chosen again pod by pod, one member would do, and
    the group would be left in part. The extender leaves the node out instead: the lone pod waits for the
    protection to end, then the protected pod goes, and the group runs whole throughout."""
    server = Server.of(extender)
    core = client.CoreV1Api(group_api)
    first, other = group_nodes
    await core.create_namespaced_pod(group_namespace, pod_body("filler", classes["forever"], other, cpu="2"))
    await until_bound(group_api, group_namespace, "filler", other)
    members = await placed_group(group_api, group_namespace, "g", classes["plain"], 2, cpu="500m")
    await core.create_namespaced_pod(group_namespace, pod_body("protected", classes["low-guarded"], first, cpu="1"))
    await until_bound(group_api, group_namespace, "protected", first)
    nodes = await server.extender_nodes()
    await core.create_namespaced_pod(group_namespace, pod_body("lone", classes["high"], first, cpu="500m"))
    await eventually(
        server.extender_nodes,
        lambda found: found.get("dropped", 0) > nodes.get("dropped", 0),
        timeout=SCHEDULING_SECONDS,
        what="the node left out",
    )
    await until_gone(group_api, group_namespace, "protected")
    await until_bound(group_api, group_namespace, "lone", first)
    assert await until_placed(group_api, group_namespace, members) == {member: first for member in members}
    await asyncio.sleep(BATCH_SECONDS + 1)
    assert await server.total("ptol_guard_groups_left_in_part_total") == 0
