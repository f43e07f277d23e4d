"""The boost's writes on a Workload: server-side applies of its annotation under our field manager, never
forced (an annotation another manager holds makes the write fail, 409, and stay theirs), each with the UID of
the Workload planned, so that a Workload deleted and made again under its name is not written on."""

from __future__ import annotations

import enum
from typing import Any, Final

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.resources import KUEUE_API_VERSION, KUEUE_GROUP, KUEUE_VERSION, WORKLOADS
from preemption_toleration.kube.client import APPLY_PATCH, answer_of, api_problem
from preemption_toleration.kueue.plan import FIELD_MANAGER
from preemption_toleration.records.workload import PRIORITY_BOOST, WorkloadRecord

WRITE_TIMEOUT: Final = 10.0
# What Kueue's Workload webhook answers to an empty boost, with its PriorityBoost gate on (v0.17 to v0.19); the
# API server passes a webhook's denial on as 403
_GATE_ON_ANSWER = 'use "0" explicitly'


class Gate(enum.Enum):
    ON = "on"
    OFF = "off"


class BoostWrites:
    def __init__(self, api: ApiClient, field_manager: str = FIELD_MANAGER) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.field_manager = field_manager

    async def apply(self, workload: WorkloadRecord, value: str | None, dry_run: bool = False) -> None:
        """Our annotation set to `value`, or (None) given up, which removes it where we alone held it.
        Raises the client's errors (ApiException 409: another manager holds it; 404: the Workload is gone)."""
        metadata: dict[str, Any] = {"name": workload.name, "namespace": workload.namespace, "uid": workload.uid}
        if value is not None:
            metadata["annotations"] = {PRIORITY_BOOST: value}
        body = {"apiVersion": KUEUE_API_VERSION, "kind": "Workload", "metadata": metadata}
        extra = {"dry_run": "All"} if dry_run else {}
        await answer_of(
            self.custom.patch_namespaced_custom_object(
                KUEUE_GROUP,
                KUEUE_VERSION,
                workload.namespace,
                WORKLOADS,
                workload.name,
                body,
                field_manager=self.field_manager,
                force=False,
                _content_type=APPLY_PATCH,
                _request_timeout=WRITE_TIMEOUT,
                _preload_content=False,
                **extra,
            )
        )

    async def gate(self, workload: WorkloadRecord) -> Gate:
        """Whether Kueue's PriorityBoost gate is on, as its webhook shows it: with the gate on, it refuses an
        empty boost (tried as a dry run on `workload`, which keeps nothing); with it off, it takes any text.
        Raises the client's errors of any other answer."""
        try:
            await self.apply(workload, "", dry_run=True)
        except ApiException as error:
            if error.status in (400, 403, 422) and _GATE_ON_ANSWER in api_problem(error):
                return Gate.ON
            raise
        return Gate.OFF
