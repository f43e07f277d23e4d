"""When to nudge a pending preemptor that a time-limited toleration held back.

The stock scheduler does not know that a toleration ends: a preemptor it could not place waits in its
unschedulable pool for an event its plugins deem relevant, or for the flush of pods unschedulable for
5 minutes. So whenever a toleration with an end holds a preemptor back on a node (the extender dropped or
changed the node for it, or the guard refused with seconds left), the plan keeps `(preemptor, node, until)`.
When `until` has passed, the preemptor is due for a nudge that makes the scheduler try it again at once.

One nudge per preemptor per expiry: a preemptor has at most one nudge planned, at the earliest end that
held it back; the retry it causes, if still held back, plans the next one. A write that fails is tried
again a few times, a few seconds apart.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from preemption_toleration.records.pod import PodRecord

# After the end, so that the retried attempt already finds the toleration over.
MARGIN = timedelta(milliseconds=250)
RETRY_AFTER = timedelta(seconds=5)
MAX_ATTEMPTS = 3
MAX_PLANNED = 100_000


@dataclass(frozen=True)
class Nudge:
    namespace: str
    name: str
    uid: str
    until: datetime  # the end of the toleration that held the preemptor back
    node: str  # where it held it back
    attempt: int = 1


class NudgePlan:
    def __init__(self, margin: timedelta = MARGIN, capacity: int = MAX_PLANNED) -> None:
        self.margin = margin
        self.capacity = capacity
        self._planned: dict[str, tuple[Nudge, datetime]] = {}  # by preemptor uid: (nudge, when due)
        self._fired: dict[str, datetime] = {}  # uid -> the last `until` handed out, to never plan it again
        self._queue: list[tuple[datetime, str]] = []  # (when, uid); entries no longer planned are skipped

    def hold(self, preemptor: PodRecord, node: str, until: datetime, now: datetime) -> bool:
        """Plans a nudge of `preemptor` once `until` has passed; False when nothing new is planned."""
        uid, name = preemptor.uid, preemptor.name
        if not uid or not name or not node or until <= now or self._fired.get(uid) == until:
            return False
        planned = self._planned.get(uid)
        if planned is not None and planned[0].until <= until:
            return False
        if planned is None and len(self._planned) >= self.capacity:
            return False
        self._plan(Nudge(preemptor.namespace, name, uid, until, node), until + self.margin)
        return True

    def retry(self, nudge: Nudge, now: datetime) -> bool:
        """Plans a failed nudge again, RETRY_AFTER later, unless it has had its attempts or a newer plan
        for the preemptor exists."""
        if nudge.attempt >= MAX_ATTEMPTS or nudge.uid in self._planned:
            return False
        self._plan(replace(nudge, attempt=nudge.attempt + 1), now + RETRY_AFTER)
        return True

    def _plan(self, nudge: Nudge, when: datetime) -> None:
        self._planned[nudge.uid] = (nudge, when)
        heapq.heappush(self._queue, (when, nudge.uid))

    def next_at(self) -> datetime | None:
        while self._queue and not self._current(*self._queue[0]):
            heapq.heappop(self._queue)
        return self._queue[0][0] if self._queue else None

    def due(self, now: datetime) -> list[Nudge]:
        """The nudges whose time has come, each handed out once."""
        found: list[Nudge] = []
        while self._queue and self._queue[0][0] <= now:
            when, uid = heapq.heappop(self._queue)
            if not self._current(when, uid):
                continue  # replaced by an earlier end, or already handed out
            nudge, _ = self._planned.pop(uid)
            self._fired[uid] = nudge.until
            found.append(nudge)
        if len(self._fired) > self.capacity:
            self._fired.clear()  # a memory bound; at worst one extra nudge for an expiry seen again
        return found

    def _current(self, when: datetime, uid: str) -> bool:
        planned = self._planned.get(uid)
        return planned is not None and planned[1] == when

    def __len__(self) -> int:
        return len(self._planned)
