"""The built-in resources the project judges, watches and registers webhooks for, named once: the
PriorityClass's API group, version, kind and plural (the custom resource's are `api/policy.py`'s), the
pods', the PodGroup's (1.37), and the one object reference type Events name."""

from __future__ import annotations

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
    return ObjectRef(PRIORITY_CLASS_API_VERSION, PRIORITY_CLASS_KIND, name, uid)


def pod_group_ref(namespace: str, name: str, uid: str) -> ObjectRef:
    group, version, _ = POD_GROUP_API
    return ObjectRef(f"{group}/{version}", POD_GROUP_KIND, name, uid, namespace)
