"""The guard's one decision per victim group of `disruptionMode: all` and preemption (docs/contract.md, "Pod
groups"): the scheduler deletes a group's members in parallel, each with its status patch, then its DELETE,
and stops at the first refusal, so the members must all get the answer the first of them got.

A decision stands while the requests for the group's members follow each other: each one less than
`BURST_GAP_SECONDS` after the one before it gets the kept decision, and so does any within
`FRESH_SECONDS` of the decision. After both, the next request is decided afresh (the scheduler's next attempt,
which the guard's refusal hold keeps a second or more away), so a toleration that ended meanwhile ends for
the group. A refusal kept by a chain of requests that never pauses is decided afresh `LONGEST_SECONDS` after
it at the latest: a toleration outlives its end by that much at most. An allowance (`lasting`) stands for as
long as the chain goes on, however long: the scheduler is deleting the group's members, about 800 of them in
30 s at its default request rate, and a decision made afresh in the middle of the deletion (a policy applied
meanwhile, a member scheduled again) would stop it there and leave the group in part.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")

BURST_GAP_SECONDS = 0.5
FRESH_SECONDS = 2.0
LONGEST_SECONDS = 30.0
KEPT_GROUPS = 4096  # the latest groups decided; an older one is decided afresh


class GroupVerdicts(Generic[V]):
    """Decisions by group UID, kept as the module says."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        # uid -> (decided at, last asked at, decision, whether it lasts while asked)
        self._kept: dict[str, tuple[float, float, V, bool]] = {}

    def recall(self, group_uid: str) -> V | None:
        """The decision that stands for the group, now asked again; None when there is none."""
        kept = self._kept.get(group_uid)
        if kept is None:
            return None
        now = self._clock()
        decided, asked, decision, lasting = kept
        age = now - decided
        paused = age >= FRESH_SECONDS and now - asked >= BURST_GAP_SECONDS
        if paused or (age >= LONGEST_SECONDS and not lasting):
            del self._kept[group_uid]
            return None
        self._kept[group_uid] = (decided, now, decision, lasting)
        return decision

    def keep(self, group_uid: str, decision: V, lasting: bool = False) -> None:
        """`lasting`: an allowance, which stands while the requests follow each other, however long."""
        now = self._clock()
        self._kept.pop(group_uid, None)
        self._kept[group_uid] = (now, now, decision, lasting)
        if len(self._kept) > KEPT_GROUPS:
            del self._kept[next(iter(self._kept))]
