"""Pods on a test node, and waiting for what the scheduler does with them."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.builders import pod
from tests.integration.helpers import SCHEDULING_SECONDS, eventually


def pod_body(name: str, class_name: str, node: str, cpu: str = "2") -> dict[str, Any]:
    """A pod of this class kept to `node`, to create in a test's namespace; it ends at once when deleted."""
    return pod(name, class_name=class_name, namespace=None, pinned_to=node, cpu=cpu, grace_seconds=0)


async def read_pod(api: ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return api.sanitize_for_serialization(await client.CoreV1Api(api).read_namespaced_pod(name, namespace))
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def node_of(pod: dict[str, Any] | None) -> str | None:
    return ((pod or {}).get("spec") or {}).get("nodeName")


async def until_bound(
    api: ApiClient, namespace: str, name: str, node: str, *, timeout: float = SCHEDULING_SECONDS
) -> dict[str, Any]:
    """The pod, once bound to `node`."""
    found = await eventually(
        lambda: read_pod(api, namespace, name), lambda p: node_of(p) == node, timeout=timeout, what=f"{name} on {node}"
    )
    assert found is not None
    return found


async def until_gone(api: ApiClient, namespace: str, name: str, *, timeout: float = SCHEDULING_SECONDS) -> None:
    """Returns once the pod is deleted (preempted, evicted)."""
    await eventually(lambda: read_pod(api, namespace, name), lambda p: p is None, timeout=timeout, what=f"{name} gone")


async def create_bound(
    api: ApiClient,
    namespace: str,
    name: str,
    class_name: str,
    node: str,
    cpu: str = "2",
    timeout: float = SCHEDULING_SECONDS,
) -> dict[str, Any]:
    """A pod of this class created on `node`, once bound there."""
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body(name, class_name, node, cpu))
    return await until_bound(api, namespace, name, node, timeout=timeout)


async def events_of(api: ApiClient, namespace: str, pod: str) -> list[Any]:
    events = await client.CoreV1Api(api).list_namespaced_event(namespace, field_selector=f"involvedObject.name={pod}")
    return [event for event in events.items if event.reason == "PreemptionRefused"]


async def failed_attempts(api: ApiClient, namespace: str, pod_name: str) -> int:
    """How many times the scheduler has failed to place the pod, by its FailedScheduling Event: 0, 1, or 2
    for two or more (the scheduler writes a repeat as a series at the second failure, and counts later ones
    only in its memory for up to 30 minutes)."""
    events = await client.CoreV1Api(api).list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={pod_name},reason=FailedScheduling"
    )
    return max((event.series.count if event.series else event.count or 1 for event in events.items), default=0)


async def stays(
    api: ApiClient,
    namespace: str,
    victim: str,
    preemptor: str,
    node: str,
    *,
    attempts: int = 2,
    spared: tuple[str, ...] = (),
) -> None:
    """The victim (and the `spared` pods) stay on `node`, not deleted, and the preemptor pending, until the
    scheduler has failed to place the preemptor `attempts` times: once when its preemption chose no victim
    (with our extender), twice when the guard refused the victim it chose (the scheduler tries again only
    after a refusal, and would have bound the preemptor in the victim's place had it been deleted)."""

    async def failures_while_in_place() -> int:
        for name in (victim, *spared):
            found = await read_pod(api, namespace, name)
            assert node_of(found) == node, f"{name} was preempted"
            assert not (found or {})["metadata"].get("deletionTimestamp"), f"{name} is being deleted"
        assert node_of(await read_pod(api, namespace, preemptor)) is None, f"{preemptor} was bound"
        return await failed_attempts(api, namespace, preemptor)

    await eventually(
        failures_while_in_place,
        lambda failures: failures >= attempts,
        timeout=SCHEDULING_SECONDS,
        what=f"{attempts} failed attempts to schedule {preemptor}",
    )
    await failures_while_in_place()


async def preempts(api: ApiClient, namespace: str, victim: str, preemptor: str, node: str) -> None:
    """The victim is preempted and the preemptor bound to its node."""
    await until_gone(api, namespace, victim)
    await until_bound(api, namespace, preemptor, node)


async def set_scheduled_at(
    api: ApiClient, namespace: str, name: str, when: datetime, started: datetime | None = None
) -> None:
    """Rewrite the PodScheduled time (and `status.startTime` when given) through the status subresource, as
    upstream's test does; the node agent may update the pod at the same moment, so a conflict is retried on
    the fresh object."""
    core = client.CoreV1Api(api)
    for _ in range(10):
        pod = api.sanitize_for_serialization(await core.read_namespaced_pod(name, namespace))
        conditions = [c for c in pod["status"].get("conditions") or [] if c["type"] != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastTransitionTime": when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )
        pod["status"]["conditions"] = conditions
        if started is not None:
            pod["status"]["startTime"] = started.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            await core.replace_namespaced_pod_status(name, namespace, pod)
            return
        except ApiException as error:
            if error.status != 409:
                raise
        await asyncio.sleep(0.2)
    raise AssertionError(f"could not rewrite the PodScheduled time of {namespace}/{name}")
