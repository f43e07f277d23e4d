"""Pod groups of `disruptionMode: all` that the scheduler's preemption left in part: counted, logged, and told
on their PodGroup.

The guard decides once for a whole group of `disruptionMode: all`, so through it alone a group is preempted whole
or not at all. A group can still be left in part where the guard was not asked about some members (the server
down, or too slow, and the API server applied the failurePolicy Ignore; a scheduler missing from `--preemptor-
identity`; a namespace the guard skips) while another check refused the others, or the other way round. The pod
cache's watch shows each member the scheduler's preemption begins to delete (marked `PreemptionByScheduler` and
deleting: `PodIndex.member_preempted`, which a listing at start reports too); `BATCH_SECONDS` after a group's
first, if some of its members still run, not being deleted, the group was left in part: counted
(`ptol_guard_groups_left_in_part_total`), logged, and told by a Warning Event on the PodGroup. The scheduler may
delete a group's victims over more than one attempt (one refused DELETE cancels the attempt's others, which a
later attempt deletes), so a group told before is told again with every member preempted so far, not only the last
batch's. The guard goes on deciding about the members left as one. This reads only what the cluster shows, so
every replica of the server tells the same: one Event (named after what was seen: the first replica's stands), and
the same count in each replica's metric.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Collection

from preemption_toleration.core.groups import DisruptionMode
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.kube.events import ObjectEvents
from preemption_toleration.records.pod import SlimPod

logger = logging.getLogger("preemption_toleration.guard")
REASON = "PreemptedInPart"
# The scheduler deletes a group's victims together; members still running this long after the first one's
# deletion was seen are left.
BATCH_SECONDS = 5.0
NAMED = 10  # members an Event names; the others are counted
REMEMBERED = 10_000  # groups told in part whose preempted members are kept for a later telling; the oldest go
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
        events: ObjectEvents,
        count: Callable[[], None],
        skipped: Collection[str] = (),
    ) -> None:
        self.view = view
        self.events = events
        self.count = count
        self.skipped = frozenset(skipped)  # namespaces the guard is never sent, by name: not its business
        self._batches: dict[tuple[str, str], list[str]] = {}  # the group's key -> members preempted, not yet told
        # the group's key -> its UID and the members told preempted (a group of that name made again starts anew)
        self._told: dict[tuple[str, str], tuple[str, frozenset[str]]] = {}

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
        told_uid, told = self._told.pop(group_key, ("", frozenset()))
        view = self.view()
        group = view.groups.get("/".join(group_key)) if view.groups_problem is None else None
        if group is None or group.disruption is not DisruptionMode.ALL:
            return  # judged as pods (its group not known), or its members one by one: nothing to say
        left = sorted(
            pod.ref
            for pod in view.pods.members_of(group_key).pods.values()
            if pod.node_name and pod.deletion is None and pod.phase not in FINISHED
        )
        if not left:
            return  # preempted whole
        preempted = sorted({*batch, *(told if told_uid == group.uid else ())})
        self._told[group_key] = (group.uid, frozenset(preempted))
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
