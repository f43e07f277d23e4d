"""The guard on a control plane with pod groups (Kubernetes 1.37, `--feature pod-groups`), against the
scheduler's own workload-aware preemption (docs/contract.md, "Pod groups"): a victim group of
`disruptionMode: all` is refused whole or preempted whole, never in part, where judging its members one by
one would let some go: members whose own toleration has ended, or whose own class protects nothing."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.guard.adapter.partial_groups import BATCH_SECONDS
from tests.integration import groups
from tests.integration.components import RunProcess, Server, ptol_run
from tests.integration.groups import create_group, half_over, placed, placed_group, until_all_gone, until_placed
from tests.integration.helpers import SCHEDULING_SECONDS, eventually
from tests.integration.pods import pod_body, set_scheduled_at, until_bound
from tests.integration.refusals import refused_by_admission

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def group_events(api: ApiClient, namespace: str, group: str) -> list[client.CoreV1Event]:
    return await groups.events_about(api, namespace, f"involvedObject.kind=PodGroup,involvedObject.name={group}")


@pytest.fixture(scope="module")
def guard(group_cluster: LocalCluster) -> Iterator[RunProcess]:
    with ptol_run(group_cluster, "--resync-seconds", "3") as process:
        yield process


@pytest.fixture
async def classes(group_api: ApiClient, guard: RunProcess) -> AsyncIterator[dict[str, str]]:
    """`high`, `guarded` (20 s), `ten-minutes`, `forever` and `plain` (`groups.ROLES`)."""
    async with groups.priority_classes(group_api, "high", "guarded", "ten-minutes", "forever", "plain") as names:
        yield names


async def test_a_protected_all_group_is_refused_whole_then_preempted_whole_after_its_toleration(
    group_api: ApiClient, group_namespace: str, group_nodes: list[str], classes: dict[str, str], guard: RunProcess
) -> None:
    server = Server.of(guard)
    victims = await half_over(group_api, group_namespace, classes["guarded"])
    before = await server.refusals()
    preemptors = await create_group(group_api, group_namespace, "preemptors", classes["high"], 2)
    # Within its 20 s: refused, every member stays.
    await eventually(server.refusals, lambda count: count > before, timeout=SCHEDULING_SECONDS, what="a refusal")
    found = await placed(group_api, group_namespace, [*victims, *preemptors])
    assert all(found[victim] in group_nodes for victim in victims), found
    assert all(found[preemptor] is None for preemptor in preemptors), found
    assert (await server.metric("ptol_guard_refusals_total", "victim")).get("podgroup", 0) > 0
    [event] = await eventually(
        lambda: group_events(group_api, group_namespace, "victims"), bool, what="the PodGroup's Event"
    )
    assert event.reason == "PreemptionRefused" and event.involved_object.api_version == "scheduling.k8s.io/v1beta1"
    assert event.message.startswith(
        f"preemption refused for every member (disruptionMode all): pod {group_namespace}/victims-"
    )
    [told] = await eventually(
        lambda: group_events(group_api, group_namespace, "preemptors"), bool, what="the preemptors' PodGroup's Event"
    )
    assert told.message.startswith(f"a member's preemption refused: pod {group_namespace}/victims-")
    # After it: the whole group goes, and the preemptors take its room.
    await until_all_gone(group_api, group_namespace, victims)
    await until_placed(group_api, group_namespace, preemptors)
    # preempted whole: nothing is told as left in part, once the server's batch of the members is over
    await asyncio.sleep(BATCH_SECONDS + 1)
    assert await server.total("ptol_guard_groups_left_in_part_total") == 0
    assert [e.reason for e in await group_events(group_api, group_namespace, "victims")] == ["PreemptionRefused"]


async def test_members_of_other_classes_are_protected_by_their_groups_class(
    group_api: ApiClient, group_namespace: str, group_nodes: list[str], classes: dict[str, str], guard: RunProcess
) -> None:
    """A group of `forever` whose members were bound directly (no scheduler checked their priorities): two of
    them of `plain` (7000, which protects nothing), two of `forever`. All four stay, refused alike."""
    server = Server.of(guard)
    custom, core = client.CustomObjectsApi(group_api), client.CoreV1Api(group_api)
    body = groups.pod_group_body("mixed", classes["forever"], 4, gang=False)
    await custom.create_namespaced_custom_object(groups.GROUP, groups.VERSION, group_namespace, groups.PLURAL, body)
    victims = [f"mixed-{index}" for index in range(4)]
    for index, victim in enumerate(victims):
        pod = groups.member_body(victim, "mixed", classes["plain" if index < 2 else "forever"])
        pod["spec"]["nodeName"] = group_nodes[index % 2]
        await core.create_namespaced_pod(group_namespace, pod)
    before = await server.refusals()
    preemptors = await create_group(group_api, group_namespace, "preemptors", classes["high"], 2)
    await eventually(server.refusals, lambda count: count >= before + 4, timeout=SCHEDULING_SECONDS, what="refusals")
    found = await placed(group_api, group_namespace, [*victims, *preemptors])
    assert all(found[victim] in group_nodes for victim in victims), found
    assert all(found[preemptor] is None for preemptor in preemptors), found

    # `ptol explain` says the same of a member of the plain class (its group's class protects it), and of the group
    def explain(*what: str) -> str:
        argv = [sys.executable, "-m", "preemption_toleration", "explain", *what]
        argv += ["--kubeconfig", str(guard.cluster.kubeconfig)]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()

    assert explain("pod", f"{group_namespace}/mixed-0") == (
        f"pod {group_namespace}/mixed-0 of PodGroup {group_namespace}/mixed (PriorityClass {classes['forever']}, "
        "priority 8000): refuses priorities 8001 to 9999 forever; priorities >= 10000 may preempt it now."
    )
    assert explain("podgroup", "mixed", "-n", group_namespace) == (
        f"PodGroup {group_namespace}/mixed (PriorityClass {classes['forever']}, priority 8000, disruptionMode all, "
        "4 members): refuses priorities 8001 to 9999 forever; priorities >= 10000 may preempt it now. The group is "
        "preempted whole or not at all."
    )


async def test_a_single_groups_members_are_judged_one_by_one(
    group_api: ApiClient, group_namespace: str, group_nodes: list[str], classes: dict[str, str], guard: RunProcess
) -> None:
    """`disruptionMode: single`, 10 minutes: the two members whose own 10 minutes are over (and which started
    last, so that the scheduler picks them) go for the preemptors; the two others stay. Judged as `all` (from
    its last member scheduled), the group would be refused for 10 minutes."""
    victims = await placed_group(group_api, group_namespace, "victims", classes["ten-minutes"], 4, mode="single")
    now = datetime.now(UTC)
    for index, victim in enumerate(victims):
        expired = index < 2
        scheduled = now - timedelta(minutes=11 if expired else 0)
        started = now - timedelta(seconds=0 if expired else 120)  # the last started are the scheduler's victims
        await set_scheduled_at(group_api, group_namespace, victim, scheduled, started)
    preemptors = await create_group(group_api, group_namespace, "preemptors", classes["high"], 2)
    await until_placed(group_api, group_namespace, preemptors)
    found = await placed(group_api, group_namespace, victims)
    assert [found[victim] == "gone" for victim in victims] == [True, True, False, False], found


async def test_a_lone_preemptor_is_refused_a_protected_all_group_whole(
    group_api: ApiClient, group_namespace: str, group_nodes: list[str], classes: dict[str, str], guard: RunProcess
) -> None:
    """A plain pod of `high` needs a member's room: the scheduler's preemption takes the `all` group whole,
    which the group refuses whole for its 20 s (though two members' own are over), then gives up whole."""
    server = Server.of(guard)
    victims = await half_over(group_api, group_namespace, classes["guarded"])
    before = await server.refusals()
    core = client.CoreV1Api(group_api)
    await core.create_namespaced_pod(group_namespace, pod_body("lone", classes["high"], group_nodes[0], cpu="1"))
    await eventually(server.refusals, lambda count: count > before, timeout=SCHEDULING_SECONDS, what="a refusal")
    found = await placed(group_api, group_namespace, [*victims, "lone"])
    assert all(found[victim] in group_nodes for victim in victims) and found["lone"] is None, found
    await until_all_gone(group_api, group_namespace, victims)
    await until_bound(group_api, group_namespace, "lone", group_nodes[0])


@contextlib.asynccontextmanager
async def deletion_refused(api: ApiClient, namespace: str, label: str) -> AsyncIterator[None]:
    """Every DELETE of a pod of `namespace` labelled `label` refused, as another admission check of the cluster
    may; after, the label removed too (the namespace's pods are deleted at once)."""
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["pods"]}
    async with refused_by_admission(
        api,
        f"keep-{namespace}",
        rule,
        f"!has(oldObject.metadata.labels) || !('{label}' in oldObject.metadata.labels)",
        "kept by the test",
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}},
    ) as remove:
        try:
            yield
        finally:
            core = client.CoreV1Api(api)
            for pod in (await core.list_namespaced_pod(namespace, label_selector=label)).items:
                await core.patch_namespaced_pod(pod.metadata.name, namespace, {"metadata": {"labels": {label: None}}})
            await remove()


async def test_a_group_the_scheduler_leaves_in_part_is_told_on_its_pod_group(
    group_api: ApiClient, group_namespace: str, group_nodes: list[str], classes: dict[str, str], guard: RunProcess
) -> None:
    """A plain `all` group the guard lets go whole, two of whose members another admission check keeps (a
    ValidatingAdmissionPolicy refusing their DELETE): the scheduler's preemption deletes the two others and
    leaves the group in part, which the server tells on the PodGroup and counts."""
    server = Server.of(guard)
    victims = await placed_group(group_api, group_namespace, "victims", classes["plain"], 4)
    core = client.CoreV1Api(group_api)
    for victim in victims[2:]:
        await core.patch_namespaced_pod(victim, group_namespace, {"metadata": {"labels": {"keep": "true"}}})
    before = await server.total("ptol_guard_groups_left_in_part_total")
    async with deletion_refused(group_api, group_namespace, "keep"):

        async def kept() -> str:
            try:
                await core.delete_namespaced_pod(victims[2], group_namespace, dry_run="All")
            except ApiException as error:
                return str(error.body)
            return "deleted"

        await eventually(kept, lambda said: "kept by the test" in said, what="the policy in force")
        await create_group(group_api, group_namespace, "preemptors", classes["high"], 2)
        preempted, left = (", ".join(f"{group_namespace}/{v}" for v in part) for part in (victims[:2], victims[2:]))
        told = (
            f"the scheduler's preemption left this group in part: 2 members ({preempted}) preempted, 2 members "
            f"({left}) still running; "
        )

        async def in_part() -> list[client.CoreV1Event]:
            return await groups.events_about(
                group_api, group_namespace, "involvedObject.kind=PodGroup,reason=PreemptedInPart"
            )

        # One Event, or one per attempt where the scheduler deleted the two over more than one (a refused DELETE
        # cancels the attempt's others): the last names both.
        events = await eventually(
            in_part,
            lambda events: any(event.message.startswith(told) for event in events),
            timeout=SCHEDULING_SECONDS,
            what="the PodGroup's Event naming both members preempted",
        )
        assert {(event.type, event.involved_object.name) for event in events} == {("Warning", "victims")}
        assert await server.total("ptol_guard_groups_left_in_part_total") == before + len(events)
        found = await placed(group_api, group_namespace, victims)
        assert [found[victim] in group_nodes for victim in victims] == [False, False, True, True], found
