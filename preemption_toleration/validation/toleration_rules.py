"""The warnings about toleration values that PriorityClass annotations and policies share.

Each kind of object names its two values its own way (annotation keys with quoted string values, or
spec fields with numbers); the rules and their reasons are the same. A minimum that holds back no
preemptor (`minimum_without_effect`) is judged against the value of each class it is about: the class's own
for its annotations, the classes a policy governs for a policy (`ptol validate` against those in its input,
the policy webhook against those in its cache, the operator's status against those it governs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from preemption_toleration.core.annotations import MAX_TOLERATION_SECONDS, MINIMUM, TOLERATION
from preemption_toleration.core.protection import holds_back_no_preemptor
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
    MINIMUM.name,
    TOLERATION.name,
    quoted=True,
    minimum_to_add=MINIMUM.key,
    minimum_field=("metadata", "annotations", MINIMUM.key),
    seconds_field=("metadata", "annotations", TOLERATION.key),
)
POLICY_SPEC = Spelling(
    f"spec.{MINIMUM.spec_field}",
    f"spec.{TOLERATION.spec_field}",
    quoted=False,
    minimum_to_add=f"spec.{MINIMUM.spec_field}",
    minimum_field=("spec", MINIMUM.spec_field),
    seconds_field=("spec", TOLERATION.spec_field),
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


@dataclass(frozen=True)
class ClassValue:
    """A PriorityClass a minimum is about, as a message names it: `name` None is the class whose
    annotations are judged; `where` is where the input defines it (`ptol validate`: path:line)."""

    name: str | None
    value: int
    where: str = ""

    def shown(self, first: bool = True) -> str:
        """'PriorityClass "low" (value 8000)'; in a list, after the first, '"low" (value 8000)'."""
        where = f", {self.where}" if self.where else ""
        if self.name is None:
            return f"this class (value {self.value}{where})"
        kind = "PriorityClass " if first else ""
        return f'{kind}"{self.name}" (value {self.value}{where})'


SHOWN_CLASSES = 5


def unaffected(minimum: int | None, classes: Iterable[ClassValue]) -> list[ClassValue]:
    """The classes whose pods `minimum` protects against no preemptor (core's `holds_back_no_preemptor`)."""
    return [found for found in classes if holds_back_no_preemptor(found.value, minimum)]


def without_effect_text(minimum: int | None, classes: Sequence[ClassValue], spelling: Spelling) -> str:
    """Why `minimum` has no effect on `classes` (each of them `unaffected`, at least one), and the fix."""
    listed = ", ".join(found.shown(first=index == 0) for index, found in enumerate(classes[:SHOWN_CLASSES]))
    if len(classes) > SHOWN_CLASSES:
        listed += f" and {len(classes) - SHOWN_CLASSES} more"
    its = "its" if len(classes) == 1 else "their"
    fix = f"Fix: set it above {max(found.value for found in classes) + 1}."
    if minimum is None:
        return (
            f"{spelling.minimum} is unset, so every higher priority may preempt the pods of {listed} at once, "
            f"as without a toleration. {fix}"
        )
    return (
        f"{spelling.minimum} {spelling.value(minimum)} has no effect on {listed}: it holds back only priorities "
        f"below {minimum}, none of which can preempt {its} pods. {fix}"
    )


def minimum_without_effect(subject: str, minimum: int, classes: Sequence[ClassValue], spelling: Spelling) -> Finding:
    """The warning on a minimum that holds back no preemptor of `classes` (each of them `unaffected`)."""
    return warning(
        "minimum-without-effect",
        f"{subject}: {without_effect_text(minimum, classes, spelling)}",
        spelling.minimum_field,
    )
