"""The admission rules of architecture §4 as pure functions returning findings (errors and warnings), and
offline validation of manifests: the webhooks and `ptol validate` call the same functions, so a manifest
that passes offline passes admission and vice versa."""

from preemption_toleration.validation.findings import Finding, Severity
from preemption_toleration.validation.policy import check_policy
from preemption_toleration.validation.priority_class import (
    ManagedAnnotations,
    check_managed_annotation_change,
    check_priority_class,
)

__all__ = [
    "Finding",
    "ManagedAnnotations",
    "Severity",
    "check_managed_annotation_change",
    "check_policy",
    "check_priority_class",
]
