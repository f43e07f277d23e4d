"""The kube-scheduler extender's preemption payloads (k8s.io/kube-scheduler/extender/v1).

The Go structs carry no JSON tags, so the wire uses their Go field names (`Pod`, `NodeNameToVictims`,
`NodeNameToMetaVictims`, `Pods`, `UID`, `NumPDBViolations`). Pods stay Kubernetes JSON: the decision reads
them with the same pure helpers as the guard.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from preemption_toleration.api.base import Int64
from preemption_toleration.api.pod import pod_problem
from preemption_toleration.core.shapes import as_mapping


class _GoWire(BaseModel):
    """Go field names; fields added by newer schedulers are ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class MetaPod(_GoWire):
    uid: str = Field(alias="UID", min_length=1)


class MetaVictims(_GoWire):
    pods: list[MetaPod] = Field(alias="Pods", default_factory=list)
    num_pdb_violations: Int64 = Field(alias="NumPDBViolations", default=0)


class Victims(_GoWire):
    pods: list[dict[str, Any]] = Field(alias="Pods", default_factory=list)
    num_pdb_violations: Int64 = Field(alias="NumPDBViolations", default=0)


class ExtenderPreemptionArgs(_GoWire):
    """What the scheduler sends: the preemptor, and its victims on each candidate node, as full pods
    (`nodeCacheCapable: false`) or as UIDs (`nodeCacheCapable: true`)."""

    pod: dict[str, Any] = Field(alias="Pod")
    node_name_to_victims: dict[str, Victims | None] | None = Field(alias="NodeNameToVictims", default=None)
    node_name_to_meta_victims: dict[str, MetaVictims | None] | None = Field(alias="NodeNameToMetaVictims", default=None)

    @field_validator("pod")
    @classmethod
    def _readable_pod(cls, pod: dict[str, Any]) -> dict[str, Any]:
        problem = pod_problem(pod, "Pod")
        if problem is not None:
            raise ValueError(problem)
        return pod

    def victim_uids(self) -> dict[str, tuple[list[str], int]]:
        """Each candidate node's victims as (UIDs, NumPDBViolations), whichever mode the scheduler uses."""
        found: dict[str, tuple[list[str], int]] = {}
        for node, meta in (self.node_name_to_meta_victims or {}).items():
            found[node] = ([pod.uid for pod in meta.pods], meta.num_pdb_violations) if meta else ([], 0)
        for node, victims in (self.node_name_to_victims or {}).items():
            if victims is None:
                found[node] = ([], 0)
                continue
            uids = [str(as_mapping(pod.get("metadata")).get("uid") or "") for pod in victims.pods]
            found[node] = ([uid for uid in uids if uid], victims.num_pdb_violations)
        return found


class ExtenderPreemptionResult(_GoWire):
    """What we answer: the victims on each node that stays a candidate. A node left out is no candidate;
    an empty victim list would be an error to the scheduler, so there is never one."""

    node_name_to_meta_victims: dict[str, MetaVictims] = Field(alias="NodeNameToMetaVictims", default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)
