"""Kubernetes Events on the victims of refused preemptions, aggregated per victim and reason; and for a
member of a PodGroup, one on its group too, aggregated per group (the group is refused as a whole).

A scheduler retrying many times a second must not flood the API server: the first refusal creates an Event,
later ones raise its count, at most once per interval (the server's one recorder aggregates them:
`kube.events.EventRecorder`). The guard hands over the first refusal of a kind and then one per interval with
the number of refusals it stands for (`guard.repeats`). Posting happens off the request path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from preemption_toleration.api.resources import ObjectRef, pod_ref
from preemption_toleration.core.groups import DisruptionMode
from preemption_toleration.guard.verdicts import Refusal
from preemption_toleration.kube.events import EventRecorder
from preemption_toleration.records.pod_group import MemberRecord

COMPONENT = "preemption-toleration-guard"


@dataclass(frozen=True)
class Subject:
    """What a refusal's Event is about: its object, the Event's words, and the key its repeats add up under."""

    ref: ObjectRef
    message: str
    key: tuple[Any, ...]


def subjects(refusal: Refusal) -> list[Subject]:
    """The victim pod; for a member of a PodGroup, its group, whose Event stands for every member's refusal
    (the scheduler preempts the group's members together); and the preemptor's PodGroup, when it has one."""
    victim = refusal.victim
    found = [
        Subject(
            pod_ref(victim.namespace, victim.name, victim.uid),
            refusal.message,
            (victim.namespace, victim.name, victim.uid, refusal.audit, refusal.reason),
        )
    ]
    if isinstance(victim, MemberRecord):
        group = victim.group
        whole = group.disruption is DisruptionMode.ALL
        said = "for every member (disruptionMode all)" if whole else "for a member (disruptionMode single)"
        found.append(
            Subject(group.object_ref, f"preemption refused {said}: {refusal.message}", (group.uid, refusal.audit))
        )
    if (preemptors := refusal.preemptor_group) is not None:
        found.append(
            Subject(
                preemptors.object_ref,
                f"a member's preemption refused: {refusal.message}",
                (preemptors.uid, "preemptor", refusal.audit),
            )
        )
    return found


def reason_of(refusal: Refusal) -> str:
    return "PreemptionWouldBeRefused" if refusal.audit else "PreemptionRefused"


class RefusalEvents:
    """The guard's refusals as Events of the server's one recorder (`kube.events.EventRecorder`), each of a
    refusal's `subjects` aggregated under its key."""

    def __init__(self, recorder: EventRecorder) -> None:
        self.recorder = recorder

    def record(self, refusal: Refusal, count: int = 1) -> None:
        """Queue `refusal`, which stands for `count` refusals of its victim (the repeats since the last)."""
        if refusal.dry_run:
            return
        for subject in subjects(refusal):
            self.recorder.count(
                subject.key, subject.ref, "Warning", reason_of(refusal), subject.message, count, component=COMPONENT
            )
