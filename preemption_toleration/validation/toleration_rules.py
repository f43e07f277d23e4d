"""The warnings about toleration values that PriorityClass annotations and policies share.

Each kind of object names its two values its own way (annotation keys with quoted string values, or
spec fields with numbers); the rules and their reasons are the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from preemption_toleration.api.base import MAX_TOLERATION_SECONDS
from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY, TOLERATION_SECONDS
from preemption_toleration.validation.findings import Field, Finding, warning

SYSTEM_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
HIGHEST_SYSTEM_PRIORITY = max(SYSTEM_CLASSES.values())


@dataclass(frozen=True)
class Spelling:
    """How one kind of object writes the minimum and the toleration, and their values."""

    minimum: str
    seconds: str
    quoted: bool
    minimum_to_add: str  # what a fix says to add: the whole annotation key, or the field
    minimum_field: Field  # where each is written in the object
    seconds_field: Field

    def value(self, number: int) -> str:
        return f'"{number}"' if self.quoted else str(number)


ANNOTATIONS = Spelling(
    "minimum-preemptable-priority",
    "toleration-seconds",
    quoted=True,
    minimum_to_add=MINIMUM_PREEMPTABLE_PRIORITY,
    minimum_field=("metadata", "annotations", MINIMUM_PREEMPTABLE_PRIORITY),
    seconds_field=("metadata", "annotations", TOLERATION_SECONDS),
)
POLICY_SPEC = Spelling(
    "spec.minimumPreemptablePriority",
    "spec.tolerationSeconds",
    quoted=False,
    minimum_to_add="spec.minimumPreemptablePriority",
    minimum_field=("spec", "minimumPreemptablePriority"),
    seconds_field=("spec", "tolerationSeconds"),
)


def overflow_problem(what: str, fix: str) -> str:
    """Why a toleration of more than MAX_TOLERATION_SECONDS is refused, for an annotation or a policy field:
    `what` names the value ('PriorityClass "x": toleration-seconds "…" is'), `fix` says what to write."""
    return (
        f"{what} above {MAX_TOLERATION_SECONDS}; the scheduler multiplies it by 10^9 in 64 bits, where it "
        f"wraps around to an unintended toleration. Fix: {fix}."
    )


def toleration_warnings(
    subject: str, minimum: int | None, seconds: int | None, has_minimum: bool, spelling: Spelling
) -> list[Finding]:
    """`has_minimum`: a minimum is written, even one that does not parse (that is an error of its own)."""
    findings: list[Finding] = []
    if seconds is not None and not has_minimum:
        findings.append(
            warning(
                "toleration-without-minimum",
                f"{subject}: {spelling.seconds} {spelling.value(seconds)} has no effect without {spelling.minimum}. "
                f"Fix: set {spelling.minimum_to_add}, e.g. {spelling.value(10000)}.",
                spelling.seconds_field,
            )
        )
    if seconds is not None and seconds < -1:
        findings.append(
            warning(
                "negative-toleration",
                f"{subject}: {spelling.seconds} {spelling.value(seconds)} means forever, like any negative value. "
                f"Fix: write {spelling.value(-1)}.",
                spelling.seconds_field,
            )
        )
    if minimum is not None and minimum > HIGHEST_SYSTEM_PRIORITY:
        findings.append(
            warning(
                "minimum-above-system-classes",
                f"{subject}: {spelling.minimum} {spelling.value(minimum)} is above every system class "
                f"({HIGHEST_SYSTEM_PRIORITY}): no pod may preempt these pods while tolerated. "
                f"Fix: use at most {HIGHEST_SYSTEM_PRIORITY}.",
                spelling.minimum_field,
            )
        )
    return findings
