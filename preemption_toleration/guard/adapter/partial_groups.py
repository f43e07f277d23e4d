"""Pod groups of `disruptionMode: all` that the scheduler's preemption left in part: counted, logged, and told
on their PodGroup.

The guard decides once for a whole group of `disruptionMode: all`, so through it alone a group is preempted whole
or not at all. A group can still be left in part where the guard was not asked about some members (the server
down, or too slow, and the API server applied the failurePolicy Ignore; a scheduler missing from
`--preemptor-identity`; a namespace the guard skips) while another check refused the others, or the other way
round. The pod cache's watch shows each member the scheduler's preemption begins to delete (marked
`PreemptionByScheduler` and deleting: `PodIndex.member_preempted`, which a listing at start reports too);
`BATCH_SECONDS` after a group's first, if some of its members still run, not being deleted, the group was left in
part: counted (`ptol_guard_groups_left_in_part_total`), logged, and told by a Warning Event on the PodGroup. The
scheduler may delete a group's victims over more than one attempt (one refused DELETE cancels the attempt's
others, which a later attempt deletes), so a group told before is told again with every member preempted so far,
not only the last batch's (for TOLD_SECONDS). The guard goes on deciding about the members left as one. This reads
only what the cluster shows, so replicas of the server that saw the same tell the same: one Event (named after
what was seen: the first replica's stands), and the same count in each replica's metric; a replica started between
two attempts names only what it saw.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Collection

from preemption_toleration.core.groups import DisruptionMode
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.kube.events import EventRecorder
from preemption_toleration.records.pod import SlimPod

logger = logging.getLogger("preemption_toleration.guard")
REASON = "PreemptedInPart"
# The scheduler deletes a group's victims together; members still running this long after the first one's
# deletion was seen are left.
BATCH_SECONDS = 5.0
NAMED = 10  # members an Event names; the others are counted
REMEMBERED = 10_000  # groups told in part whose preempted members are kept for a later telling; the oldest go
TOLD_SECONDS = 600.0  # how long the members told preempted count in a later telling of the same group
FINISHED = ("Succeeded", "Failed")


def in_part_message(preempted: list[str], left: list[str]) -> str:
    """The Event's words: the members (`namespace/name`) the scheduler preempted, and those left running."""

    def listed(members: list[str]) -> str:
        count = f"{len(members)} member{'s' if len(members) != 1 else ''}"
        shown = ", ".join(members[:NAMED]) + (f" and {len(members) - NAMED} more" if len(members) > NAMED else "")
        return f"{count} ({shown})"

    return (
        f"the scheduler's preemption left this group in part: {listed(preempted)} preempted, {listed(left)} still "
        "running; the guard decides about a disruptionMode all group as one, so some of its members' deletions were "
        "not judged by it (it was not called for them, or did not answer in time) or were refused by another check"
    )


def event_name(group: tuple[str, str], uid: str, preempted: list[str]) -> str:
    """The Event's name, the same in every replica that saw the same members preempted: one Event, not one per
    replica."""
    digest = hashlib.sha256("\n".join([uid, *preempted]).encode()).hexdigest()[:12]
    return f"{group[1][:200]}.ptol-in-part-{digest}"


class PartialGroups:
    """What the watch shows of members preempted, batched per group and told as the module says."""

    def __init__(
        self,
        view: Callable[[], ClusterView],
        events: EventRecorder,
        count: Callable[[], None],
        skipped: Collection[str] = (),
    ) -> None:
        self.view = view
        self.events = events
        self.count = count
        self.skipped = frozenset(skipped)  # namespaces the guard is never sent, by name: not its business
        self._batches: dict[tuple[str, str], list[str]] = {}  # the group's key -> members preempted, not yet told
        # the group's key -> its UID, the members told preempted and when (a group of that name made again, or
        # one told more than TOLD_SECONDS ago, starts anew)
        self._told: dict[tuple[str, str], tuple[str, frozenset[str], float]] = {}

    def member_preempted(self, pod: SlimPod) -> None:
        """A member of a PodGroup the scheduler's preemption began to delete (from the watch, no I/O)."""
        assert pod.pod_group is not None
        if pod.namespace in self.skipped:
            return
        group_key = (pod.namespace, pod.pod_group)
        batch = self._batches.get(group_key)
        if batch is not None:
            batch.append(pod.ref)
            return
        self._batches[group_key] = [pod.ref]
        asyncio.get_running_loop().call_later(BATCH_SECONDS, self._tell, group_key)

    def _tell(self, group_key: tuple[str, str]) -> None:
        batch = self._batches.pop(group_key, [])
        view = self.view()
        if view.groups_problem is not None:
            return  # the PodGroups are not current: nothing told from them (what was told is kept)
        group = view.groups.get("/".join(group_key))
        if group is None or group.disruption is not DisruptionMode.ALL:
            self._told.pop(group_key, None)
            return  # judged as pods (its group not known), or its members one by one: nothing to say
        left = sorted(
            pod.ref
            for pod in view.pods.members_of(group_key).pods.values()
            if pod.node_name and pod.deletion is None and pod.phase not in FINISHED
        )
        if not left:
            self._told.pop(group_key, None)
            return  # preempted whole
        now = asyncio.get_running_loop().time()
        told_uid, told, told_at = self._told.pop(group_key, ("", frozenset(), 0.0))
        earlier = told if told_uid == group.uid and now - told_at <= TOLD_SECONDS else frozenset()
        preempted = sorted({*batch, *(earlier - set(left))})  # a member made again under its name runs: left
        self._told[group_key] = (group.uid, frozenset(preempted), now)
        if len(self._told) > REMEMBERED:
            del self._told[next(iter(self._told))]
        self.count()
        logger.warning(
            "pod group left in part by the scheduler's preemption",
            extra={"podGroup": group.ref, "preempted": preempted, "left": left},
        )
        self.events.post(
            group.object_ref,
            "Warning",
            REASON,
            in_part_message(preempted, left),
            name=event_name(group.key, group.uid, preempted),
        )
