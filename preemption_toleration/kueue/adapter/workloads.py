"""Kueue's Workloads as the boost reads them: a cache of their records (the informer's store), each change told
to the worker, each preemption by Kueue told to the backstop, the Workload of each Job by the Job's UID and of
each UID, and the effective priorities of the pending ones (those a boost may have to keep away)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Mapping
from typing import Any, Final

from preemption_toleration.kueue.eviction import KueuePreemption, preemption_of
from preemption_toleration.kueue.threat import PendingPriorities
from preemption_toleration.records.workload import WorkloadRecord, workload_record


def workload_key(raw: Mapping[str, Any]) -> str:
    metadata = raw.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"


def is_pending(workload: WorkloadRecord) -> bool:
    """Waiting for quota: a preemptor Kueue may try (a finished one never is)."""
    return not workload.reserved and not workload.finished


Preempted = Callable[[WorkloadRecord, KueuePreemption], None]
# Workloads gone from the store kept by UID, the oldest dropped first: a preemptor deleted before the server saw
# its victim's eviction (a watch that ended and was listed again) is still known by its priority
DEPARTED_KEPT: Final = 1024


class WorkloadStore:
    """The informer's store of Workload records: `items` by "namespace/name", the key of each Job's Workload
    by the Job's UID and of each Workload by its UID, `changed(key)` told of every change, and `preempted(before,
    preemption)` of each Workload Kueue's preemption newly evicted (before `changed`: `before` is the record as
    it was), `pending` the effective priorities of those pending, and `pending_arrived(priority)` told of each
    effective priority no pending Workload had before (before `changed`)."""

    def __init__(self, changed: Callable[[str], None] = lambda key: None) -> None:
        self.items: dict[str, WorkloadRecord] = {}
        self._by_job: dict[str, str] = {}
        self._by_uid: dict[str, str] = {}
        self._departed: OrderedDict[str, WorkloadRecord] = OrderedDict()
        self.changed = changed
        self.preempted: Preempted = lambda before, preemption: None
        self.pending = PendingPriorities()
        self.pending_arrived: Callable[[int], None] = lambda priority: None

    def key(self, raw: Mapping[str, Any]) -> str:
        return workload_key(raw)

    def put(self, raw: Mapping[str, Any]) -> str:
        key = workload_key(raw)
        record = workload_record(raw)
        old = self.items.get(key)
        if old is not None:
            self._forget(key, old)
            if is_pending(old):
                self.pending.discard(old.effective_priority())
        self.items[key] = record
        # told only of a priority none pending had: the protected Workloads it threatens are planned again (and
        # boosted) once for it, not once per Workload of it (Kueue queues Jobs by the thousand)
        if is_pending(record) and self.pending.add(priority := record.effective_priority()):
            self.pending_arrived(priority)
        if record.job_uid:
            self._by_job[record.job_uid] = key
        if record.uid:
            self._by_uid[record.uid] = key
        # one seen before, not evicted then: a Workload listed already evicted was preempted long ago, if at all
        if old is not None and not old.evicted and record.evicted and (found := preemption_of(None, raw)):
            self.preempted(old, found)
        self.changed(key)
        return key

    def _forget(self, key: str, old: WorkloadRecord) -> None:
        """Drops the indexes of `old`, the record under `key`, where they still point at it."""
        if old.job_uid and self._by_job.get(old.job_uid) == key:
            del self._by_job[old.job_uid]
        if old.uid and self._by_uid.get(old.uid) == key:
            del self._by_uid[old.uid]

    def _depart(self, key: str, old: WorkloadRecord) -> None:
        self._forget(key, old)
        if is_pending(old):
            self.pending.discard(old.effective_priority())
        if old.uid:
            self._departed[old.uid] = old
            self._departed.move_to_end(old.uid)
            while len(self._departed) > DEPARTED_KEPT:
                self._departed.popitem(last=False)

    def remove(self, raw: Mapping[str, Any]) -> None:
        key = workload_key(raw)
        old = self.items.pop(key, None)
        if old is not None:
            self._depart(key, old)

    def prune(self, keep: Collection[Hashable]) -> None:
        for key in [key for key in self.items if key not in keep]:
            self._depart(key, self.items.pop(key))

    def __len__(self) -> int:
        return len(self.items)

    def of_job(self, job_uid: str) -> str | None:
        """The key of the Workload of the Job of UID `job_uid` (None: none known)."""
        return self._by_job.get(job_uid)

    def of_uid(self, uid: str | None) -> WorkloadRecord | None:
        """The Workload of UID `uid`, or as it was last seen if it is gone lately (None: none known)."""
        if not uid:
            return None
        key = self._by_uid.get(uid)
        found = self.items.get(key) if key is not None else None
        return found if found is not None else self._departed.get(uid)
