"""Conflicts between the policies of a set of manifests (`ptol validate`), by the ownership rule the operator
and the webhooks use (`inventory.ownership`): where several policies claim a class, the oldest governs it (by
creationTimestamp when the manifests carry one, else by name), and each other one is in conflict."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from preemption_toleration.api.policy import KIND as POLICY_KIND
from preemption_toleration.api.resources import ClassKind
from preemption_toleration.core.pods import parse_time
from preemption_toleration.governance.planner import governed_names
from preemption_toleration.inventory.labels import LabelIndex
from preemption_toleration.inventory.ownership import PolicyIndex, conflicts_of
from preemption_toleration.records.policy import EPOCH, PolicyView, policy_view
from preemption_toleration.records.priority_class import ClassView, class_view
from preemption_toleration.validation.documents import Document, Located, ManifestCheck, is_priority_class
from preemption_toleration.validation.findings import error, shown
from preemption_toleration.validation.toleration_rules import (
    POLICY_SPEC,
    ClassValue,
    minimum_without_effect,
    unaffected,
)


def conflicts(documents: Sequence[Document]) -> list[Located]:
    """An error on each policy that claims a class an older policy governs (`conflicts_of`, as admission)."""
    classes: dict[str, ClassView] = {}
    for document in documents:
        if isinstance(document.content, dict) and is_priority_class(document.content):
            found_class = class_view(document.content, manager=None)
            if found_class.name and found_class.name != "None":
                classes[found_class.name] = found_class
    policies = [
        (document.source, document.index, policy_view(document.content))
        for document in documents
        if isinstance(document.content, dict) and document.content.get("kind") == POLICY_KIND
    ]
    return conflicts_among(classes, policies)


def between_documents(check: ManifestCheck) -> list[Located]:
    """The rules between the documents a streaming `ManifestCheck` read (`ptol validate`): a policy's
    minimum against the classes it governs, and conflicts between policies."""
    policies = [
        (record.source, record.line, PolicyView(record.name, _created(record.created), 0, False, record.spec))
        for record in check.policies.values()
        if record.spec is not None
    ]
    if not policies:
        return []
    classes = class_views(check, [view for _, _, view in policies])
    labels = LabelIndex(classes)
    return _minimums(check, classes, labels, policies) + conflicts_among(classes, policies, labels)


def class_views(check: ManifestCheck, policies: Sequence[PolicyView]) -> dict[str, ClassView]:
    """The classes the policies may govern, as ClassView: every class when a policy has a selector, else
    only the classes policies name (most classes then never become a view)."""
    if any(policy.spec is not None and policy.spec.priority_class_name is None for policy in policies):
        names: Iterable[str] = check.classes
    else:
        named = {str(policy.spec.priority_class_name) for policy in policies if policy.spec is not None}
        names = named & check.classes.keys()
    return {
        name: ClassView(name, check.classes[name].value or 0, labels=check.classes[name].labels or {}) for name in names
    }


def _minimums(
    check: ManifestCheck,
    classes: Mapping[str, ClassView],
    labels: LabelIndex,
    policies: Sequence[tuple[str, int, PolicyView]],
) -> list[Located]:
    """A warning on each policy whose minimum holds back no preemptor of a class it claims, when the class
    is in the input: the rule of the policy webhook and of the annotations (`minimum_without_effect`)."""
    found: list[Located] = []
    for source, position, policy in policies:
        spec = policy.spec
        if spec is None or spec.minimum_preemptable_priority is None or spec.class_kind is not ClassKind.PRIORITY_CLASS:
            continue  # unset: the policy's own rules warn (toleration-without-minimum, no-effect)
        minimum = spec.minimum_preemptable_priority
        claimed = [
            ClassValue(name, record.value, f"{record.source}:{record.line}")
            for name in governed_names(spec, classes, labels)
            if (record := check.classes.get(name)) is not None and record.value is not None
        ]
        low = unaffected(minimum, claimed)
        if low:
            subject = f'{POLICY_KIND} "{shown(policy.name)}"'
            found.append(Located(source, position, minimum_without_effect(subject, minimum, low, POLICY_SPEC)))
    return found


def _created(timestamp: Any) -> Any:
    """As `policy_view` reads it: a manifest without one (or with one that does not parse) is the oldest."""
    try:
        return parse_time(str(timestamp or EPOCH))
    except ValueError:
        return parse_time(EPOCH)


def conflicts_among(
    classes: Mapping[str, ClassView],
    policies: Iterable[tuple[str, int, PolicyView]],
    labels: LabelIndex | None = None,
) -> list[Located]:
    """An error on each policy (with its source and document) that claims a class an older one governs."""
    policies = list(policies)
    index = PolicyIndex(view for _, _, view in policies)
    labels = labels or LabelIndex(classes)  # once: each selector policy looks only at the classes of its labels
    found: list[Located] = []
    for source, position, policy in policies:
        if policy.spec is None or policy.class_kind is not ClassKind.PRIORITY_CLASS:
            continue  # invalid: reported by its own rules; or one of WorkloadPriorityClasses, which are not read
        earlier: dict[str, list[PolicyView]] = {}
        for class_name in governed_names(policy.spec, classes, labels):
            view = classes.get(class_name)
            claimants = index.claimants(view or ClassView(class_name, 0), exists=view is not None)
            place = next((i for i, other in enumerate(claimants) if other is policy), len(claimants))
            earlier[class_name] = claimants[:place]  # those older than the policy
        for conflict in conflicts_of(policy.name, earlier):
            found.append(Located(source, position, error("conflict", conflict.message)))
    return found
