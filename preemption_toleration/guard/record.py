"""The preemptor the scheduler is working on for each victim, as its extender calls told us.

Every victim in a preempt call (the scheduler's proposal and the extender's answer) is remembered with
that call's preemptor for `RECORD_SECONDS`: long enough for the scheduler's deletions, which follow the
call at once, and short enough that a later preemption by another pod, after an extender outage, finds
no stale record. A newer call about the same victim replaces the record. The guard judges a recorded
victim against its recorded preemptor and infers a preemptor only for victims with no record.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from preemption_toleration.core.shapes import as_mapping

RECORD_SECONDS = 30
MAX_RECORDED = 100_000  # victims; the oldest records go first beyond it


@dataclass(frozen=True)
class RecordedPreemptor:
    pod: Mapping[str, Any]  # what the exemption check and the messages read of the preemptor
    expires: datetime

    @property
    def key(self) -> tuple[str, str]:
        metadata = as_mapping(self.pod.get("metadata"))
        return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")

    @property
    def uid(self) -> str:
        return str(as_mapping(self.pod.get("metadata")).get("uid") or "")


def preemptor_summary(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The preemptor's name, uid, priority, class and preemption policy: all any decision reads of it."""
    metadata = as_mapping(pod.get("metadata"))
    spec = as_mapping(pod.get("spec"))
    return {
        "metadata": {key: metadata[key] for key in ("namespace", "name", "uid") if key in metadata},
        "spec": {key: spec[key] for key in ("priority", "priorityClassName", "preemptionPolicy") if key in spec},
    }


class PreemptorRecord:
    def __init__(self, seconds: float = RECORD_SECONDS, capacity: int = MAX_RECORDED) -> None:
        self.lifetime = timedelta(seconds=seconds)
        self.capacity = capacity
        self._records: OrderedDict[str, RecordedPreemptor] = OrderedDict()

    def remember(self, preemptor: Mapping[str, Any], victim_uids: Iterable[str], now: datetime) -> None:
        record = RecordedPreemptor(preemptor_summary(preemptor), now + self.lifetime)
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
