"""The PreemptionTolerationPolicy custom resource (architecture §3)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Final, Literal

from pydantic import Field

from preemption_toleration.api.base import (
    MAX_TOLERATION_SECONDS,
    Int32,
    Int64,
    KubeModel,
    ObjectMeta,
)

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


class LabelSelectorRequirement(KubeModel):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class LabelSelector(KubeModel):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class PreemptionTolerationPolicySpec(KubeModel):
    """Which PriorityClass(es) the policy governs, and the toleration their pods get."""

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
    minimum_preemptable_priority: Int32 | None = Field(
        default=None,
        description="The lowest preemptor priority that may preempt pods of the governed classes at once. "
        "Default (unset): the class value + 1, i.e. every higher priority.",
    )
    toleration_seconds: TolerationSeconds | None = None


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
