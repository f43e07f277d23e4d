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

from tests.integration import groups
from tests.integration.groups import create_group, read_group, until_all_gone, until_placed

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@pytest.fixture
async def classes(group_api: ApiClient) -> AsyncIterator[dict[str, str]]:
    async with groups.priority_classes(group_api, "low", "high") as names:
        yield names


async def test_the_bed_serves_pod_groups_with_their_class_priority(
    group_api: ApiClient, group_namespace: str, classes: dict[str, str]
) -> None:
    await create_group(group_api, group_namespace, "g", classes["high"], 2)
    group = await read_group(group_api, group_namespace, "g")
    assert group["spec"]["priority"] == groups.ROLES["high"][0]
    assert group["spec"]["disruptionMode"] == {"all": {}}


async def test_the_bed_preempts_a_whole_all_group_for_a_preemptor_group(
    group_api: ApiClient, group_namespace: str, group_nodes: list[str], classes: dict[str, str]
) -> None:
    victims = await create_group(group_api, group_namespace, "victims", classes["low"], 4)
    assert set((await until_placed(group_api, group_namespace, victims)).values()) == set(group_nodes)
    preemptors = await create_group(group_api, group_namespace, "preemptors", classes["high"], 2)
    await until_all_gone(group_api, group_namespace, victims)  # two CPUs would do: the victim group goes whole
    await until_placed(group_api, group_namespace, preemptors)


async def test_without_the_gate_no_pod_group_is_served_and_no_pod_keeps_one(api: ApiClient, namespace: str) -> None:
    with pytest.raises(ApiException) as refused:
        await client.CustomObjectsApi(api).create_namespaced_custom_object(
            groups.GROUP, groups.VERSION, namespace, groups.PLURAL, groups.pod_group_body("g", "plain", 2)
        )
    assert refused.value.status == 404
    core = client.CoreV1Api(api)
    await core.create_namespaced_pod(namespace, groups.member_body("m-0", "g", None))
    raw = await core.read_namespaced_pod("m-0", namespace, _preload_content=False)  # the JSON, every field
    spec = json.loads(await raw.read())["spec"]
    assert "schedulingGroup" not in spec and spec["containers"]
