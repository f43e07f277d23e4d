"""Records of Kueue's Workloads (`kueue.x-k8s.io/v1beta2`): what the contract and the boost read of one, read
once as it is decoded (docs/contract.md, "Kueue")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from preemption_toleration.api.resources import ClassKind
from preemption_toleration.core.intparse import IntParseError, parse_go_int
from preemption_toleration.core.shapes import as_int, as_list, as_mapping

PRIORITY_BOOST: Final = "kueue.x-k8s.io/priority-boost"
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"  # the Job's UID, which its pods' controller-uid label names


@dataclass(frozen=True, slots=True)
class ClassRef:
    """`spec.priorityClassRef`: the class Kueue takes the Workload's priority from."""

    group: str
    kind: str
    name: str

    @property
    def class_kind(self) -> ClassKind | None:
        """The kind of class it names (None: neither kind a policy governs)."""
        for kind in ClassKind:
            if (self.group, self.kind) == (kind.group, kind.value):
                return kind
        return None


@dataclass(frozen=True, slots=True)
class WorkloadRecord:
    namespace: str
    name: str
    uid: str
    priority: int  # spec.priority: Kueue's base priority (0 when absent, as Kueue reads it)
    class_ref: ClassRef | None
    boost: str | None  # the priority-boost annotation as written (None: absent)
    job_uid: str | None
    admitted: bool  # Admitted=True
    evicted: bool  # Evicted=True
    reserved: bool = False  # QuotaReserved=True: among the Workloads Kueue may preempt
    finished: bool = False  # Finished=True
    boost_owners: tuple[str, ...] = ()  # the field managers that own the boost annotation (managedFields)
    created: str = ""  # creationTimestamp, as written (RFC 3339 sorts by time)
    of_batch_job: bool = False  # its controller is a batch/v1 Job (whose pods name it by their controller-uid)
    cluster_queue: str | None = None  # status.admission.clusterQueue: the ClusterQueue that admitted it

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    def effective_priority(self) -> int:
        """Kueue's effective priority with its PriorityBoost gate on: the base plus a boost it can parse (an
        int32; anything else counts as none, as Kueue counts it)."""
        if not self.boost:
            return self.priority
        try:
            return self.priority + parse_go_int(self.boost, 32)
        except IntParseError:
            return self.priority


def _boost_owners(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    """The managers whose managedFields entry holds the boost annotation: whoever wrote it last with an
    update, and every manager that applied it."""
    owners = []
    for entry in as_list(metadata.get("managedFields")):
        fields = as_mapping(as_mapping(entry).get("fieldsV1"))
        annotations = as_mapping(as_mapping(fields.get("f:metadata")).get("f:annotations"))
        manager = as_mapping(entry).get("manager")
        if f"f:{PRIORITY_BOOST}" in annotations and isinstance(manager, str) and manager not in owners:
            owners.append(manager)
    return tuple(owners)


def workload_record(workload: Mapping[str, Any]) -> WorkloadRecord:
    """The record of a Workload as the API server returns it (v1beta2); a field of the wrong shape reads as
    absent."""
    metadata = as_mapping(workload.get("metadata"))
    spec = as_mapping(workload.get("spec"))
    ref = as_mapping(spec.get("priorityClassRef"))
    class_ref = (
        ClassRef(str(ref.get("group") or ""), str(ref.get("kind") or ""), str(ref["name"]))
        if isinstance(ref.get("name"), str) and ref["name"]
        else None
    )
    boost = as_mapping(metadata.get("annotations")).get(PRIORITY_BOOST)
    job_uid = as_mapping(metadata.get("labels")).get(JOB_UID_LABEL)
    admission = as_mapping(as_mapping(workload.get("status")).get("admission"))
    cluster_queue = admission.get("clusterQueue")
    conditions = {
        condition.get("type"): condition.get("status")
        for condition in as_list(as_mapping(workload.get("status")).get("conditions"))
        if isinstance(condition, Mapping)
    }
    return WorkloadRecord(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""),
        priority=as_int(spec.get("priority")),
        class_ref=class_ref,
        boost=boost if isinstance(boost, str) else None,
        job_uid=job_uid if isinstance(job_uid, str) and job_uid else None,
        admitted=conditions.get("Admitted") == "True",
        evicted=conditions.get("Evicted") == "True",
        reserved=conditions.get("QuotaReserved") == "True",
        finished=conditions.get("Finished") == "True",
        boost_owners=_boost_owners(metadata),
        created=str(metadata.get("creationTimestamp") or ""),
        of_batch_job=any(
            owner.get("apiVersion") == "batch/v1" and owner.get("kind") == "Job" and owner.get("controller") is True
            for owner in map(as_mapping, as_list(metadata.get("ownerReferences")))
        ),
        cluster_queue=cluster_queue if isinstance(cluster_queue, str) and cluster_queue else None,
    )
