"""Admission decisions as pure functions of the request and the view of the caches (`ClusterView`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from preemption_toleration.api.admission import AdmissionRequest, AdmissionVerdict, allowed, denied
from preemption_toleration.api.resources import ClassKind
from preemption_toleration.core.annotations import POLICY_KEYS, annotations_of
from preemption_toleration.core.shapes import as_mapping
from preemption_toleration.governance.planner import desired_annotations, governed_names
from preemption_toleration.inventory.labels import LabelIndex
from preemption_toleration.inventory.ownership import PolicyIndex, conflicts_of
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.policy import PolicyView, policy_view
from preemption_toleration.records.priority_class import class_labels_of, class_name_of, class_view
from preemption_toleration.validation.findings import Finding
from preemption_toleration.validation.policy import read_policy, subject
from preemption_toleration.validation.priority_class import (
    ManagedAnnotations,
    check_managed_annotation_change,
    check_priority_class,
)
from preemption_toleration.validation.toleration_rules import (
    POLICY_SPEC,
    ClassValue,
    minimum_without_effect,
    unaffected,
)

# What a decision reads: classes and policies ("admission"), or every cache, pods and nodes too ("all").
Needs = Literal["admission", "all"]


@dataclass(frozen=True)
class AdmissionConfig:
    # Users whose writes to managed annotations are the operator's own (its service account).
    operator_identities: Collection[str] = ("system:serviceaccount:preemption-toleration:operator",)


def _governing(found: list[PolicyView]) -> tuple[str, dict[str, str]] | None:
    """The policy that governs a class (the first of its claimants), and its annotations."""
    if not found or found[0].spec is None:
        return None
    return found[0].name, desired_annotations(found[0].spec)


def _contested_warning(name: str, found: list[PolicyView], before: list[PolicyView]) -> list[str]:
    """A request that makes several policies claim a class (e.g. a label change) is told which one governs
    it (the oldest); later writes of a class that was already contested are not told again."""
    if len(found) < 2 or {p.name for p in found} == {p.name for p in before}:
        return []
    others = ", ".join(f'"{p.name}"' for p in found[1:])
    leaves = "leaves" if len(found) == 2 else "leave"
    return [
        f'PriorityClass "{name}" is claimed by {len(found)} policies: "{found[0].name}" (the oldest) '
        f"governs it, {others} {leaves} it alone (Conflict). Fix: make one policy claim it."
    ]


def _ratchet(new: list[Finding], old: list[Finding]) -> tuple[list[Finding], list[str]]:
    """Errors the object already had before this update do not block it; they are warned about."""
    if not new:
        return [], []  # most requests: nothing to sort
    previous = {finding.message for finding in old if finding.is_error}
    errors = [f for f in new if f.is_error and f.message not in previous]
    warnings = [f.message for f in new if not f.is_error or f.message in previous]
    return errors, warnings


def validate_priority_class(request: AdmissionRequest, view: ClusterView, config: AdmissionConfig) -> AdmissionVerdict:
    obj = request.object or {}
    findings = check_priority_class(obj)
    errors, warnings = _ratchet(findings, [])
    if errors and request.old_object:  # only an error can be excused by the old object having it too
        errors, warnings = _ratchet(findings, check_priority_class(request.old_object))
    if errors:
        return denied(422, " ".join(f.message for f in errors), warnings=warnings)
    if request.user_info.username not in config.operator_identities:
        # Who claims the class needs its name and labels only: no whole ClassView is built (this runs on
        # every PriorityClass write).
        metadata = as_mapping(obj.get("metadata"))
        name = class_name_of(metadata)
        found = view.ownership_index().claimants_of(name, class_labels_of(metadata))
        before = (
            view.ownership_index().claimants(class_view(request.old_object, manager=None))
            if request.old_object and len(found) > 1  # a single claimant is never a new contest
            else []
        )
        warnings += _contested_warning(name, found, before)
        governing = _governing(found)
        if governing is not None:
            policy_name, values = governing
            old = {k: str(v) for k, v in annotations_of(request.old_object or {}).items() if k in POLICY_KEYS}
            new = {k: str(v) for k, v in annotations_of(obj).items() if k in POLICY_KEYS}
            refused = check_managed_annotation_change(
                request.name or name, old, new, ManagedAnnotations(policy_name, values)
            )
            if refused:
                return denied(403, " ".join(f.message for f in refused), warnings=warnings)
    return allowed(warnings)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


_ANNOTATION_PATHS = {key: f"/metadata/annotations/{_escape(key)}" for key in POLICY_KEYS}  # JSON Pointers


def mutate_priority_class(request: AdmissionRequest, view: ClusterView) -> AdmissionVerdict:
    """On CREATE, give a class that a policy already governs the policy's annotations at once."""
    obj = request.object or {}
    if request.operation != "CREATE":
        return allowed()
    metadata = as_mapping(obj.get("metadata"))
    name = class_name_of(metadata)
    governing = _governing(view.ownership_index().claimants_of(name, class_labels_of(metadata)))
    if governing is None:
        return allowed()
    policy_name, values = governing
    if not metadata.get("annotations"):  # none yet (most new classes): one operation writes the policy's
        return allowed(patch=[{"op": "add", "path": "/metadata/annotations", "value": values}] if values else ())
    current = as_mapping(metadata.get("annotations"))
    patch: list[dict[str, Any]] = []
    warnings: list[str] = []
    for key in POLICY_KEYS:
        path = _ANNOTATION_PATHS[key]
        if key in values and current.get(key) != values[key]:
            patch.append({"op": "add", "path": path, "value": values[key]})  # add replaces an existing key
            if key in current:
                warnings.append(
                    f'PriorityClass "{name}": {key} set to "{values[key]}" by '
                    f'PreemptionTolerationPolicy "{policy_name}" (was "{current[key]}").'
                )
        elif key not in values and key in current:
            patch.append({"op": "remove", "path": path})
            warnings.append(
                f'PriorityClass "{name}": {key} removed: PreemptionTolerationPolicy '
                f'"{policy_name}" governs this class and does not set it.'
            )
    return allowed(warnings, patch)


def _conflict(name: str, governed: list[str], view: ClusterView) -> str | None:
    """Whether another live policy already claims a class this one would (`conflicts_of`): the classes it
    would govern (`governed_names`), each asked of the ownership index (a class that does not exist yet is
    claimed by name only). The message names the oldest such policy, the one that governs, as the operator
    decides."""
    claimed: dict[str, list[PolicyView]] = {}
    ownership = view.ownership_index()
    for class_name in governed:
        found = view.classes.get(class_name)
        if found is None:  # claimed by name only
            claimed[class_name] = ownership.claimants_of(class_name, {}, exists=False)
        else:
            claimed[class_name] = ownership.claimants_of(class_name, found.labels)
    conflicts = conflicts_of(name, claimed)
    return conflicts[0].message if conflicts else None


def _without_effect(name: str, spec: Any, governed: list[str], view: ClusterView) -> list[str]:
    """A warning when the policy's minimum holds back no preemptor of a class it would govern that the
    cache knows (a class created later is judged by the operator's status)."""
    minimum = spec.minimum_preemptable_priority
    if minimum is None:
        return []  # the policy's own rules warn (toleration-without-minimum, no-effect)
    known = [
        ClassValue(class_name, found.value)
        for class_name in governed
        if (found := view.classes.get(class_name)) is not None
    ]
    low = unaffected(minimum, known)
    return [minimum_without_effect(subject(name), minimum, low, POLICY_SPEC).message] if low else []


def validate_policy(request: AdmissionRequest, view: ClusterView) -> AdmissionVerdict:
    obj = request.object or {}
    old = request.old_object
    if request.operation == "UPDATE" and old is not None:
        deleting = as_mapping(obj.get("metadata")).get("deletionTimestamp")
        if deleting or obj.get("spec") == old.get("spec"):
            return allowed()  # finalizers, labels, annotations: the spec was judged before
    parts = read_policy(obj, served=True)
    errors, warnings = _ratchet(parts.findings, [])
    if errors and old is not None:  # only an error can be excused by the old object having it too
        errors, warnings = _ratchet(parts.findings, read_policy(old, served=True).findings)
    if errors or parts.spec is None:
        return denied(422, " ".join(f.message for f in errors) or "The policy is invalid.", warnings=warnings)
    if parts.spec.class_kind is not ClassKind.PRIORITY_CLASS:
        # the webhook caches no WorkloadPriorityClasses: the operator's status tells a conflict or no effect
        return allowed(warnings)
    governed = governed_names(parts.spec, view.classes, view.label_index())
    warnings += _without_effect(parts.name, parts.spec, governed, view)
    conflict = _conflict(parts.name, governed, view)
    if conflict is not None:
        old_spec = read_policy(old, served=True).spec if old is not None else None
        if (
            old_spec is not None
            and _conflict(parts.name, governed_names(old_spec, view.classes, view.label_index()), view) == conflict
        ):
            return allowed([*warnings, conflict])  # not made worse by this change
        return denied(409, conflict, warnings=warnings)
    return allowed(warnings)


def snapshot_of(policies: Mapping[str, Mapping[str, Any]], classes: Mapping[str, Mapping[str, Any]]) -> ClusterView:
    """The view of these raw policies and classes, their indexes built (tests and the CLI)."""
    policy_views = {name: policy_view(body) for name, body in policies.items()}
    class_views = {name: class_view(body) for name, body in classes.items()}
    return ClusterView(
        classes=class_views,
        policies=policy_views,
        ownership=PolicyIndex(policy_views.values()),
        labels=LabelIndex(class_views),
    )
