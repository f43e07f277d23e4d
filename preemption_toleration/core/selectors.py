"""metav1.LabelSelector matching over plain dicts (Kubernetes JSON)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Kubernetes semantics: all matchLabels and all matchExpressions must hold; {} matches everything."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key = expression.get("key")
        operator = expression.get("operator")
        values = expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False  # an invalid selector matches nothing
    return True
