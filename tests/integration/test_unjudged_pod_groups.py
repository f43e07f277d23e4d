"""A pod group preempted without the guard's decision, on a control plane with pod groups (Kubernetes 1.37,
`--feature pod-groups`): here the scheduler's writes are not sent to the guard (its `--preemptor-identity`
names another user, as for a second scheduler left out of the list), so the scheduler takes a protected
group whole. The server, which watches every pod, says so on the PodGroup and counts the members."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from tests.integration import groups
from tests.integration.components import RunProcess, Server, ptol_run
from tests.integration.groups import create_group, placed_group, until_all_gone, until_placed
from tests.integration.helpers import SCHEDULING_SECONDS, eventually

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@pytest.fixture(scope="module")
def unheard(group_cluster: LocalCluster) -> Iterator[RunProcess]:
    """`ptol run` whose guard is sent no write of the scheduler's."""
    with ptol_run(group_cluster, "--extender", "off", "--preemptor-identity", "system:another-scheduler") as process:
        yield process


async def test_a_protected_group_preempted_without_the_guard_is_told_on_its_pod_group(
    group_api: ApiClient, group_namespace: str, group_nodes: list[str], unheard: RunProcess
) -> None:
    async with groups.priority_classes(group_api, "high", "forever") as classes:
        await preempted_whole_and_told(group_api, group_namespace, classes, Server.of(unheard))


async def preempted_whole_and_told(
    group_api: ApiClient, group_namespace: str, classes: dict[str, str], server: Server
) -> None:
    victims = await placed_group(group_api, group_namespace, "victims", classes["forever"], 4)
    assert await server.total("ptol_guard_unjudged_members_total") == 0
    preemptors = await create_group(group_api, group_namespace, "preemptors", classes["high"], 2)
    # the guard would refuse it forever; not asked, the scheduler takes the group whole
    await until_all_gone(group_api, group_namespace, victims)
    await until_placed(group_api, group_namespace, preemptors)
    [event] = await eventually(
        lambda: groups.events_about(
            group_api, group_namespace, "involvedObject.kind=PodGroup,reason=MembersPreemptedUnjudged"
        ),
        bool,
        timeout=SCHEDULING_SECONDS,
        what="the PodGroup's Event",
    )
    assert (event.type, event.involved_object.name, event.involved_object.api_version) == (
        "Warning",
        "victims",
        "scheduling.k8s.io/v1beta1",
    )
    named = ", ".join(f"{group_namespace}/{victim}" for victim in sorted(victims))
    assert event.message == (
        f"4 members preempted by the scheduler without the guard's decision ({named}): the API server did not "
        "call the guard for them, or applied its failurePolicy (the guard down or too slow); no member is left"
    )
    assert await server.total("ptol_guard_unjudged_members_total") == 4
