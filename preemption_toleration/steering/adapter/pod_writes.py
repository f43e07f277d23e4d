"""The writes steering makes on pods, the scheduler's own: the preemptor's nomination, a blocking nomination
cleared, a victim marked `DisruptionTarget` and deleted. Each is made under the pod's UID, so that it never
lands on another pod of the same name, and none reads back the pod the API server returns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.core.pods import PREEMPTION_MARK
from preemption_toleration.core.times import rfc3339
from preemption_toleration.kube.client import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    answer_of,
    patch_pod_status,
)
from preemption_toleration.records.pod import DEFAULT_SCHEDULER, NO_CONSTRAINTS, SlimPod

REQUEST_TIMEOUT = 10
# gone, another pod of that name (its UID differs: 409, or 422 for a patch's test), or bound (a bound pod
# takes no nomination): the write has nothing to act on any more
NOTHING_TO_ACT_ON = (404, 409, 422)


def scheduler_of(pod: SlimPod) -> str:
    return str((pod.constraints or NO_CONSTRAINTS).pod["spec"].get("schedulerName") or DEFAULT_SCHEDULER)


def disruption_target(scheduler: str, now: datetime) -> dict[str, Any]:
    """The condition kube-scheduler's executor gives a victim before deleting it (a strategic merge patch:
    conditions merge by type)."""
    kind, state, reason = PREEMPTION_MARK
    return {
        "status": {
            "conditions": [
                {
                    "type": kind,
                    "status": state,
                    "reason": reason,
                    "message": f"{scheduler}: preempting to accommodate a higher priority pod",
                    "lastTransitionTime": rfc3339(now),
                }
            ]
        }
    }


class PodWrites:
    def __init__(self, core: client.CoreV1Api) -> None:
        self.core = core

    async def still_pending(self, namespace: str, name: str, uid: str) -> bool:
        """Read from the API server, not the cache: the scheduler may have bound it a moment ago."""
        try:
            pod = await self.core.read_namespaced_pod(name, namespace, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return bool(pod.metadata.uid == uid and not pod.spec.node_name and not pod.metadata.deletion_timestamp)

    async def nominate(self, namespace: str, name: str, uid: str, node: str) -> bool:
        """The preemptor's `status.nominatedNodeName`, under its UID; False when it is gone or bound."""
        try:
            nomination = {"metadata": {"uid": uid}, "status": {"nominatedNodeName": node}}
            await patch_pod_status(self.core, namespace, name, nomination, MERGE_PATCH, REQUEST_TIMEOUT)
        except ApiException as error:
            if error.status not in NOTHING_TO_ACT_ON:
                raise
            return False
        return True

    async def clear_nomination(self, pod: SlimPod, node: str) -> bool:
        """Removes the pod's `status.nominatedNodeName` if it is still `node`, under its UID; False when the
        pod is gone, another, or nominated elsewhere now."""
        patch = [
            {"op": "test", "path": "/metadata/uid", "value": pod.uid},
            {"op": "test", "path": "/status/nominatedNodeName", "value": node},
            {"op": "remove", "path": "/status/nominatedNodeName"},
        ]
        try:
            await patch_pod_status(self.core, pod.namespace, pod.name, patch, JSON_PATCH, REQUEST_TIMEOUT)
        except ApiException as error:
            if error.status not in NOTHING_TO_ACT_ON:
                raise
            return False
        return True

    async def mark_and_delete(self, victim: SlimPod, scheduler: str) -> bool:
        """The victim marked `DisruptionTarget` and deleted, both under its UID; False when it is gone already
        (or another pod of that name is there now)."""
        try:
            mark = {"metadata": {"uid": victim.uid}, **disruption_target(scheduler, datetime.now(UTC))}
            await patch_pod_status(
                self.core, victim.namespace, victim.name, mark, STRATEGIC_MERGE_PATCH, REQUEST_TIMEOUT
            )
            await answer_of(
                self.core.delete_namespaced_pod(
                    victim.name,
                    victim.namespace,
                    body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=victim.uid)),
                    _request_timeout=REQUEST_TIMEOUT,
                    _preload_content=False,
                )
            )
        except ApiException as error:
            if error.status not in NOTHING_TO_ACT_ON:
                raise
            return False
        return True
