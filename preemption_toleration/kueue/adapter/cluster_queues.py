"""Kueue's ClusterQueues as the boost reads them: a cache of their records (policies and cohort) whose
`revision` counts the changes of those alone, not of their status, which Kueue writes on every admission (a
revision plans every Workload again)."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping
from typing import Any

from preemption_toleration.kube.informer import DictStore
from preemption_toleration.records.cluster_queue import ClusterQueueRecord, cluster_queue_record


class ClusterQueueStore(DictStore[ClusterQueueRecord]):
    def __init__(self) -> None:
        super().__init__(cluster_queue_record)
        self.revision = 0

    def put(self, raw: Mapping[str, Any]) -> str:
        key = self.key(raw)
        record = self.slim(raw)
        if self.items.get(key) != record:
            self.items[key] = record
            self.revision += 1
        return key

    def remove(self, raw: Mapping[str, Any]) -> None:
        if self.items.pop(self.key(raw), None) is not None:
            self.revision += 1

    def prune(self, keep: Collection[Hashable]) -> None:
        before = len(self.items)
        super().prune(keep)
        if len(self.items) != before:
            self.revision += 1
