"""Which policies claim a PriorityClass, and which one governs it: the oldest claimant (creation time,
then name). `governance.planner` applies the same rule to every class at once; admission requests and the guard ask
about one class, through a `PolicyIndex` built once per change of the policies, so that the answer costs
what that class's labels and claimants cost, not what the number of policies does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from preemption_toleration.api.policy import PreemptionTolerationPolicySpec
from preemption_toleration.api.resources import ClassKind
from preemption_toleration.core.selectors import selector_matches
from preemption_toleration.records.policy import PolicyView
from preemption_toleration.records.priority_class import ClassView

Selector = Mapping[str, Any]


def age_order(policy: PolicyView) -> tuple[Any, str]:
    """The order in which policies win a class: the oldest first, then by name."""
    return policy.created, policy.name


def selector_of(spec: PreemptionTolerationPolicySpec) -> Selector | None:
    """The policy's selector as Kubernetes JSON, or None for a policy that names its class."""
    if spec.priority_class_name is not None:
        return None
    return spec.priority_class_selector.to_kube() if spec.priority_class_selector else {}


def _required_pairs(selector: Selector) -> list[tuple[str, str]]:
    """Label pairs of which every class the selector matches carries one (empty: no such guarantee)."""
    match_labels = selector.get("matchLabels") or {}
    if match_labels:
        key = min(match_labels)
        return [(key, match_labels[key])]
    for expression in selector.get("matchExpressions") or []:
        if expression.get("operator") == "In" and expression.get("values"):
            return [(expression["key"], value) for value in dict.fromkeys(expression["values"])]
    return []


def _only_pair(selector: Selector) -> bool:
    """The selector is one matchLabels pair and nothing else: a class carrying that pair matches it."""
    match_labels = selector.get("matchLabels") or {}
    return len(match_labels) == 1 and not selector.get("matchExpressions") and len(selector) <= 2


class PolicyIndex:
    """The live, valid policies, by the class they name or by one label pair their selector requires."""

    def __init__(self, policies: Iterable[PolicyView]) -> None:
        self.by_class_name: dict[str, list[PolicyView]] = {}
        # (policy, its selector), the selector None when the pair alone decides (most selectors)
        self.by_pair: dict[tuple[str, str], list[tuple[PolicyView, Selector | None]]] = {}
        self.unindexed: list[tuple[PolicyView, Selector]] = []  # selectors with no required pair, e.g. {}
        for policy in policies:
            if policy.deleting or policy.spec is None or policy.class_kind is not ClassKind.PRIORITY_CLASS:
                continue  # a policy of Kueue's WorkloadPriorityClasses claims no PriorityClass
            selector = selector_of(policy.spec)
            if selector is None:
                self.by_class_name.setdefault(str(policy.spec.priority_class_name), []).append(policy)
                continue
            pairs = _required_pairs(selector)
            checked = None if _only_pair(selector) else selector
            for pair in pairs:
                self.by_pair.setdefault(pair, []).append((policy, checked))
            if not pairs:
                self.unindexed.append((policy, selector))

    def claimants(self, view: ClassView, *, exists: bool = True) -> list[PolicyView]:
        """The policies that claim the class, oldest first: the first one governs it. A class that does not
        exist (`exists=False`) is claimed only by name: selectors govern existing classes."""
        return self.claimants_of(view.name, view.labels, exists=exists)

    def claimants_of(self, name: str, labels: Mapping[str, str], *, exists: bool = True) -> list[PolicyView]:
        """`claimants` of the class with this name and these labels (what a view holds of them)."""
        found = list(self.by_class_name.get(name, ()))
        if exists:
            for pair in labels.items():
                for policy, selector in self.by_pair.get(pair, ()):
                    if selector is None or selector_matches(selector, labels):
                        found.append(policy)
            found += [policy for policy, selector in self.unindexed if selector_matches(selector, labels)]
        if len(found) > 1:
            found.sort(key=age_order)
        return found

    def governing(self, view: ClassView) -> PolicyView | None:
        found = self.claimants(view)
        return found[0] if found else None


def claimants(policies: Iterable[PolicyView], view: ClassView) -> list[PolicyView]:
    """The live, valid policies that claim one class, oldest first (for a one-off question; keep a
    `PolicyIndex` to ask many)."""
    return PolicyIndex(policies).claimants(view)


@dataclass(frozen=True)
class Conflict:
    """A policy that claims classes another policy already governs: the one rule, and the one message, of
    `ptol validate` (governance/conflicts.py) and of the policy webhook (admission/decisions.py)."""

    policy: str  # the policy in conflict
    classes: tuple[str, ...]  # the classes it claims that `governing` governs, sorted
    governing: str

    @property
    def message(self) -> str:
        names = ", ".join(f'"{name}"' for name in self.classes)
        classes, are, them = (
            (f"PriorityClass {names}", "is", "it")
            if len(self.classes) == 1
            else (f"PriorityClasses {names}", "are", "them")
        )
        return (
            f'PreemptionTolerationPolicy "{self.policy}": {classes} {are} already governed by '
            f'PreemptionTolerationPolicy "{self.governing}" (the oldest that claims {them}). '
            f'Fix: govern each class with one policy only: change "{self.governing}" instead, or delete it first.'
        )


def conflicts_of(policy: str, earlier: Mapping[str, Iterable[PolicyView]]) -> list[Conflict]:
    """The conflicts of `policy`, given for each class it would govern the policies that claimed that class
    before it (`policy` itself among them is ignored): the oldest of them governs the class. One conflict per
    governing policy, the oldest first, with the classes it governs. Admission passes every other live
    claimant (a write must not contest a class); `ptol validate` passes those older than the policy (the
    order in which the cluster would have created them)."""
    governed: dict[str, tuple[PolicyView, list[str]]] = {}
    for class_name, claimants in earlier.items():
        others = [other for other in claimants if other.name != policy]
        if others:
            governing = min(others, key=age_order)
            governed.setdefault(governing.name, (governing, []))[1].append(class_name)
    ordered = sorted(governed.values(), key=lambda entry: age_order(entry[0]))
    return [Conflict(policy, tuple(sorted(names)), governing.name) for governing, names in ordered]
