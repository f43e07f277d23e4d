"""Who the preemptor of a request is: the one an Eviction names, the scheduler that marked a victim, and
for a scheduler's write, the one an extender call named, else the pending pod it most likely preempts for
(`inference`), else one deleted a moment ago; each as the scheduler judges it (by its PodGroup)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from preemption_toleration.core.annotations import PREEMPTOR, PREEMPTOR_PRIORITY
from preemption_toleration.core.groups import as_preemptor
from preemption_toleration.core.intparse import IntParseError, parse_go_int
from preemption_toleration.core.pods import PreemptorFacts, preemption_mark, priority_only
from preemption_toleration.guard.inference import VictimPlace, infer_departed_preemptor, infer_preemptor
from preemption_toleration.guard.memory import GuardMemory
from preemption_toleration.guard.verdicts import PreemptorSource
from preemption_toleration.inventory.preemptors import PreemptorRecord
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.pod import PodRecord, SlimPod
from preemption_toleration.records.pod_group import PodGroupRecord

_MARK_MESSAGE = ": preempting to accommodate a higher priority "  # after the scheduler's name, 1.26 to 1.37


def marking_scheduler(pod: Mapping[str, Any] | None) -> str | None:
    """The scheduler (profile) that marked `pod` as its victim: the mark's message begins with its
    `schedulerName`. None without a mark, or with a message of another form."""
    mark = preemption_mark(pod)
    message = mark.get("message") if mark is not None else None
    if not isinstance(message, str):
        return None
    name, found, _ = message.partition(_MARK_MESSAGE)
    return name if found and name else None


def explicit_preemptor(annotations: Mapping[str, Any], view: ClusterView) -> tuple[PodRecord | None, str | None]:
    """The preemptor an Eviction names by annotation: (its record, or None; a problem)."""
    if PREEMPTOR in annotations:
        namespace, _, name = str(annotations[PREEMPTOR]).partition("/")
        pod = view.pods.get((namespace, name))
        if pod is None:
            return None, f"the preemptor {annotations[PREEMPTOR]} named by {PREEMPTOR} is not a known pod"
        return pod, None
    if PREEMPTOR_PRIORITY in annotations:
        try:
            priority = parse_go_int(str(annotations[PREEMPTOR_PRIORITY]), 32)
        except IntParseError as error:
            return None, f"{PREEMPTOR_PRIORITY}={annotations[PREEMPTOR_PRIORITY]!r}: {error}"
        return priority_only(priority), None
    return None, None


def preemptor_facts(preemptor: PodRecord, view: ClusterView) -> tuple[PreemptorFacts, PodGroupRecord | None]:
    """A preemptor as the scheduler judges it (by its PodGroup when it has one), and that PodGroup."""
    group = view.group_of(preemptor)
    if group is None:
        return preemptor, None
    return as_preemptor(preemptor, group, view.pods.members_of(group.key).pods.values()), group


def cached_preemptor(claimed: PodRecord, view: ClusterView) -> PodRecord | None:
    """The caches' record of a preemptor a group's decision names, when they hold that very pod."""
    cached = view.pods.get(claimed.key)
    return cached if cached is not None and cached.uid == claimed.uid else None


def places_of(
    victim: PodRecord, node_name: str, whole: PodGroupRecord | None, view: ClusterView, scheduler: str | None
) -> Iterator[VictimPlace]:
    """Where the scheduler may be placing the preemptor: the victim's node, then, for a member of a group it
    takes whole, across nodes, the nodes of the group's other members, in name order (read only when the
    victim's own node gives no preemptor)."""
    yield VictimPlace(victim.priority, node_name, view.nodes.get(node_name), scheduler)
    if whole is not None:
        members = view.pods.members_of(whole.key).pods.values()
        for node in sorted({member.node_name for member in members if member.node_name} - {node_name}):
            yield VictimPlace(victim.priority, node, view.nodes.get(node), scheduler)


def scheduler_preemptor(
    victim: PodRecord,
    node_name: str,
    whole: PodGroupRecord | None,
    view: ClusterView,
    now: datetime,
    memory: GuardMemory,
    scheduler: str | None,
) -> tuple[PodRecord, PreemptorSource] | None:
    """The preemptor of a scheduler's write: the one an extender call named, else the pending pod it most
    likely preempts for, else one deleted a moment ago, on the victim's node or, for a member of a group the
    scheduler takes `whole`, on another member's (`places_of`)."""
    recorded = recorded_preemptor(victim, node_name, view, now, memory.preemptors)
    if recorded is not None:
        return recorded, PreemptorSource.RECORDED
    for place in places_of(victim, node_name, whole, view, scheduler):
        inferred = infer_preemptor(place, view.pods)
        if inferred is not None:
            return inferred, PreemptorSource.INFERRED
    for place in places_of(victim, node_name, whole, view, scheduler):
        departed = infer_departed_preemptor(place, view.pods)
        if departed is not None:
            return departed, PreemptorSource.DEPARTED
    return None


def recorded_preemptor(
    victim: PodRecord, node_name: str, view: ClusterView, now: datetime, preemptors: PreemptorRecord | None
) -> SlimPod | None:
    """The preemptor an extender call named for this victim, as the cache sees it now, while it may still
    be preempting it: the same pod, pending, not deleting, of higher priority than the victim, and not
    nominated to another node. None otherwise, or without a record. Only a pod of the cache counts, so a
    call naming a pod that does not exist decides nothing."""
    if preemptors is None:
        return None
    record = preemptors.lookup(victim.uid, now)
    cached = view.pods.get(record.key) if record is not None else None
    if (
        record is None
        or cached is None
        or cached.uid != record.uid
        or cached.node_name is not None
        or cached.deletion is not None
        or cached.priority <= victim.priority
        or (cached.nominated_node is not None and cached.nominated_node != node_name)
    ):
        return None
    return cached
