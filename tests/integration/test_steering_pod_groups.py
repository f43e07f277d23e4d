"""Steering on a control plane with pod groups (Kubernetes 1.37, `--feature pod-groups`): it makes a pod's
preemption, node by node, and the scheduler preempts groups across nodes, so it declines every preemption
of or for a group, saying so (a metric, an Event on the preemptor), and never acts in part."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from tests.integration import groups
from tests.integration.components import RunProcess, Server, ptol_run
from tests.integration.groups import create_group, placed
from tests.integration.helpers import SCHEDULING_SECONDS, eventually

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@pytest.fixture(scope="module")
def steering(group_cluster: LocalCluster) -> Iterator[RunProcess]:
    with ptol_run(group_cluster, "--extender", "off", "--steering", "on") as process:
        yield process


@pytest.fixture
async def classes(group_api: ApiClient, steering: RunProcess) -> AsyncIterator[dict[str, str]]:
    async with groups.priority_classes(group_api, "high", "forever") as names:
        yield names


async def test_steering_declines_a_groups_preemption_and_says_so(
    group_api: ApiClient, group_namespace: str, group_nodes: list[str], classes: dict[str, str], steering: RunProcess
) -> None:
    server = Server.of(steering)
    victims = await groups.placed_group(group_api, group_namespace, "victims", classes["forever"], 4)
    preemptors = await create_group(group_api, group_namespace, "preemptors", classes["high"], 2)

    async def declined() -> float:
        return (await server.metric("ptol_steering_total", "outcome")).get("pod-group", 0)

    await eventually(declined, lambda count: count >= 1, timeout=SCHEDULING_SECONDS, what="a declined group")

    [event, *_] = await eventually(
        lambda: groups.events_about(group_api, group_namespace, "reason=PreemptionNotSteered"),
        bool,
        what="the preemptor's Event",
    )
    assert event.involved_object.name in preemptors
    assert event.message.startswith(
        f"Not steered: the victim is a member of PodGroup {group_namespace}/victims (the scheduler preempts groups"
    )
    found = await placed(group_api, group_namespace, [*victims, *preemptors])
    assert all(found[victim] in group_nodes for victim in victims), found
    assert all(found[preemptor] is None for preemptor in preemptors), found
