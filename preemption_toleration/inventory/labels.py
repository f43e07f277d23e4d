"""PriorityClass names by label pair: the index a policy's selector is matched through."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from preemption_toleration.core.selectors import selector_matches
from preemption_toleration.records.priority_class import ClassView


class LabelIndex:
    """Class names by label pair, so that a selector looks only at the classes carrying a label it requires
    (planning 1,000 selector policies over 3,000 classes would otherwise compare every pair)."""

    def __init__(self, classes: Mapping[str, ClassView]) -> None:
        self.classes = classes
        self.by_pair: dict[tuple[str, str], list[str]] = {}
        for name, view in classes.items():
            for pair in view.labels.items():
                self.by_pair.setdefault(pair, []).append(name)

    def candidates(self, selector: Mapping[str, Any]) -> Iterable[str]:
        """A superset of the names `selector` matches: the smallest set a required label narrows it to."""
        options: list[list[str]] = [self.by_pair.get(pair, []) for pair in (selector.get("matchLabels") or {}).items()]
        for expression in selector.get("matchExpressions") or []:
            if expression.get("operator") == "In":
                key = expression.get("key")
                options.append([n for v in expression.get("values") or [] for n in self.by_pair.get((key, v), [])])
        if not options:
            return list(self.classes)
        return min(options, key=len)

    def matching(self, selector: Mapping[str, Any]) -> list[str]:
        return sorted(
            {name for name in self.candidates(selector) if selector_matches(selector, self.classes[name].labels)}
        )
