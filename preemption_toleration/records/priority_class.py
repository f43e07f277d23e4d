"""The record of a PriorityClass (or of a Kueue WorkloadPriorityClass, which has the same `value` and
annotations): what governance and the contract read of it, with its toleration parsed once, as the record is built
(when the class enters a cache or a request is read)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from preemption_toleration.api.resources import ClassKind, ObjectRef, class_ref
from preemption_toleration.core.annotations import POLICY_KEYS, ClassToleration, toleration_of
from preemption_toleration.core.shapes import as_int, as_list, as_mapping

FIELD_MANAGER = "preemption-toleration-operator"


@dataclass(frozen=True)
class ClassView:
    name: str
    value: int
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)  # only our two keys
    owned_keys: frozenset[str] = frozenset()  # policy keys our field manager owns
    uid: str = field(default="", compare=False)
    resource_version: str = field(default="", compare=False)
    kind: ClassKind = ClassKind.PRIORITY_CLASS
    # The toleration these annotations and value give, parsed once, as the record is built: the guard and
    # the extender read it on every decision.
    toleration: ClassToleration = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "toleration", toleration_of(self.name, self.value, self.annotations))

    @property
    def ref(self) -> ObjectRef:
        return class_ref(self.kind, self.name, self.uid)


def owned_annotation_keys(managed_fields: Any, manager: str = FIELD_MANAGER) -> frozenset[str]:
    """The policy annotation keys that `manager` owns through server-side apply."""
    owned: set[str] = set()
    for entry in as_list(managed_fields):
        entry = as_mapping(entry)
        if entry.get("manager") != manager or entry.get("operation") != "Apply":
            continue
        annotations = as_mapping(as_mapping(as_mapping(entry.get("fieldsV1")).get("f:metadata")).get("f:annotations"))
        owned.update(key[2:] for key in annotations if key.startswith("f:") and key[2:] in POLICY_KEYS)
    return frozenset(owned)


def class_name_of(metadata: Mapping[str, Any]) -> str:
    return str(metadata.get("name"))


def class_labels_of(metadata: Mapping[str, Any]) -> dict[str, str]:
    return {str(key): str(value) for key, value in as_mapping(metadata.get("labels")).items()}


def class_view(
    obj: Mapping[str, Any], manager: str | None = FIELD_MANAGER, kind: ClassKind = ClassKind.PRIORITY_CLASS
) -> ClassView:
    """What governance needs of a class of `kind` (a listing's items do not say their kind). Admission requests
    can carry malformed objects (the webhook refuses them, but only after this view is taken): wrong types read
    as absent. With `manager` None, `owned_keys` is left empty (admission decisions never read it)."""
    metadata = as_mapping(obj.get("metadata"))
    annotations = as_mapping(metadata.get("annotations"))
    return ClassView(
        name=class_name_of(metadata),
        uid=str(metadata.get("uid") or ""),
        resource_version=str(metadata.get("resourceVersion") or ""),
        value=as_int(obj.get("value")),
        labels=class_labels_of(metadata),
        annotations={key: str(annotations[key]) for key in POLICY_KEYS if key in annotations},
        owned_keys=owned_annotation_keys(metadata.get("managedFields"), manager) if manager else frozenset(),
        kind=kind,
    )
