"""The toleration contract for pod groups (docs/contract.md, "Pod groups"): at which priority and by which
PriorityClass a group's member is judged, from when its toleration runs, and what judges a preemptor group.

Upstream's plugin knows no groups; these rules extend it and reduce to it for a pod without a group (every
function returns the pod itself). Pure: they read the facts of `core.pods`' protocols and of `GroupFacts`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from preemption_toleration.core.pods import PodFacts, PreemptorFacts


class DisruptionMode(StrEnum):
    """A PodGroup's `spec.disruptionMode` (`single` by default)."""

    SINGLE = "single"  # its members are disrupted one by one, as pods
    ALL = "all"  # all its scheduled members are disrupted, or none


class GroupFacts(Protocol):
    """What the contract reads of a PodGroup (`records.pod_group.PodGroupRecord`)."""

    @property
    def priority(self) -> int:
        """`spec.priority`, which the API server sets from the class (0 when unset, as the scheduler reads it)."""
        ...

    @property
    def priority_class(self) -> str | None: ...

    @property
    def disruption(self) -> DisruptionMode: ...

    @property
    def preempts_never(self) -> bool:
        """`spec.preemptionPolicy: Never`."""
        ...


def group_scheduled_since(members: Iterable[PodFacts]) -> datetime | None:
    """When the group's last member was scheduled: the latest `PodScheduled` time among its scheduled members;
    None while none is."""
    return max((since for member in members if (since := member.scheduled_since()) is not None), default=None)


class GroupMember:
    """A victim judged as a member of its group (a `PodFacts`): the group's priority and class, and the time
    its toleration runs from, with `disruptionMode: all` the group's (`group_since`, `group_scheduled_since`
    of its members), else the pod's own."""

    __slots__ = ("_since", "group", "pod")

    def __init__(self, pod: PodFacts, group: GroupFacts, group_since: datetime | None) -> None:
        self.pod = pod
        self.group = group
        self._since = group_since if group.disruption is DisruptionMode.ALL else pod.scheduled_since()

    @property
    def priority(self) -> int:
        return self.group.priority

    @property
    def priority_class(self) -> str | None:
        return self.group.priority_class

    @property
    def preempts_never(self) -> bool:
        return self.pod.preempts_never

    def scheduled_since(self) -> datetime | None:
        return self._since


def as_victim(pod: PodFacts, group: GroupFacts | None, group_since: datetime | None = None) -> PodFacts:
    """The facts `pod` is judged by as a victim: its group's priority and class, and with `disruptionMode: all`
    the group's scheduled time (`group_since`: `group_scheduled_since` of its members); the pod itself when it
    has no group."""
    return pod if group is None else GroupMember(pod, group, group_since)


class GroupPreemptor:
    """A preemptor group, as the scheduler judges it: the PodGroup's priority, and `Never` when the PodGroup
    or any of its pods says so (a `PreemptorFacts`)."""

    __slots__ = ("preempts_never", "priority")

    def __init__(self, priority: int, preempts_never: bool) -> None:
        self.priority = priority
        self.preempts_never = preempts_never


def as_preemptor(
    pod: PreemptorFacts, group: GroupFacts | None, members: Iterable[PreemptorFacts] = ()
) -> PreemptorFacts:
    """The facts a preemptor is judged by: its group's (`members`: the group's pods), or the pod's own."""
    if group is None:
        return pod
    never = group.preempts_never or pod.preempts_never or any(member.preempts_never for member in members)
    return GroupPreemptor(group.priority, never)
