"""Pod groups on the pod-group control plane (`group_cluster`): PodGroups of `scheduling.k8s.io/v1beta1`, their
member pods, and waiting for what the scheduler does with them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from tests.builders import pod
from tests.integration.helpers import SCHEDULING_SECONDS, eventually, unique_name
from tests.integration.objects import MIN, TOL
from tests.integration.pods import node_of, read_pod, set_scheduled_at

GROUP, VERSION, PLURAL = "scheduling.k8s.io", "v1beta1", "podgroups"


def pod_group_body(
    name: str, class_name: str, size: int, mode: Literal["single", "all"] = "all", gang: bool = True
) -> dict[str, Any]:
    """A PodGroup of `size` members of this class: a gang (placed whole or not at all) unless `gang` is False,
    disrupted pod by pod (`single`) or whole (`all`)."""
    policy = {"gang": {"minCount": size}} if gang else {"basic": {}}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": policy, "disruptionMode": {mode: {}}, "priorityClassName": class_name},
    }


def member_body(name: str, group: str, class_name: str | None, cpu: str = "1") -> dict[str, Any]:
    """A pod of the group, placed by the scheduler; it ends at once when deleted."""
    body = pod(name, class_name=class_name, namespace=None, cpu=cpu, grace_seconds=0)
    body["spec"]["schedulingGroup"] = {"podGroupName": group}
    return body


async def create_group(
    api: ApiClient, namespace: str, name: str, class_name: str, size: int, cpu: str = "1", **options: Any
) -> list[str]:
    """A PodGroup and its `size` members (`name`-0, `name`-1...) of `cpu` each; their names."""
    await client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, pod_group_body(name, class_name, size, **options)
    )
    members = [f"{name}-{index}" for index in range(size)]
    core = client.CoreV1Api(api)
    for member in members:
        await core.create_namespaced_pod(namespace, member_body(member, name, class_name, cpu))
    return members


async def read_group(api: ApiClient, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = await client.CustomObjectsApi(api).get_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name
    )
    return found


async def placed(api: ApiClient, namespace: str, members: list[str]) -> dict[str, str | None]:
    """Each member's node (None: pending), or "gone" for a member deleted."""
    found: dict[str, str | None] = {}
    for member in members:
        body = await read_pod(api, namespace, member)
        found[member] = "gone" if body is None else node_of(body)
    return found


async def until_placed(api: ApiClient, namespace: str, members: list[str]) -> dict[str, str | None]:
    """Each member's node, once every member is bound."""
    return await eventually(
        lambda: placed(api, namespace, members),
        lambda nodes: all(node not in (None, "gone") for node in nodes.values()),
        timeout=SCHEDULING_SECONDS,
        what=f"{', '.join(members)} bound",
    )


async def until_all_gone(api: ApiClient, namespace: str, members: list[str]) -> None:
    """Returns once every one of `members` is deleted."""
    await eventually(
        lambda: placed(api, namespace, members),
        lambda nodes: set(nodes.values()) == {"gone"},
        timeout=SCHEDULING_SECONDS,
        what=f"{', '.join(members)} deleted",
    )


# PriorityClasses of the tests, by role: (value, annotations)
ROLES: dict[str, tuple[int, dict[str, str]]] = {
    "low": (1000, {}),
    "high": (9000, {}),
    "plain": (7000, {}),
    "guarded": (8000, {MIN: "10000", TOL: "20"}),  # not below 10000 for its first 20 s
    "ten-minutes": (8000, {MIN: "10000", TOL: "600"}),
    "forever": (8000, {MIN: "10000", TOL: "-1"}),  # never below 10000
    "low-guarded": (1000, {MIN: "10000", TOL: "20"}),  # below every group's priority, protected 20 s
}


@asynccontextmanager
async def priority_classes(api: ApiClient, *roles: str) -> AsyncIterator[dict[str, str]]:
    """PriorityClasses of these `ROLES`, named uniquely (role -> name), deleted after."""
    suffix = unique_name("c").split("-")[-1]
    names = {role: f"{role}-{suffix}" for role in roles}
    scheduling = client.SchedulingV1Api(api)
    for role, name in names.items():
        value, annotations = ROLES[role]
        await scheduling.create_priority_class({"metadata": {"name": name, "annotations": annotations}, "value": value})
    try:
        yield names
    finally:
        for name in names.values():
            await scheduling.delete_priority_class(name)


async def events_about(api: ApiClient, namespace: str, selector: str) -> list[client.CoreV1Event]:
    """The Events of the namespace its field `selector` picks (`involvedObject.kind=PodGroup,...`)."""
    return list((await client.CoreV1Api(api).list_namespaced_event(namespace, field_selector=selector)).items)


async def placed_group(
    api: ApiClient, namespace: str, name: str, class_name: str, size: int, cpu: str = "1", **options: Any
) -> list[str]:
    """`create_group`, returned once every member is bound."""
    members = await create_group(api, namespace, name, class_name, size, cpu, **options)
    await until_placed(api, namespace, members)
    return members


async def half_over(api: ApiClient, namespace: str, class_name: str, name: str = "victims") -> list[str]:
    """A group `name` of 4 members, placed, two of which were scheduled a minute ago: judged one by one,
    a 20 s toleration would let those two go and keep the others."""
    victims = await placed_group(api, namespace, name, class_name, 4)
    for victim in victims[:2]:
        await set_scheduled_at(api, namespace, victim, datetime.now(UTC) - timedelta(minutes=1))
    return victims
