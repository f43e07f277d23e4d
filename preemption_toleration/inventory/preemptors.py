"""The preemptor the scheduler is working on for each victim, as its extender calls told us.

Every victim in a preempt call (the scheduler's proposal and the extender's answer) is remembered with
that call's preemptor for `RECORD_SECONDS`: long enough for the scheduler's deletions, which follow the
call at once, and short enough that a later preemption by another pod, after an extender outage, finds
no stale record. A newer call about the same victim replaces the record. The guard judges a recorded
victim against its recorded preemptor and infers a preemptor only for victims with no record.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from preemption_toleration.core.pods import PodKey
from preemption_toleration.records.pod import PodRecord

RECORD_SECONDS = 30
MAX_RECORDED = 100_000  # victims; the oldest records go first beyond it


@dataclass(frozen=True)
class RecordedPreemptor:
    """Which pod: the guard judges against the cache's record of it, while it is the same pod."""

    key: PodKey
    uid: str
    expires: datetime


class PreemptorRecord:
    def __init__(self, seconds: float = RECORD_SECONDS, capacity: int = MAX_RECORDED) -> None:
        self.lifetime = timedelta(seconds=seconds)
        self.capacity = capacity
        self._records: OrderedDict[str, RecordedPreemptor] = OrderedDict()

    def remember(self, preemptor: PodRecord, victim_uids: Iterable[str], now: datetime) -> None:
        record = RecordedPreemptor(preemptor.key, preemptor.uid, now + self.lifetime)
        for uid in victim_uids:
            self._records.pop(uid, None)
            self._records[uid] = record  # newest last, so the oldest are dropped first
        while len(self._records) > self.capacity:
            self._records.popitem(last=False)
        self._expire(now)

    def lookup(self, victim_uid: str, now: datetime) -> RecordedPreemptor | None:
        record = self._records.get(victim_uid)
        if record is None or record.expires <= now:
            return None
        return record

    def _expire(self, now: datetime) -> None:
        while self._records:
            uid, record = next(iter(self._records.items()))
            if record.expires > now:
                return
            del self._records[uid]

    def __len__(self) -> int:
        return len(self._records)
