"""The resources the project judges, watches and registers webhooks for, named once: the PriorityClass's API
group, version, kind and plural (the custom resource's are `api/policy.py`'s), the pods', the PodGroup's (1.37),
Kueue's (its Workloads and WorkloadPriorityClasses), the kinds of class a policy governs, and the one object
reference type Events name."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

PRIORITY_CLASS_GROUP: Final = "scheduling.k8s.io"
PRIORITY_CLASS_PLURAL: Final = "priorityclasses"
# (group, plural), as admission endpoints, rules and informers pair them
PRIORITY_CLASSES: Final = (PRIORITY_CLASS_GROUP, PRIORITY_CLASS_PLURAL)
PRIORITY_CLASS_API_VERSION: Final = f"{PRIORITY_CLASS_GROUP}/v1"
PRIORITY_CLASS_KIND: Final = "PriorityClass"
PODS: Final = ("", "pods")  # the core group's pods, which the guard judges
# (group, version, plural) of PodGroups, which the guard caches where the API server serves them
POD_GROUP_API: Final = (PRIORITY_CLASS_GROUP, "v1beta1", "podgroups")
POD_GROUP_KIND: Final = "PodGroup"
KUEUE_GROUP: Final = "kueue.x-k8s.io"
KUEUE_VERSION: Final = "v1beta2"  # Kueue's storage version since v0.15; v1beta1 is deprecated
KUEUE_API_VERSION: Final = f"{KUEUE_GROUP}/{KUEUE_VERSION}"
WORKLOAD_PRIORITY_CLASS_PLURAL: Final = "workloadpriorityclasses"
WORKLOADS: Final = "workloads"  # Kueue's Workloads' plural
CLUSTER_QUEUES: Final = "clusterqueues"  # Kueue's ClusterQueues' plural


class ClassKind(str, enum.Enum):
    """The kinds of class a policy governs (its `spec.priorityClassKind`): a PriorityClass, which pods and Kueue's
    Workloads name, or Kueue's WorkloadPriorityClass, which only Workloads name. Both carry a `value` and the
    contract's annotations."""

    PRIORITY_CLASS = PRIORITY_CLASS_KIND
    WORKLOAD_PRIORITY_CLASS = "WorkloadPriorityClass"

    @property
    def group(self) -> str:
        return PRIORITY_CLASS_GROUP if self is ClassKind.PRIORITY_CLASS else KUEUE_GROUP

    @property
    def api_version(self) -> str:
        return PRIORITY_CLASS_API_VERSION if self is ClassKind.PRIORITY_CLASS else KUEUE_API_VERSION

    @property
    def plural(self) -> str:
        return PRIORITY_CLASS_PLURAL if self is ClassKind.PRIORITY_CLASS else WORKLOAD_PRIORITY_CLASS_PLURAL

    @property
    def plural_kind(self) -> str:
        """The kind, in the plural, as a message names several."""
        return f"{self.value}es"


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """The object an Event is about (its involvedObject) or names beside it (related). A cluster-scoped
    object has no namespace."""

    api_version: str
    kind: str
    name: str
    uid: str = ""
    namespace: str = ""

    def to_json(self) -> dict[str, str]:
        """As the API takes it: the fields that are set."""
        fields = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "namespace": self.namespace,
        }
        return {key: value for key, value in fields.items() if value}


def pod_ref(namespace: str, name: str, uid: str) -> ObjectRef:
    return ObjectRef("v1", "Pod", name, uid, namespace)


def priority_class_ref(name: str, uid: str) -> ObjectRef:
    return class_ref(ClassKind.PRIORITY_CLASS, name, uid)


def class_ref(kind: ClassKind, name: str, uid: str) -> ObjectRef:
    return ObjectRef(kind.api_version, kind.value, name, uid)


def pod_group_ref(namespace: str, name: str, uid: str) -> ObjectRef:
    group, version, _ = POD_GROUP_API
    return ObjectRef(f"{group}/{version}", POD_GROUP_KIND, name, uid, namespace)
