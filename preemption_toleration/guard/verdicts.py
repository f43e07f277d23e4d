"""The guard's records: its configuration, a verdict and its refusal, how the preemptor was known, and the
decision that stands for a victim group's members in one preemption."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import NamedTuple

from preemption_toleration.core.protection import Protection
from preemption_toleration.guard.prefilter import GuardOperation
from preemption_toleration.records.pod import PodRecord
from preemption_toleration.records.pod_group import MemberRecord, PodGroupRecord

DEFAULT_PREEMPTOR_IDENTITIES = ("system:kube-scheduler",)


@dataclass(frozen=True)
class GuardConfig:
    preemptor_identities: Collection[str] = DEFAULT_PREEMPTOR_IDENTITIES
    audit: bool = False  # allow everything; report what would have been refused
    # Opt-in: an Eviction that names no preemptor (a drain, an autoscaler's scale-down), by anyone, is
    # judged as a preemption by a pod of this priority. None (the default): such an Eviction is allowed.
    eviction_preemptor_priority: int | None = None
    # With steering on: a scheduler's victim that does not tolerate the preemptor is refused too when the
    # preemptor cannot fit on its node without pods that do (`waste`): upstream would delete nothing there.
    refuse_in_vain: bool = False

    @property
    def judges_every_eviction(self) -> bool:
        """Whether an Eviction without our annotations may be refused (the prefilter and matchConditions
        must then let every Eviction through)."""
        return self.eviction_preemptor_priority is not None


# The request path builds these on every judged request: plain slotted classes, which build about five times
# faster than frozen dataclasses (each field of those is set through object.__setattr__). Not mutated.
@dataclass(slots=True)
class Refusal:
    """A preemption the guard refused (or, in audit mode, would have refused)."""

    kind: GuardOperation
    victim: PodRecord
    preemptor_priority: int
    preemptor: str | None
    protection: Protection
    code: int
    message: str
    audit: bool
    dry_run: bool
    preemptor_pod: PodRecord | None = None  # as judged (priority only, when unnamed)
    retry_after: int | None = None  # seconds, for a 429: when the Eviction may succeed
    preemptor_group: PodGroupRecord | None = None  # the preemptor's PodGroup, when it has one

    @property
    def reason(self) -> str:
        return self.protection.kind.value

    @property
    def victim_kind(self) -> VictimKind:
        return VictimKind.POD_GROUP if isinstance(self.victim, MemberRecord) else VictimKind.POD

    @property
    def denial(self) -> str:
        """What the refused client reads: the message, and for a 429 when to try again."""
        if self.retry_after is None:
            return self.message
        return f"{self.message} Retry after {self.retry_after} s."


class VictimKind(StrEnum):
    """What a refusal protects, in the scheduler's own words for what it preempts."""

    POD = "pod"
    POD_GROUP = "podgroup"  # a member of a PodGroup, judged as its group


class PreemptorSource(str, Enum):
    RECORDED = "recorded"  # the preemptor of the extender call that named this victim
    INFERRED = "inferred"  # guessed from pending pods (`inference`)
    DEPARTED = "departed"  # guessed from pending pods deleted in the last 30 s, when no pending one could be it
    NAMED = "named"  # an Eviction's annotation
    CONFIGURED = "configured"  # an Eviction that names none: the guard's eviction_preemptor_priority


@dataclass(slots=True)
class Verdict:
    """The guard's answer to a pod request, from which its handler builds the AdmissionResponse once: allowed
    (perhaps with a `note` for the client), or refused (`refusal`; in audit mode, allowed and reported)."""

    refusal: Refusal | None = None
    source: PreemptorSource | None = None  # how the preemptor was known, for a judged preemption
    preemptor: PodRecord | None = None  # the preemptor it was judged against
    note: str | None = None  # a warning for the client of an allowed request
    # a decision made afresh for a victim group of `disruptionMode: all` (its UID, the decision): the caller
    # settles it with the other replicas (`group_claims`) and judges again before it answers
    fresh_group: tuple[str, GroupDecision] | None = None

    @property
    def allowed(self) -> bool:
        return self.refusal is None or self.refusal.audit

    @property
    def warnings(self) -> tuple[str, ...]:
        """The warnings the answer carries: an audit's refusal, or the note."""
        if self.refusal is not None and self.refusal.audit:
            return (f"audit: would refuse: {self.refusal.message}",)
        return (self.note,) if self.note is not None else ()


ALLOWED = Verdict()  # users, controllers, drains, unmarked status updates, pods nobody can preempt


class GroupDecision(NamedTuple):
    """What stands for all the members of a victim group of `disruptionMode: all` in one preemption
    (`guard.group_claims`): the preemptor and how it was known, and the exemption; no preemptor: not judged
    (none could be found), so allowed. `adopted`: made by another replica, so an allowance stands here only
    where this replica's own facts bear it out."""

    preemptor: PodRecord | None
    source: PreemptorSource | None
    exempt: bool = False
    found: Protection | None = None
    adopted: bool = False


NO_PREEMPTOR = GroupDecision(None, None)
