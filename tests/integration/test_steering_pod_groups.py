"""Steering on a control plane with pod groups (Kubernetes 1.37, `--feature pod-groups`): it makes a pod's
preemption, node by node, and the scheduler preempts groups across nodes, so it declines every preemption
of or for a group, saying so (a metric, an Event on the preemptor), and never acts in part."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from tests.integration.components import RunProcess, Server, ptol_run
from tests.integration.groups import create_group, placed, until_placed
from tests.integration.helpers import SCHEDULING_SECONDS, eventually, unique_name
from tests.integration.objects import MIN, TOL

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@pytest.fixture(scope="module")
def steering(group_cluster: LocalCluster) -> Iterator[RunProcess]:
    with ptol_run(group_cluster, "--extender", "off", "--steering", "on") as process:
        yield process


@pytest.fixture
async def classes(group_api: ApiClient, steering: RunProcess) -> AsyncIterator[dict[str, str]]:
    """`high` (9000) and `forever` (8000: never below 10000)."""
    suffix = unique_name("c").split("-")[-1]
    names = {role: f"{role}-{suffix}" for role in ("high", "forever")}
    scheduling = client.SchedulingV1Api(group_api)
    await scheduling.create_priority_class({"metadata": {"name": names["high"]}, "value": 9000})
    metadata = {"name": names["forever"], "annotations": {MIN: "10000", TOL: "-1"}}
    await scheduling.create_priority_class({"metadata": metadata, "value": 8000})
    yield names
    for name in names.values():
        await scheduling.delete_priority_class(name)


async def test_steering_declines_a_groups_preemption_and_says_so(
    group_api: ApiClient, group_namespace: str, group_nodes: list[str], classes: dict[str, str], steering: RunProcess
) -> None:
    server = Server.of(steering)
    victims = await create_group(group_api, group_namespace, "victims", classes["forever"], 4)
    await until_placed(group_api, group_namespace, victims)
    preemptors = await create_group(group_api, group_namespace, "preemptors", classes["high"], 2)

    async def declined() -> float:
        return (await server.metric("ptol_steering_total", "outcome")).get("pod-group", 0)

    await eventually(declined, lambda count: count >= 1, timeout=SCHEDULING_SECONDS, what="a declined group")

    async def not_steered() -> list[client.CoreV1Event]:
        events = await client.CoreV1Api(group_api).list_namespaced_event(
            group_namespace, field_selector="reason=PreemptionNotSteered"
        )
        return list(events.items)

    [event, *_] = await eventually(not_steered, bool, what="the preemptor's Event")
    assert event.involved_object.name in preemptors
    assert event.message.startswith(
        f"Not steered: the victim is a member of PodGroup {group_namespace}/victims (the scheduler preempts groups"
    )
    found = await placed(group_api, group_namespace, [*victims, *preemptors])
    assert all(found[victim] in group_nodes for victim in victims), found
    assert all(found[preemptor] is None for preemptor in preemptors), found
