"""Slim records of pods and nodes: the fields decisions read, taken from the JSON as it is decoded.

A cached pod costs a few hundred bytes, whatever the size of its manifest: one object with slots, strings
shared between pods (namespaces, class and node names), and scheduling constraints and request sums
shared between the pods of one workload. Only unbound pods keep their constraints (node selector,
required node affinity, tolerations): a bound pod is never a preemptor candidate.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol, TypeVar

from preemption_toleration.core.constraints import unjudged_constraints
from preemption_toleration.core.pods import (
    GO_ZERO_TIME,
    Named,
    PodKey,
    group_name,
    has_mark,
    interned,
    parse_time,
    pod_key,
)
from preemption_toleration.core.quantities import LATEST_RULES, ResizeRules, pod_requests
from preemption_toleration.core.shapes import as_int, as_mapping

Labels = tuple[str, ...]  # key, value, key, value, ... sorted by key
Requests = tuple[tuple[str, int], ...]  # summed requests, sorted by resource name
DEFAULT_SCHEDULER = "default-scheduler"  # a pod's spec.schedulerName when it names none
MAX_SHARED = 100_000  # entries per table of shared values; beyond it, values are simply not shared


class Constraints:
    """The scheduling constraints a preemption cannot change, and the scheduler that places the pod, as a
    pod-shaped mapping for `matching`; and the names of those the project does not judge
    (`core.constraints`)."""

    __slots__ = ("pod", "signature", "unjudged")

    def __init__(self, spec: Mapping[str, Any], signature: str, unjudged: tuple[str, ...] = ()) -> None:
        self.pod: Mapping[str, Any] = {"spec": spec}
        self.signature = signature
        self.unjudged = unjudged


NO_CONSTRAINTS = Constraints({}, "{}")
NO_LABELS: Mapping[str, str] = {}


T = TypeVar("T")


def _share(table: dict[Any, T], value: T, key: Any = None) -> T:
    """The table's equal value (under `key`, by default the value itself), else `value`, kept for the next
    pod while the table has room."""
    key = value if key is None else key
    if len(table) >= MAX_SHARED:
        return table.get(key, value)
    return table.setdefault(key, value)


class Shared:
    """Tables that let equal values of many pods be one object; and how the cluster's release counts the
    requests of a pod resized in place."""

    def __init__(self, rules: ResizeRules = LATEST_RULES) -> None:
        self.rules = rules
        self.constraints: dict[str, Constraints] = {"{}": NO_CONSTRAINTS}
        self.requests: dict[Requests, Requests] = {}
        self.numbers: dict[int, int] = {}  # priorities: a few values, each an object of its own otherwise
        self.labels: dict[Labels, Labels] = {}
        # Label values, many of them one pod's own (a pod-template-hash, a StatefulSet's pod name): a table of
        # ours, not the interpreter's interned strings, whose one dict, already holding every identifier of
        # the process, grows by megabytes at a time (a probe of 10,000 pods: 1.9 MB in one step, 190 B a pod)
        self.values: dict[str, str] = {}

    def number(self, value: int) -> int:
        return _share(self.numbers, value)

    def constraints_of(self, spec: Mapping[str, Any]) -> Constraints:
        picked: dict[str, Any] = {}
        for key in ("nodeSelector", "tolerations"):
            if spec.get(key):
                picked[key] = spec[key]
        required = as_mapping(as_mapping(spec.get("affinity")).get("nodeAffinity")).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        if required:
            picked["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
        if spec.get("schedulerName") and spec["schedulerName"] != DEFAULT_SCHEDULER:
            picked["schedulerName"] = spec["schedulerName"]  # which scheduler may be preempting for it
        unjudged = unjudged_constraints(spec)
        signature = json.dumps(picked, sort_keys=True, separators=(",", ":"), default=str)
        if unjudged:
            signature += "|" + ",".join(unjudged)
        found = self.constraints.get(signature)
        if found is not None:
            return found
        return _share(self.constraints, Constraints(picked, signature, unjudged), signature)

    def labels_of(self, metadata: Mapping[str, Any]) -> Labels:
        """The pod's labels (read by PodDisruptionBudget selectors) as one flat tuple, key, value, key, ...:
        a third of the memory of a dict, and one object for the pods of a workload."""
        labels = metadata.get("labels")
        if not isinstance(labels, Mapping) or not labels:
            return ()
        if len(self.values) >= MAX_SHARED:
            self.values.clear()  # as label sets, values outlive their pods here
        pairs: list[str] = []
        for key in sorted(labels, key=str):
            value = str(labels[key])
            pairs += (sys.intern(str(key)), self.values.setdefault(value, value))
        flat = tuple(pairs)
        if len(self.labels) >= MAX_SHARED:
            self.labels.clear()  # label sets outlive their pods here; many are one pod's own
        return self.labels.setdefault(flat, flat)

    def requests_of(self, spec: Mapping[str, Any], status: Mapping[str, Any]) -> Requests:
        summed = pod_requests(spec, status, self.rules)
        return _share(self.requests, tuple(sorted((sys.intern(name), value) for name, value in summed.items())))


class PodRecord(Protocol):
    """What the decisions read of any pod: a `SlimPod` of the caches, or a `core.pods.PodJson` of a request. The
    contract's checks read the part `core.pods.PodFacts` names."""

    @property
    def key(self) -> PodKey: ...
    @property
    def uid(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def ref(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def priority_class(self) -> str | None: ...
    @property
    def preempts_never(self) -> bool: ...
    @property
    def node_name(self) -> str | None: ...
    @property
    def deletion(self) -> str | None: ...
    @property
    def pod_group(self) -> str | None:
        """The name of its PodGroup, in its namespace (`spec.schedulingGroup.podGroupName`); None: no group."""
        ...

    def scheduled_since(self) -> datetime | None: ...


class SlimPod(Named):
    """What the guard and the extender read of a pod of the caches: a `PodRecord` of a few hundred bytes."""

    __slots__ = (
        "key",
        "uid",
        "created",
        "deletion",
        "preempted",
        "priority",
        "priority_class",
        "preempts_never",
        "node_name",
        "nominated_node",
        "phase",
        "scheduled",
        "scheduled_at",
        "started",
        "constraints",
        "requests",
        "label_pairs",
        "pod_group",
    )

    def __init__(
        self,
        key: PodKey,
        uid: str,
        created: str,
        deletion: str | None,
        priority: int,
        priority_class: str | None,
        preempts_never: bool,
        node_name: str | None,
        nominated_node: str | None,
        phase: str | None,
        scheduled: str | None,
        scheduled_at: Any,
        constraints: Constraints | None,
        requests: Requests,
        label_pairs: Labels = (),
        started: int | None = None,
        preempted: bool = False,
        pod_group: str | None = None,
    ) -> None:
        self.key = key
        self.uid = uid
        self.created = created
        self.deletion = deletion
        # terminating by preemption (`PodTerminatingByPreemption`): being deleted, with the DisruptionTarget
        # condition a scheduler's preemption writes
        self.preempted = preempted
        self.priority = priority
        self.priority_class = priority_class
        self.preempts_never = preempts_never
        self.node_name = node_name
        self.nominated_node = nominated_node
        self.phase = phase
        # status and lastTransitionTime of the PodScheduled condition, as the API gave them (None: no such
        # condition)
        self.scheduled = scheduled
        self.scheduled_at = scheduled_at
        # status.startTime in whole seconds since the epoch (None: not started), which orders equal
        # priorities for preemption; an int costs less than the text
        self.started = started
        self.constraints = constraints
        self.requests = requests
        self.label_pairs = label_pairs
        self.pod_group = pod_group  # its PodGroup's name, in its namespace

    @property
    def labels(self) -> Mapping[str, str]:
        pairs = self.label_pairs
        return dict(zip(pairs[::2], pairs[1::2], strict=True)) if pairs else NO_LABELS

    @property
    def pending_candidate(self) -> bool:
        """Unbound, not terminating and allowed to preempt: a pod the scheduler may be preempting for."""
        return self.node_name is None and self.deletion is None and not self.preempts_never

    def scheduled_since(self) -> datetime | None:
        """lastTransitionTime of the PodScheduled=True condition; None when the pod is not scheduled (as
        `core.pods.scheduled_since` reads a pod's JSON)."""
        if self.scheduled != "True":
            return None
        return GO_ZERO_TIME if not self.scheduled_at else parse_time(str(self.scheduled_at))

    def queue_order(self) -> tuple[int, str, str, str]:
        """The scheduler's queue order: highest priority first, then the oldest (RFC 3339 sorts by time)."""
        return (-self.priority, self.created, self.key[0], self.key[1])


def _scheduled(status: Mapping[str, Any]) -> tuple[str | None, Any]:
    """(status, lastTransitionTime) of the PodScheduled condition; (None, None) without one."""
    conditions = status.get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, Mapping) and condition.get("type") == "PodScheduled":
            return interned(condition.get("status")) or "", condition.get("lastTransitionTime")
    return None, None


def preempted(raw: Mapping[str, Any]) -> bool:
    """The scheduler's preemption has begun to delete the pod: marked by it (PREEMPTION_MARK) and deleting."""
    return bool(as_mapping(raw.get("metadata")).get("deletionTimestamp")) and has_mark(raw)


def _epoch_seconds(value: Any) -> int | None:
    """An RFC 3339 time as whole seconds since the epoch; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return int(parse_time(value).timestamp())
    except ValueError:
        return None


def slim_pod(pod: Mapping[str, Any], shared: Shared) -> SlimPod:
    metadata = as_mapping(pod.get("metadata"))
    spec = as_mapping(pod.get("spec"))
    status = as_mapping(pod.get("status"))
    namespace, name = pod_key(pod)
    node_name = interned(spec.get("nodeName"))
    scheduled, scheduled_at = _scheduled(status)
    return SlimPod(
        key=(sys.intern(namespace), name),
        uid=str(metadata.get("uid") or ""),
        # only the queue order of unbound pods reads it; a binding replaces the record
        created="" if node_name else str(metadata.get("creationTimestamp") or ""),
        deletion=str(metadata["deletionTimestamp"]) if metadata.get("deletionTimestamp") else None,
        priority=shared.number(as_int(spec.get("priority"))),
        priority_class=interned(spec.get("priorityClassName")),
        preempts_never=spec.get("preemptionPolicy") == "Never",
        node_name=node_name,
        nominated_node=interned(status.get("nominatedNodeName")),
        phase=interned(status.get("phase")),
        scheduled=scheduled,
        scheduled_at=scheduled_at,
        constraints=None if node_name else shared.constraints_of(spec),
        requests=shared.requests_of(spec, status),
        label_pairs=shared.labels_of(metadata) if node_name else (),  # only a bound pod is a victim
        started=_epoch_seconds(status.get("startTime")) if node_name else None,
        preempted=bool(metadata.get("deletionTimestamp")) and has_mark(pod),
        pod_group=group_name(spec),
    )
