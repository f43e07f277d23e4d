"""Members of pod groups preempted without the guard's decision: counted, logged, and told on their PodGroup.

The guard decides once for a whole group of `disruptionMode: all`, but only about the requests it is asked.
When the API server does not call it (the server down, or not registered yet) or its answer comes after the
webhook's timeout, the failurePolicy Ignore lets the scheduler's preemption through, member by member, and the
group can be left in part. The pod cache's watch shows each member the scheduler's preemption begins to delete
(`PodIndex.member_preempted`); one whose preemption the guard did not allow is counted
(`ptol_guard_unjudged_members_total`), logged, and told by a Warning Event on its PodGroup: one Event per
group for the members seen within `BATCH_SECONDS`, which says whether the group is left in part. The guard
goes on deciding about the rest as one. Namespaces the guard skips by name are not reported; those opted out
by label are (the server does not read namespaces).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection

from preemption_toleration.api.resources import pod_group_ref
from preemption_toleration.core.groups import DisruptionMode
from preemption_toleration.inventory.view import ClusterView, GroupsNotCurrent
from preemption_toleration.kube.events import ObjectEvents
from preemption_toleration.records.pod import PodKey, SlimPod

logger = logging.getLogger("preemption_toleration.guard")
REASON = "MembersPreemptedUnjudged"
BATCH_SECONDS = 2.0  # the members of one group seen within this long after the first: one Event
ALLOWED_KEPT = 4096  # the latest members whose preemption the guard allowed (the watch shows it ms later)
NAMED = 10  # members an Event names; the others are counted


def unjudged_message(members: list[str], remaining: int) -> str:
    """The Event's words for `members` ("namespace/name") preempted unjudged, `remaining` members left."""
    named = ", ".join(members[:NAMED]) + (f" and {len(members) - NAMED} more" if len(members) > NAMED else "")
    count = f"{len(members)} member" + ("s" if len(members) != 1 else "")
    left = (
        f"the group is left in part: {remaining} member{'s' if remaining != 1 else ''} left, which the guard "
        "decides about as one"
        if remaining
        else "no member is left"
    )
    return (
        f"{count} preempted by the scheduler without the guard's decision ({named}): the API server did not call "
        f"the guard for them, or applied its failurePolicy (the guard down or too slow); {left}"
    )


class UnjudgedMembers:
    """The pods whose preemption the guard allowed (`allowed`), and the members the watch shows preempted
    (`member_preempted`): those not allowed are reported as the module says."""

    def __init__(
        self,
        view: Callable[[], ClusterView],
        events: ObjectEvents,
        count: Callable[[], None],
        skipped: Collection[str] = (),
    ) -> None:
        self.view = view
        self.events = events
        self.count = count
        self.skipped = frozenset(skipped)  # namespaces the API server never sends the guard, by name
        self._allowed: dict[PodKey, None] = {}  # oldest first
        self._batches: dict[tuple[str, str], list[str]] = {}  # the group's key -> members seen, not yet told

    def allowed(self, key: PodKey) -> None:
        """The guard allowed a preemption's request about the member `key` (no I/O: on the request path)."""
        self._allowed.pop(key, None)
        self._allowed[key] = None
        if len(self._allowed) > ALLOWED_KEPT:
            del self._allowed[next(iter(self._allowed))]

    def member_preempted(self, pod: SlimPod) -> None:
        """A member of a PodGroup the scheduler's preemption began to delete (from the watch, no I/O)."""
        if pod.key in self._allowed:  # the guard allowed it
            del self._allowed[pod.key]
            return
        if pod.namespace in self.skipped:
            return
        assert pod.pod_group is not None
        try:
            group = self.view().group_of(pod)
        except GroupsNotCurrent:  # the guard answered 503 about it: the group's mode is not known either
            group = None
        if group is not None and group.disruption is not DisruptionMode.ALL:
            return  # its members are judged, and preempted, one by one
        self.count()
        group_key = (pod.namespace, pod.pod_group)
        logger.warning(
            "member of a pod group preempted without the guard's decision",
            extra={"pod": pod.ref, "podGroup": "/".join(group_key)},
        )
        batch = self._batches.get(group_key)
        if batch is not None:
            batch.append(pod.ref)
            return
        self._batches[group_key] = [pod.ref]
        asyncio.get_running_loop().call_later(BATCH_SECONDS, self._tell, group_key)

    def _tell(self, group_key: tuple[str, str]) -> None:
        members = sorted(self._batches.pop(group_key, []))
        view = self.view()
        remaining = sum(1 for pod in view.pods.members_of(group_key).pods.values() if pod.deletion is None)
        group = view.groups.get("/".join(group_key))
        ref = group.object_ref if group is not None else pod_group_ref(*group_key, "")
        self.events.post(ref, "Warning", REASON, unjudged_message(members, remaining))
