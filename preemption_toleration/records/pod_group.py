"""The record of a PodGroup (`scheduling.k8s.io/v1beta1`, Kubernetes 1.37): what the group contract reads of
it (`core.groups.GroupFacts`), taken once as the group enters the cache."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from preemption_toleration.api.resources import ObjectRef, pod_group_ref
from preemption_toleration.core.groups import DisruptionMode, GroupMember
from preemption_toleration.core.pods import Named, PodKey, pod_key
from preemption_toleration.core.shapes import as_int, as_mapping
from preemption_toleration.records.pod import PodRecord


@dataclass(frozen=True, slots=True)
class PodGroupRecord:
    key: PodKey  # (namespace, name), as its members name it
    uid: str
    priority: int  # spec.priority: 0 when unset, as the scheduler reads it
    priority_class: str | None
    disruption: DisruptionMode
    preempts_never: bool
    min_count: int | None  # a gang's minimum (spec.schedulingPolicy.gang.minCount); None: not a gang

    @property
    def ref(self) -> str:
        return f"{self.key[0]}/{self.key[1]}"

    @property
    def object_ref(self) -> ObjectRef:
        """What an Event about the group names."""
        return pod_group_ref(self.key[0], self.key[1], self.uid)


def group_ref_of(group: Mapping[str, Any]) -> str:
    """ "namespace/name" of a PodGroup as the API server returns it: its cache's key."""
    namespace, name = pod_key(group)
    return f"{namespace}/{name}"


def pod_group_record(group: Mapping[str, Any]) -> PodGroupRecord:
    """The record of a PodGroup as the API server returns it. A field of the wrong shape reads as absent, and
    a disruption mode other than `all` as `single` (the API's default)."""
    metadata = as_mapping(group.get("metadata"))
    spec = as_mapping(group.get("spec"))
    gang = as_mapping(as_mapping(spec.get("schedulingPolicy")).get("gang"))
    min_count = gang.get("minCount")
    all_at_once = isinstance(as_mapping(spec.get("disruptionMode")).get("all"), Mapping)
    class_name = spec.get("priorityClassName")
    return PodGroupRecord(
        key=pod_key(group),
        uid=str(metadata.get("uid") or ""),
        priority=as_int(spec.get("priority")),
        priority_class=class_name if isinstance(class_name, str) and class_name else None,
        disruption=DisruptionMode.ALL if all_at_once else DisruptionMode.SINGLE,
        preempts_never=spec.get("preemptionPolicy") == "Never",
        min_count=min_count if isinstance(min_count, int) and not isinstance(min_count, bool) else None,
    )


class MemberRecord(Named, GroupMember):
    """A victim judged as a member of its PodGroup: a `PodRecord` whose priority, class and scheduled time are
    its group's (`core.groups.GroupMember`), everything else the pod's."""

    __slots__ = ("deletion", "key", "node_name", "pod_group", "uid")
    pod: PodRecord
    group: PodGroupRecord

    def __init__(self, pod: PodRecord, group: PodGroupRecord, group_since: datetime | None) -> None:
        super().__init__(pod, group, group_since)
        self.key, self.uid, self.pod_group = pod.key, pod.uid, pod.pod_group
        self.node_name, self.deletion = pod.node_name, pod.deletion
