"""The async functions that send what the planner decided: server-side applies, status patches."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.api.resources import ClassKind
from preemption_toleration.kube.client import APPLY_PATCH, MERGE_PATCH, answer_of


async def apply_class_annotations(api: ApiClient, body: Mapping[str, Any], field_manager: str) -> dict[str, Any]:
    """Server-side apply of our annotation keys on the class `body` names (a PriorityClass, or Kueue's
    WorkloadPriorityClass); `force` takes back keys someone changed by hand. Returns the class as the server
    stored it, read as JSON: the client's model of it, turned back into a dict, cost about a millisecond of the
    operator's CPU per write, thousands of them in a burst of policies."""
    name = body["metadata"]["name"]
    options: dict[str, Any] = {
        "field_manager": field_manager,
        "force": True,
        "_content_type": APPLY_PATCH,
        "_preload_content": False,
    }
    if body.get("kind") == ClassKind.WORKLOAD_PRIORITY_CLASS.value:
        kind = ClassKind.WORKLOAD_PRIORITY_CLASS
        version = kind.api_version.rpartition("/")[2]
        call = client.CustomObjectsApi(api).patch_cluster_custom_object(
            kind.group, version, kind.plural, name, dict(body), **options
        )
    else:
        call = client.SchedulingV1Api(api).patch_priority_class(name=name, body=dict(body), **options)
    stored: dict[str, Any] = json.loads(await answer_of(call))
    return stored


def status_patch(wanted: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch that also removes our fields that are no longer wanted."""
    patch: dict[str, Any] = {key: None for key in current if key not in wanted}
    patch.update(wanted)
    return {"status": patch}


async def patch_policy_status(
    api: ApiClient, name: str, wanted: Mapping[str, Any], current: Mapping[str, Any], resource_version: str
) -> dict[str, Any]:
    """Returns the policy as the server stored it. Made on the policy of `resource_version` (none: any): its
    conditions are written whole, and another writer's (the webhook server's PriorityBoost) kept as read, so a
    policy changed since is refused (409) and planned again."""
    patch = status_patch(wanted, current)
    if resource_version:
        patch["metadata"] = {"resourceVersion": resource_version}
    return await client.CustomObjectsApi(api).patch_cluster_custom_object_status(  # type: ignore[no-any-return]
        GROUP, VERSION, PLURAL, name, patch, _content_type=MERGE_PATCH
    )
