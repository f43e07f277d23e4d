"""The guard's request record: a pod request's AdmissionReview read once into what the guard reads of it.

Like kopf's typed views over raw bodies, the record keeps the JSON it was read from and gives it types:
the request's own fields as attributes, its pods as the JSON of the fields the guard reads, and the victim
as a `PodJson` view over its oldObject. It answers the preemption rule's questions (`RequestFacts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preemption_toleration.api.guard_review import read_checked_review
from preemption_toleration.core.pods import PodJson, has_mark
from preemption_toleration.core.shapes import as_mapping
from preemption_toleration.guard.prefilter import PREEMPTOR_ANNOTATIONS, operation_of


class GuardRequest:
    """A pod request (a DELETE, an Eviction, a status update...) as the guard reads it, read once from its
    AdmissionReview, the types of everything it holds checked (`read_guard_request`)."""

    __slots__ = (
        "api_version",
        "dry_run",
        "group",
        "kind",
        "name",
        "namespace",
        "object",
        "old_object",
        "operation",
        "resource",
        "sub_resource",
        "uid",
        "user",
    )

    def __init__(
        self,
        api_version: str,
        uid: str,
        operation: str,
        resource: tuple[str, str],
        sub_resource: str | None,
        name: str,
        namespace: str | None,
        user: str,
        dry_run: bool | None,
        object: Mapping[str, Any] | None,  # the review's own name for it
        old_object: Mapping[str, Any] | None,
    ) -> None:
        self.api_version = api_version  # the review's, which the answer repeats
        self.uid = uid
        self.operation = operation
        self.group, self.resource = resource
        self.sub_resource = sub_resource or ""
        self.kind = operation_of(operation, self.sub_resource)  # None: never a preemption
        self.name = name
        self.namespace = namespace
        self.user = user
        self.dry_run = bool(dry_run)
        # Of a pod, the fields the guard reads (an Eviction: its metadata); an empty pod is judged as sent.
        self.object = object
        self.old_object = old_object

    @property
    def victim(self) -> PodJson | None:
        """The pod as the review carries it (`oldObject`); None when it carries none."""
        return PodJson(self.old_object) if self.old_object is not None else None

    @property
    def annotations(self) -> Mapping[str, Any]:
        """The annotations of the request's object: an Eviction names its preemptor there."""
        return as_mapping(as_mapping(as_mapping(self.object).get("metadata")).get("annotations"))

    # The preemption rule's facts (`prefilter.RequestFacts`)
    def username(self) -> str:
        return self.user

    def names_preemptor(self) -> bool:
        annotations = self.annotations
        return any(key in annotations for key in PREEMPTOR_ANNOTATIONS)

    def newly_marked(self) -> bool:
        return has_mark(self.object) and not has_mark(self.old_object)


def read_guard_request(body: bytes) -> GuardRequest:
    """`body` read once into its record. Raises BadRequest saying what is wrong with a body that is not an
    AdmissionReview the guard may judge (`read_checked_review`); the API server never sends one."""
    checked = read_checked_review(body)
    request = checked["request"]
    resource = request["resource"]
    return GuardRequest(
        checked["api_version"],
        request["uid"],
        request["operation"],
        (resource.get("group", ""), resource["resource"]),
        request.get("sub_resource"),
        request.get("name", ""),
        request.get("namespace"),
        request.get("user_info", {}).get("username", ""),
        request.get("dry_run"),
        request.get("object"),
        request.get("old_object"),
    )
