"""The pod index: every pod by key, the pods of each node, and the pending preemptor candidates in the
scheduler's queue order, grouped by priority and scheduling constraints.

A guard decision reads only the victim's node, the pods nominated to it and the candidate groups above
the victim's priority: one group per workload shape, not one entry per pod, so a cluster with 100,000
pending pods of a few Jobs costs a decision a few comparisons.

A candidate deleted (a cancelled job) is remembered for a while, the latest of each shape: the
scheduler's asynchronous preemption for it goes on deleting its victims after it is gone.

The members of each PodGroup (Kubernetes 1.37) are indexed by the group's key, with the time its last member
was scheduled computed once per change of its members: a decision on a member of a 64-pod group reads one
value, not 64 pods.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from preemption_toleration.core.groups import group_scheduled_since
from preemption_toleration.core.pods import PodKey, pod_key
from preemption_toleration.core.quantities import LATEST_RULES, ResizeRules
from preemption_toleration.records.pod import NO_CONSTRAINTS, Constraints, Shared, SlimPod, preempted, slim_pod

_EMPTY: Mapping[PodKey, SlimPod] = {}
GONE_REMEMBERED = 4096  # UIDs of the latest deleted pods kept, to tell "deleted" from "not seen yet"
DEPARTED_SHAPES = 256  # deleted candidates remembered: the latest of each priority and constraints
JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"  # the Job controller's label on each pod of a Job


class PendingGroup:
    """Pending candidates of one priority and one set of constraints, oldest first."""

    __slots__ = ("priority", "constraints", "members")

    def __init__(self, priority: int, constraints: Constraints) -> None:
        self.priority = priority
        self.constraints = constraints
        self.members: list[tuple[str, str, str]] = []  # (creationTimestamp, namespace, name), sorted

    def oldest(self) -> PodKey:
        _, namespace, name = self.members[0]
        return namespace, name


class GroupMembers:
    """The pods of one PodGroup the index holds, and when the last of them was scheduled."""

    __slots__ = ("_known", "_since", "pods")

    def __init__(self) -> None:
        self.pods: dict[PodKey, SlimPod] = {}
        self._since: datetime | None = None
        self._known = False  # whether `_since` is of the members as they are

    def changed(self) -> None:
        self._known = False

    def scheduled_since(self) -> datetime | None:
        """`core.groups.group_scheduled_since` of the members, computed once per change of them."""
        if not self._known:
            self._since, self._known = group_scheduled_since(self.pods.values()), True
        return self._since


NO_MEMBERS = GroupMembers()


class PodIndex:
    """Kept equal to the API's pods by a watch (`put`, `remove`, `prune`); read by decisions."""

    def __init__(
        self, rules: ResizeRules = LATEST_RULES, clock: Callable[[], float] = time.monotonic, jobs: bool = False
    ) -> None:
        self.shared = Shared(rules)
        self._clock = clock
        self.pods: dict[PodKey, SlimPod] = {}
        self._by_node: dict[str, dict[PodKey, SlimPod]] = {}
        self._nominated: dict[str, dict[PodKey, SlimPod]] = {}
        self._groups: dict[tuple[int, str], PendingGroup] = {}
        self._members: dict[PodKey, GroupMembers] = {}  # by their PodGroup's (namespace, name)
        self._order: list[tuple[int, str]] = []  # group keys as (-priority, signature), sorted
        self._gone: dict[str, None] = {}  # UIDs of deleted pods, oldest first, at most GONE_REMEMBERED
        # (priority, constraints' signature) -> (when, the latest candidate of that shape deleted), oldest first
        self._departed: dict[tuple[int, str], tuple[float, SlimPod]] = {}
        # Told, once, of a member of a PodGroup that the scheduler's preemption has begun to delete: marked and
        # terminating (as a watch or a listing shows it), or gone marked.
        self.member_preempted: Callable[[SlimPod], None] | None = None
        # With `jobs` (Kueue's boost): the bound pods of each Job (a pod keeps its labels once bound) by its
        # UID, and who to tell when they change
        self._jobs: dict[str, GroupMembers] | None = {} if jobs else None
        self.job_changed: Callable[[str], None] | None = None

    @classmethod
    def of(cls, pods: Iterable[Mapping[str, Any]]) -> PodIndex:
        index = cls()
        for pod in pods:
            index.put(pod)
        return index

    # --- the store a watch keeps -----------------------------------------------------------------------

    def key(self, raw: Mapping[str, Any]) -> Hashable:
        return pod_key(raw)

    def put(self, raw: Mapping[str, Any]) -> Hashable:
        pod = slim_pod(raw, self.shared)
        old = self.pods.get(pod.key)
        if old is not None:
            self._unindex(old)
            if old.pending_candidate and pod.deletion is not None and pod.node_name is None:
                self._depart(old)
        if pod.preempted and (old is None or not old.preempted) and pod.pod_group is not None and self.member_preempted:
            self.member_preempted(pod)
        self.pods[pod.key] = pod
        self._index(pod)
        return pod.key

    def remove(self, raw: Mapping[str, Any]) -> None:
        old = self.pods.pop(pod_key(raw), None)
        if old is not None:
            self._drop(old)
            # deleted at once (no grace period): its last state is the watch's DELETED object
            if not old.preempted and old.pod_group is not None and self.member_preempted and preempted(raw):
                self.member_preempted(old)

    def prune(self, keep: Collection[Hashable]) -> None:
        """Drops every pod whose key is not in `keep` (what a fresh listing did not return)."""
        for key in [key for key in self.pods if key not in keep]:
            self._drop(self.pods.pop(key))

    def __len__(self) -> int:
        return len(self.pods)

    # --- reads -----------------------------------------------------------------------------------------

    def get(self, key: PodKey) -> SlimPod | None:
        return self.pods.get(key)

    def on_node(self, node_name: str) -> Collection[SlimPod]:
        return self._by_node.get(node_name, _EMPTY).values()

    def nominated_to(self, node_name: str) -> Collection[SlimPod]:
        """The unbound pods nominated to the node, preemptors or not (`preemptionPolicy: Never` too)."""
        return self._nominated.get(node_name, _EMPTY).values()

    def describe_absent(self, uids: Sequence[str]) -> str:
        """What the index knows of pods it does not hold, by UID: deleted lately, or not seen yet."""
        gone = [uid for uid in uids if uid in self._gone]
        unseen = [uid for uid in uids if uid not in self._gone]
        parts = [f"already deleted: {', '.join(gone)}"] if gone else []
        if unseen:
            parts.append(f"not in the cache yet: {', '.join(unseen)}")
        return "; ".join(parts)

    def departed(self, within: float) -> Iterator[SlimPod]:
        """Pending candidates deleted in the last `within` seconds, the latest of each priority and set of
        constraints, latest first."""
        since = self._clock() - within
        for at, pod in reversed(self._departed.values()):
            if at < since:
                return
            yield pod

    def members_of(self, group: PodKey) -> GroupMembers:
        """The pods that name the PodGroup `group` (namespace, name); none when no pod does."""
        return self._members.get(group, NO_MEMBERS)

    def job_pods(self, job_uid: str) -> GroupMembers:
        """The pods of the Job of UID `job_uid` (by its controller-uid label); none without `jobs`."""
        return self._jobs.get(job_uid, NO_MEMBERS) if self._jobs is not None else NO_MEMBERS

    def pending_groups(self) -> Iterator[PendingGroup]:
        """Groups of pending candidates, highest priority first."""
        for negative_priority, signature in self._order:
            yield self._groups[(-negative_priority, signature)]

    # --- bookkeeping -----------------------------------------------------------------------------------

    def _index(self, pod: SlimPod) -> None:
        if pod.node_name:
            self._by_node.setdefault(pod.node_name, {})[pod.key] = pod
        if pod.pod_group is not None:
            members = self._members.get((pod.key[0], pod.pod_group))
            if members is None:
                members = self._members[(pod.key[0], pod.pod_group)] = GroupMembers()
            members.pods[pod.key] = pod
            members.changed()
        if nominated := _nominated(pod):
            self._nominated.setdefault(nominated, {})[pod.key] = pod
        if self._jobs is not None and (job := job_uid_of(pod)):
            members = self._jobs.get(job)
            if members is None:
                members = self._jobs[job] = GroupMembers()
            members.pods[pod.key] = pod
            members.changed()
            if self.job_changed is not None:
                self.job_changed(job)
        if pod.pending_candidate:
            constraints = pod.constraints or NO_CONSTRAINTS
            group_key = (pod.priority, constraints.signature)
            group = self._groups.get(group_key)
            if group is None:
                group = self._groups[group_key] = PendingGroup(pod.priority, constraints)
                bisect.insort(self._order, (-pod.priority, constraints.signature))
            bisect.insort(group.members, (pod.created, *pod.key))

    def _drop(self, pod: SlimPod) -> None:
        """A pod deleted: out of the indexes, its UID and, for a candidate, its shape remembered."""
        self._unindex(pod)
        self._forget(pod)
        if pod.pending_candidate:
            self._depart(pod)

    def _forget(self, pod: SlimPod) -> None:
        if pod.uid:
            self._gone[pod.uid] = None
            if len(self._gone) > GONE_REMEMBERED:
                del self._gone[next(iter(self._gone))]

    def _depart(self, pod: SlimPod) -> None:
        shape = (pod.priority, (pod.constraints or NO_CONSTRAINTS).signature)
        self._departed.pop(shape, None)
        self._departed[shape] = (self._clock(), pod)
        if len(self._departed) > DEPARTED_SHAPES:
            del self._departed[next(iter(self._departed))]

    def _unindex(self, pod: SlimPod) -> None:
        if pod.node_name:
            _discard(self._by_node, pod.node_name, pod.key)
        if pod.pod_group is not None:
            members = self._members.get((pod.key[0], pod.pod_group))
            if members is not None:
                members.pods.pop(pod.key, None)
                members.changed()
                if not members.pods:
                    del self._members[(pod.key[0], pod.pod_group)]
        if nominated := _nominated(pod):
            _discard(self._nominated, nominated, pod.key)
        if self._jobs is not None and (job := job_uid_of(pod)) and (members := self._jobs.get(job)) is not None:
            members.pods.pop(pod.key, None)
            members.changed()
            if not members.pods:
                del self._jobs[job]
            if self.job_changed is not None:
                self.job_changed(job)
        if pod.pending_candidate:
            signature = (pod.constraints or NO_CONSTRAINTS).signature
            group = self._groups[(pod.priority, signature)]
            member = (pod.created, *pod.key)
            at = bisect.bisect_left(group.members, member)
            if at < len(group.members) and group.members[at] == member:
                del group.members[at]
            if not group.members:
                del self._groups[(pod.priority, signature)]
                del self._order[bisect.bisect_left(self._order, (-pod.priority, signature))]


def job_uid_of(pod: SlimPod) -> str | None:
    """The UID of the Job the pod belongs to (its controller-uid label), None for any other pod."""
    pairs = pod.label_pairs
    for at in range(0, len(pairs), 2):
        if pairs[at] == JOB_UID_LABEL:
            return pairs[at + 1]
    return None


def _nominated(pod: SlimPod) -> str | None:
    """The node an unbound pod is nominated to: the scheduler's nominator holds it there whatever its
    preemptionPolicy (its room counts for pods of lower or equal priority), until it is bound or deleted."""
    if pod.node_name or pod.deletion is not None:
        return None
    return pod.nominated_node


def _discard(table: dict[str, dict[PodKey, SlimPod]], name: str, key: PodKey) -> None:
    members = table.get(name)
    if members is not None:
        members.pop(key, None)
        if not members:
            del table[name]
