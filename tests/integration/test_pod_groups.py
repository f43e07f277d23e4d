"""Pod groups (Kubernetes 1.37, `GenericWorkload`) on a control plane started with `--feature pod-groups`.

The test bed first, with nothing of ours in the way: the API server serves PodGroups and gives each its
class's priority, the scheduler places a gang whole, and its workload-aware preemption deletes a victim
group of `disruptionMode: all` whole, pod by pod, for a preemptor group. And without the gate (the session's
control plane): no PodGroup is served and no pod keeps a group, so the guard judges every pod as a pod.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.integration.groups import (
    GROUP,
    PLURAL,
    VERSION,
    create_group,
    member_body,
    placed,
    pod_group_body,
    read_group,
    until_placed,
)
from tests.integration.helpers import SCHEDULING_SECONDS, eventually, unique_name

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

LOW, HIGH = 1000, 2000


@pytest.fixture
async def classes(group_api: ApiClient) -> AsyncIterator[dict[str, str]]:
    """`low` (1000) and `high` (2000), plain."""
    suffix = unique_name("c").split("-")[-1]
    values = {"low": LOW, "high": HIGH}
    names = {role: f"{role}-{suffix}" for role in values}
    scheduling = client.SchedulingV1Api(group_api)
    for role, name in names.items():
        await scheduling.create_priority_class({"metadata": {"name": name}, "value": values[role]})
    yield names
    for name in names.values():
        await scheduling.delete_priority_class(name)


async def test_the_bed_serves_pod_groups_with_their_class_priority(
    group_api: ApiClient, group_namespace: str, classes: dict[str, str]
) -> None:
    await create_group(group_api, group_namespace, "g", classes["high"], 2)
    group = await read_group(group_api, group_namespace, "g")
    assert group["spec"]["priority"] == HIGH
    assert group["spec"]["disruptionMode"] == {"all": {}}


async def test_the_bed_preempts_a_whole_all_group_for_a_preemptor_group(
    group_api: ApiClient, group_namespace: str, group_nodes: list[str], classes: dict[str, str]
) -> None:
    victims = await create_group(group_api, group_namespace, "victims", classes["low"], 4)
    assert set((await until_placed(group_api, group_namespace, victims)).values()) == set(group_nodes)
    preemptors = await create_group(group_api, group_namespace, "preemptors", classes["high"], 2)
    # Two CPUs would do, but the victim group goes whole.
    await eventually(
        lambda: placed(group_api, group_namespace, victims),
        lambda found: set(found.values()) == {"gone"},
        timeout=SCHEDULING_SECONDS,
        what="every victim deleted",
    )
    await until_placed(group_api, group_namespace, preemptors)


async def test_without_the_gate_no_pod_group_is_served_and_no_pod_keeps_one(api: ApiClient, namespace: str) -> None:
    with pytest.raises(ApiException) as refused:
        await client.CustomObjectsApi(api).create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, pod_group_body("g", "plain", 2)
        )
    assert refused.value.status == 404
    core = client.CoreV1Api(api)
    await core.create_namespaced_pod(namespace, member_body("m-0", "g", None))
    raw = await core.read_namespaced_pod("m-0", namespace, _preload_content=False)  # the JSON, every field
    spec = json.loads(await raw.read())["spec"]
    assert "schedulingGroup" not in spec and spec["containers"]
