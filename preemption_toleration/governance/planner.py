"""The planner: from all policies and classes, who governs what, what to write, and each policy's status.

Ownership is decided per class, oldest policy first (`inventory.ownership.age_order`), so it is stable: a newer
policy that wants a class an older one already governs gets `Conflict` and leaves that class alone. Each kind of
class (PriorityClass, Kueue's WorkloadPriorityClass) is planned apart, from the policies that govern that kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from preemption_toleration.api.policy import LabelSelector, PreemptionTolerationPolicySpec
from preemption_toleration.api.resources import ClassKind
from preemption_toleration.core.annotations import CONTRACT_ANNOTATIONS
from preemption_toleration.inventory.labels import LabelIndex
from preemption_toleration.inventory.ownership import age_order, selector_of
from preemption_toleration.records.policy import PolicyView
from preemption_toleration.records.priority_class import ClassView
from preemption_toleration.validation.toleration_rules import POLICY_SPEC, ClassValue, unaffected, without_effect_text


class Reason(str, Enum):
    APPLIED = "Applied"
    # applied, but its minimum holds back no preemptor of (some of) its classes (`minimum_without_effect`)
    APPLIED_NO_EFFECT = "AppliedNoEffect"
    NOT_FOUND = "PriorityClassNotFound"
    CONFLICT = "Conflict"
    INVALID = "Invalid"
    APPLY_FAILED = "ApplyFailed"  # set by the operator when the API refused a write; retried
    NOT_SERVED = "KindNotServed"  # it governs a kind of class this operator does not (Kueue's, with --kueue off)


@dataclass(frozen=True)
class GovernedClass:
    name: str
    minimum_preemptable_priority: int | None
    toleration_seconds: int | None


@dataclass(frozen=True)
class PolicyOutcome:
    name: str
    reason: Reason
    message: str
    target: str
    classes: tuple[GovernedClass, ...] = ()

    @property
    def ready(self) -> bool:
        return self.reason in (Reason.APPLIED, Reason.APPLIED_NO_EFFECT)


@dataclass(frozen=True)
class ClassWrite:
    """A server-side apply of our annotation keys on one class; empty `annotations` releases them."""

    class_name: str
    annotations: Mapping[str, str]
    policy_name: str | None  # the governing policy, None for a release
    kind: ClassKind = ClassKind.PRIORITY_CLASS


@dataclass(frozen=True)
class Plan:
    owners: Mapping[str, str] = field(default_factory=dict)  # class name -> policy name
    outcomes: Mapping[str, PolicyOutcome] = field(default_factory=dict)
    writes: tuple[ClassWrite, ...] = ()


def apply_body(view: ClassView, annotations: Mapping[str, str]) -> dict[str, object]:
    """The server-side apply configuration of our keys on an existing class.

    It carries the class's uid as a precondition, so a class deleted meanwhile is never re-created.
    """
    return {
        "apiVersion": view.kind.api_version,
        "kind": view.kind.value,
        "metadata": {"name": view.name, "uid": view.uid, "annotations": dict(annotations)},
    }


def failed_outcome(
    outcome: PolicyOutcome, class_name: str, problem: str, kind: ClassKind = ClassKind.PRIORITY_CLASS
) -> PolicyOutcome:
    return PolicyOutcome(
        outcome.name,
        Reason.APPLY_FAILED,
        f"Could not write {kind.value} {class_name}: {problem}. Retrying.",
        outcome.target,
        outcome.classes,
    )


def desired_annotations(spec: PreemptionTolerationPolicySpec) -> dict[str, str]:
    """The contract's annotations the spec sets, each from its spec field (`ContractAnnotation.spec_field`)."""
    values = {contract.key: getattr(spec, contract.attribute) for contract in CONTRACT_ANNOTATIONS}
    return {key: str(value) for key, value in values.items() if value is not None}


def selector_text(selector: LabelSelector) -> str:
    parts = [f"{key}={value}" for key, value in sorted((selector.match_labels or {}).items())]
    for requirement in selector.match_expressions or []:
        if requirement.operator in ("In", "NotIn"):
            values = ",".join(requirement.values or [])
            parts.append(f"{requirement.key} {requirement.operator.lower()} ({values})")
        else:
            parts.append(requirement.key if requirement.operator == "Exists" else f"!{requirement.key}")
    return ",".join(parts)


def target_text(spec: PreemptionTolerationPolicySpec) -> str:
    """What the policy governs, for `kubectl get`: a class name or a selector, after the kind where it is not
    PriorityClass."""
    kind = "" if spec.class_kind is ClassKind.PRIORITY_CLASS else f"{spec.class_kind.value} "
    if spec.priority_class_name is not None:
        return f"{kind}{spec.priority_class_name}"
    if spec.priority_class_selector is not None:
        return f"{kind}selector {selector_text(spec.priority_class_selector)}"
    return ""


def governed_names(
    spec: PreemptionTolerationPolicySpec, classes: Mapping[str, ClassView], labels: LabelIndex | None = None
) -> list[str]:
    """Names the policy claims: its named class (existing or not), or the existing classes it selects."""
    selector = selector_of(spec)
    if selector is None:
        return [str(spec.priority_class_name)]
    return (labels or LabelIndex(classes)).matching(selector)


def _applied_message(names: list[str], annotations: Mapping[str, str], kind: ClassKind) -> str:
    values = ", ".join(f"{key.rsplit('/', 1)[1]}={value}" for key, value in annotations.items()) or "no annotations"
    if len(names) == 1:
        return f"Applied to {kind.value} {names[0]}: {values}."
    return f"Applied to {len(names)} {kind.plural_kind} ({', '.join(names)}): {values}."


def not_served_outcome(policy: PolicyView) -> PolicyOutcome:
    """The outcome of a policy that governs a kind of class the operator does not govern (Kueue's, with its
    Kueue support off)."""
    kind = policy.class_kind
    return PolicyOutcome(
        policy.name,
        Reason.NOT_SERVED,
        f"It governs {kind.plural_kind}, which the operator governs only with --kueue on "
        "(Helm: kueue.enabled=true), once it has listed them (is Kueue installed?); nothing is applied.",
        target_text(policy.spec) if policy.spec is not None else "",
    )


def _outcome(
    policy: PolicyView, classes: Mapping[str, ClassView], owners: Mapping[str, str], claimed: list[str]
) -> PolicyOutcome:
    if policy.spec is None:
        message = " ".join(problem.message for problem in policy.problems) or "The policy is invalid."
        return PolicyOutcome(policy.name, Reason.INVALID, message, target="")
    spec = policy.spec
    kind = spec.class_kind
    target = target_text(spec)
    mine = [name for name in claimed if owners.get(name) == policy.name]
    existing = [name for name in mine if name in classes]
    governed = tuple(
        GovernedClass(name, spec.minimum_preemptable_priority, spec.toleration_seconds) for name in existing
    )
    if spec.priority_class_selector is not None:
        target = f"{target} ({len(existing)})"
    contested = [(name, owners[name]) for name in claimed if owners.get(name) != policy.name]
    if contested:
        name, other = contested[0]
        still = f" It still governs {len(existing)} other {kind.value}(es)." if existing else ""
        return PolicyOutcome(
            policy.name,
            Reason.CONFLICT,
            f'{kind.value} {name} is already governed by PreemptionTolerationPolicy "{other}"; this policy '
            f"leaves it alone while that one governs it.{still}",
            target,
            governed,
        )
    if not existing:
        if spec.priority_class_name is not None:
            message = (
                f"{kind.value} {spec.priority_class_name} does not exist; the policy is applied when it is created."
            )
        else:
            message = (
                f"No {kind.value} matches {target_text(spec)}; the policy is applied to each class that "
                "gets the labels."
            )
        return PolicyOutcome(policy.name, Reason.NOT_FOUND, message, target)
    applied = _applied_message(existing, desired_annotations(spec), kind)
    minimum = spec.minimum_preemptable_priority
    low = unaffected(minimum, [ClassValue(name, classes[name].value) for name in existing])
    if low:
        message = f"{applied} {without_effect_text(minimum, low, POLICY_SPEC)}"
        return PolicyOutcome(policy.name, Reason.APPLIED_NO_EFFECT, message, target, governed)
    return PolicyOutcome(policy.name, Reason.APPLIED, applied, target, governed)


def _write_for(view: ClassView, desired: Mapping[str, str], policy_name: str | None) -> ClassWrite | None:
    in_place = all(view.annotations.get(key) == value for key, value in desired.items())
    if in_place and view.owned_keys == frozenset(desired):
        return None
    return ClassWrite(view.name, dict(desired), policy_name, view.kind)


def plan(
    policies: Iterable[PolicyView], classes: Iterable[ClassView], kind: ClassKind = ClassKind.PRIORITY_CLASS
) -> Plan:
    """The plan of the classes of `kind`, from the policies that govern that kind. Each class goes to the oldest
    policy that claims it; a newer claimant is in Conflict for it but keeps the classes nobody else claims, so a
    label change never strips another class's protection."""
    by_name = {view.name: view for view in classes}
    ordered = [p for p in sorted(policies, key=age_order) if not p.deleting and p.class_kind is kind]
    owners: dict[str, str] = {}
    claims: dict[str, list[str]] = {}
    specs: dict[str, PreemptionTolerationPolicySpec] = {}
    labels = LabelIndex(by_name)
    for policy in ordered:
        if policy.spec is None:
            continue
        specs[policy.name] = policy.spec
        claims[policy.name] = governed_names(policy.spec, by_name, labels)
        for name in claims[policy.name]:
            owners.setdefault(name, policy.name)
    outcomes = {policy.name: _outcome(policy, by_name, owners, claims.get(policy.name, [])) for policy in ordered}
    writes: list[ClassWrite] = []
    for name, view in sorted(by_name.items()):
        owner = owners.get(name)
        desired = desired_annotations(specs[owner]) if owner is not None else {}
        write = _write_for(view, desired, owner)
        if write is not None:
            writes.append(write)
    return Plan(owners=owners, outcomes=outcomes, writes=tuple(writes))


def plan_kinds(policies: Iterable[PolicyView], classes: Mapping[ClassKind, Iterable[ClassView]]) -> Plan:
    """The outcomes and writes of every kind of class in `classes` (the kinds the operator governs); each policy
    of another kind gets `KindNotServed`. No owners: class names are unique within one kind only."""
    policies = list(policies)
    outcomes: dict[str, PolicyOutcome] = {}
    writes: list[ClassWrite] = []
    for kind, views in classes.items():
        decided = plan(policies, views, kind)
        outcomes.update(decided.outcomes)
        writes.extend(decided.writes)
    for policy in policies:
        if policy.class_kind not in classes and not policy.deleting:
            outcomes[policy.name] = not_served_outcome(policy)
    return Plan(outcomes=outcomes, writes=tuple(writes))
