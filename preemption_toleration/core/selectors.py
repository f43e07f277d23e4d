"""Label requirements over plain dicts (Kubernetes JSON): one rule for metav1.LabelSelector (policies'
priorityClassSelector) and for node selector requirements (the guard's node affinity check)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NUMERIC_OPERATORS = ("Gt", "Lt")  # node selector requirements only


def requirement_holds(requirement: Mapping[str, Any], labels: Mapping[str, str], *, numeric: bool = False) -> bool:
    """One requirement (key, operator, values) against labels. `numeric` allows the node selector's Gt and
    Lt (an integer label compared with the single value); an unknown operator holds for nothing."""
    key, operator = str(requirement.get("key") or ""), requirement.get("operator")
    values = [str(value) for value in requirement.get("values") or []]
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if numeric and operator in NUMERIC_OPERATORS:
        try:
            actual, bound = int(labels[key]), int(values[0])
        except (KeyError, IndexError, ValueError):
            return False
        return actual > bound if operator == "Gt" else actual < bound
    return False


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Kubernetes semantics: all matchLabels and all matchExpressions must hold; {} matches everything; an
    invalid expression matches nothing."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(requirement_holds(expression, labels) for expression in selector.get("matchExpressions") or [])
