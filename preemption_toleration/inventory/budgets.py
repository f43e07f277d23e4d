"""PodDisruptionBudgets as the scheduler's preemption reads them, and its split of victims by them.

A slim budget keeps its selector, `status.disruptionsAllowed` and the names in `status.disruptedPods`,
indexed by namespace: a decision reads only the budgets of its victims' namespaces.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from preemption_toleration.core.selectors import selector_matches
from preemption_toleration.core.shapes import as_int, as_mapping
from preemption_toleration.records.pod import SlimPod

BudgetKey = tuple[str, str]  # (namespace, name)
_VALUED = ("In", "NotIn")
_VALUELESS = ("Exists", "DoesNotExist")


@dataclass(frozen=True)
class SlimBudget:
    namespace: str
    name: str
    selector: Mapping[str, Any] | None  # None: the budget selects no pod
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    def selects(self, labels: Mapping[str, str]) -> bool:
        return self.selector is not None and selector_matches(self.selector, labels)


def _usable_selector(selector: Any) -> Mapping[str, Any] | None:
    """The selector if the scheduler would match pods with it: a nil or empty selector matches nothing
    (`selector.Empty()`), and one that `LabelSelectorAsSelector` refuses is skipped."""
    if not isinstance(selector, Mapping):
        return None
    match_labels = selector.get("matchLabels")
    expressions = selector.get("matchExpressions")
    if not match_labels and not expressions:
        return None
    if match_labels is not None and not isinstance(match_labels, Mapping):
        return None
    for expression in expressions or ():
        if not isinstance(expression, Mapping):
            return None
        operator, values = expression.get("operator"), expression.get("values") or []
        if (
            not isinstance(values, list)
            or (operator in _VALUED and not values)
            or (operator in _VALUELESS and values)
            or operator not in (*_VALUED, *_VALUELESS)
        ):
            return None
    return selector


def slim_budget(raw: Mapping[str, Any]) -> SlimBudget:
    metadata = as_mapping(raw.get("metadata"))
    status = as_mapping(raw.get("status"))
    return SlimBudget(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        selector=_usable_selector(as_mapping(raw.get("spec")).get("selector")),
        disruptions_allowed=as_int(status.get("disruptionsAllowed")),
        disrupted_pods=frozenset(str(name) for name in as_mapping(status.get("disruptedPods"))),
    )


def budget_key(raw: Mapping[str, Any]) -> BudgetKey:
    metadata = as_mapping(raw.get("metadata"))
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


class BudgetIndex:
    """The store a watch keeps (`put`, `remove`, `prune`): budgets by key and by namespace."""

    def __init__(self) -> None:
        self.budgets: dict[BudgetKey, SlimBudget] = {}
        self._by_namespace: dict[str, dict[BudgetKey, SlimBudget]] = {}
        # Those with disruptions left, by namespace: the only ones on which a pod can spend one
        self._spendable: dict[str, tuple[SlimBudget, ...]] = {}

    @classmethod
    def of(cls, budgets: Iterable[Mapping[str, Any]]) -> BudgetIndex:
        index = cls()
        for raw in budgets:
            index.put(raw)
        return index

    def key(self, raw: Mapping[str, Any]) -> Hashable:
        return budget_key(raw)

    def put(self, raw: Mapping[str, Any]) -> Hashable:
        key = budget_key(raw)
        budget = slim_budget(raw)
        self.budgets[key] = budget
        self._by_namespace.setdefault(key[0], {})[key] = budget
        self._index_spendable(key[0])
        return key

    def remove(self, raw: Mapping[str, Any]) -> None:
        self._drop(budget_key(raw))

    def prune(self, keep: Collection[Hashable]) -> None:
        for key in [key for key in self.budgets if key not in keep]:
            self._drop(key)

    def _drop(self, key: BudgetKey) -> None:
        if self.budgets.pop(key, None) is not None:
            members = self._by_namespace[key[0]]
            members.pop(key, None)
            if not members:
                del self._by_namespace[key[0]]
            self._index_spendable(key[0])

    def _index_spendable(self, namespace: str) -> None:
        spendable = tuple(b for b in self.in_namespace(namespace) if b.disruptions_allowed > 0)
        if spendable:
            self._spendable[namespace] = spendable
        else:
            self._spendable.pop(namespace, None)

    def __len__(self) -> int:
        return len(self.budgets)

    def in_namespace(self, namespace: str) -> Collection[SlimBudget]:
        return self._by_namespace.get(namespace, {}).values()

    def counted(self, pods: Iterable[SlimPod]) -> Iterator[SlimPod]:
        """The pods on which the scheduler's split would spend one of a budget's remaining disruptions. A
        budget with none left makes every pod it selects violating, whichever other pods are on the node, so
        a pod under it changes no other pod's count."""
        spendable_in = self._spendable.get
        for pod in pods:
            if not pod.label_pairs:
                continue
            namespace, name = pod.key
            spendable = spendable_in(namespace)
            if not spendable:
                continue
            labels = pod.labels  # a dict built from the pod's pairs: once, whatever the budgets
            if any(name not in b.disrupted_pods and b.selects(labels) for b in spendable):
                yield pod


def split_by_budget_violation(pods: Sequence[SlimPod], budgets: BudgetIndex) -> tuple[list[SlimPod], list[SlimPod]]:
    """The scheduler's `filterPodsWithPDBViolation`: (violating, non-violating), each in the given order.
    Each pod a budget selects uses one of its allowed disruptions, unless the API server already counts it
    (`disruptedPods`); a pod is violating when a budget that selects it has none left."""
    allowed: dict[int, int] = {}
    violating: list[SlimPod] = []
    others: list[SlimPod] = []
    for pod in pods:
        violated = False
        in_namespace = budgets.in_namespace(pod.namespace) if pod.label_pairs else ()
        labels = pod.labels if in_namespace else {}
        for budget in in_namespace:
            if not budget.selects(labels) or pod.name in budget.disrupted_pods:
                continue
            left = allowed.get(id(budget), budget.disruptions_allowed) - 1
            allowed[id(budget)] = left
            if left < 0:
                violated = True
        (violating if violated else others).append(pod)
    return violating, others
