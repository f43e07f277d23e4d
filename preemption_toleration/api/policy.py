"""The PreemptionTolerationPolicy custom resource (architecture §3)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field

from preemption_toleration.api.base import Int32, Int64, KubeModel, ObjectMeta
from preemption_toleration.api.resources import ClassKind
from preemption_toleration.core.annotations import MAX_TOLERATION_SECONDS

GROUP = "preemption-toleration.dev"
VERSION = "v1alpha1"
API_VERSION: Final = "preemption-toleration.dev/v1alpha1"  # GROUP/VERSION, spelled out for the type checker
KIND: Final = "PreemptionTolerationPolicy"
PLURAL = "preemptiontolerationpolicies"
SINGULAR = "preemptiontolerationpolicy"
SHORT_NAMES = ["ptp"]

# PriorityClass names are DNS subdomains.
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"

PriorityClassName = Annotated[str, Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN)]
TolerationSeconds = Annotated[
    Int64,
    Field(
        le=MAX_TOLERATION_SECONDS,
        description=(
            "How long pods of the governed classes tolerate preemptors below "
            "minimumPreemptablePriority, counted from the pod's PodScheduled time. "
            f"-1 (any negative value) means forever, 0 means not at all. At most {MAX_TOLERATION_SECONDS}: "
            "the scheduler plugin multiplies it by 10^9 in 64 bits, so larger values wrap into no toleration."
        ),
    ),
]


def _validations(*rules: dict[str, str]) -> ConfigDict:
    """CRD `x-kubernetes-validations` on a model's schema: the API server checks them even while the
    validating webhook is down. Messages say what the webhook's say, without the object's name and path,
    which the API server's error gives (tests/unit/test_crd.py)."""
    extra: dict[str, Any] = {"x-kubernetes-validations": list(rules)}
    return ConfigDict(json_schema_extra=extra)


def _given(field: str) -> str:
    """CEL: `field` of self is set and not empty."""
    return f"(has(self.{field}) && size(self.{field}) > 0)"


_NEEDS_VALUES = "(self.operator in ['In', 'NotIn'])"


class LabelSelectorRequirement(KubeModel):
    model_config = _validations(
        {
            "rule": f"!{_NEEDS_VALUES} || {_given('values')}",
            "messageExpression": "'uses ' + self.operator + ' without values. Fix: list the values.'",
        },
        {
            "rule": f"{_NEEDS_VALUES} || !{_given('values')}",
            "messageExpression": "'uses ' + self.operator + ' with values. Fix: remove values.'",
        },
    )

    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class LabelSelector(KubeModel):
    model_config = _validations(
        {
            "rule": f"{_given('matchLabels')} || {_given('matchExpressions')}",
            "message": "spec.priorityClassSelector is empty, which would govern every PriorityClass, system "
            "classes included. Fix: add matchLabels, e.g. {tier: batch}, or use priorityClassName.",
        },
    )

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class PreemptionTolerationPolicySpec(KubeModel):
    """Which PriorityClass(es) or WorkloadPriorityClass(es) the policy governs, and the toleration they give."""

    model_config = _validations(
        {
            "rule": "has(self.priorityClassName) != has(self.priorityClassSelector)",
            "messageExpression": "'spec sets ' + (has(self.priorityClassName) ? 'both' : 'neither of')"
            " + ' priorityClassName and priorityClassSelector. Fix: set exactly one of them.'",
        },
    )

    priority_class_name: PriorityClassName | None = Field(
        default=None,
        description="The one PriorityClass this policy governs. Exactly one of priorityClassName and "
        "priorityClassSelector.",
    )
    priority_class_selector: LabelSelector | None = Field(
        default=None,
        description="The PriorityClasses this policy governs, by label. Exactly one of priorityClassName "
        "and priorityClassSelector.",
    )
    priority_class_kind: ClassKind | None = Field(
        default=None,
        description="The kind of class priorityClassName and priorityClassSelector name: PriorityClass (the "
        "default), or Kueue's WorkloadPriorityClass, whose Workloads the Kueue support protects (it needs "
        "--kueue on).",
    )
    minimum_preemptable_priority: Int32 | None = Field(
        default=None,
        description="The lowest preemptor priority that may preempt pods of the governed classes at once. "
        "Default (unset): the class value + 1, i.e. every higher priority.",
    )
    toleration_seconds: TolerationSeconds | None = None

    @property
    def class_kind(self) -> ClassKind:
        return self.priority_class_kind or ClassKind.PRIORITY_CLASS


ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(KubeModel):
    type: str
    status: ConditionStatus
    reason: str | None = None
    message: str | None = None
    last_transition_time: datetime | None = None
    observed_generation: int | None = None


class AppliedPriorityClass(KubeModel):
    """What the operator applied to one governed PriorityClass."""

    name: str
    minimum_preemptable_priority: Int32 | None = None
    toleration_seconds: Int64 | None = None


class PreemptionTolerationPolicyStatus(KubeModel):
    observed_generation: int | None = None
    target: str | None = Field(
        default=None, description="What the policy governs, for kubectl get: a class name or a selector."
    )
    conditions: list[Condition] | None = None
    priority_classes: list[AppliedPriorityClass] | None = None


class PreemptionTolerationPolicy(KubeModel):
    api_version: Literal["preemption-toleration.dev/v1alpha1"] = API_VERSION
    kind: Literal["PreemptionTolerationPolicy"] = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PreemptionTolerationPolicySpec
    status: PreemptionTolerationPolicyStatus | None = None
