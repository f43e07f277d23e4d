"""Conflicts between the policies of a set of manifests (`ptol validate`), by the ownership rule the operator
and the webhooks use (ownership.py): where several policies claim a class, the oldest governs it (by
creationTimestamp when the manifests carry one, else by name), and each other one is in conflict."""

from __future__ import annotations

from collections.abc import Sequence

from preemption_toleration.api.policy import KIND as POLICY_KIND
from preemption_toleration.governance.ownership import PolicyIndex, conflicts_of
from preemption_toleration.governance.plan import governed_names
from preemption_toleration.governance.views import ClassView, PolicyView, class_view, policy_view
from preemption_toleration.validation.documents import Document, Located, is_priority_class
from preemption_toleration.validation.findings import error


def conflicts(documents: Sequence[Document]) -> list[Located]:
    """An error on each policy that claims a class an older policy governs (`conflicts_of`, as admission)."""
    classes: dict[str, ClassView] = {}
    for document in documents:
        if isinstance(document.content, dict) and is_priority_class(document.content):
            found_class = class_view(document.content, manager=None)
            if found_class.name and found_class.name != "None":
                classes[found_class.name] = found_class
    policies: list[tuple[Document, PolicyView]] = [
        (document, policy_view(document.content))
        for document in documents
        if isinstance(document.content, dict) and document.content.get("kind") == POLICY_KIND
    ]
    index = PolicyIndex(view for _, view in policies)
    found: list[Located] = []
    for document, policy in policies:
        if policy.spec is None:
            continue  # invalid: reported by its own rules
        earlier: dict[str, list[PolicyView]] = {}
        for class_name in governed_names(policy.spec, classes):
            view = classes.get(class_name)
            claimants = index.claimants(view or ClassView(class_name, 0), exists=view is not None)
            position = next((i for i, other in enumerate(claimants) if other is policy), len(claimants))
            earlier[class_name] = claimants[:position]  # those older than the policy
        for conflict in conflicts_of(policy.name, earlier):
            found.append(Located(document.source, document.index, error("conflict", conflict.message)))
    return found
