"""Kueue's Workloads as the boost reads them: a cache of their records (the informer's store), each change told
to the worker, and the Workload of each Job by the Job's UID."""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping
from typing import Any, Final

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.kube.informer import ListFunction
from preemption_toleration.records.workload import WorkloadRecord, workload_record

GROUP: Final = "kueue.x-k8s.io"
VERSION: Final = "v1beta2"  # Kueue's storage version since v0.15; v1beta1 is deprecated
PLURAL: Final = "workloads"
API_VERSION: Final = f"{GROUP}/{VERSION}"


def list_workloads(api: ApiClient) -> ListFunction:
    custom = client.CustomObjectsApi(api)

    async def workloads(**kwargs: Any) -> Any:
        return await custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, **kwargs)

    return workloads


def workload_key(raw: Mapping[str, Any]) -> str:
    metadata = raw.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"


class WorkloadStore:
    """The informer's store of Workload records: `items` by "namespace/name", the key of each Job's Workload
    by the Job's UID, and `changed(key)` told of every change."""

    def __init__(self, changed: Callable[[str], None] = lambda key: None) -> None:
        self.items: dict[str, WorkloadRecord] = {}
        self._by_job: dict[str, str] = {}
        self.changed = changed

    def key(self, raw: Mapping[str, Any]) -> str:
        return workload_key(raw)

    def put(self, raw: Mapping[str, Any]) -> str:
        key = workload_key(raw)
        record = workload_record(raw)
        old = self.items.get(key)
        if old is not None and old.job_uid and old.job_uid != record.job_uid:
            self._by_job.pop(old.job_uid, None)
        self.items[key] = record
        if record.job_uid:
            self._by_job[record.job_uid] = key
        self.changed(key)
        return key

    def remove(self, raw: Mapping[str, Any]) -> None:
        old = self.items.pop(workload_key(raw), None)
        if old is not None and old.job_uid and self._by_job.get(old.job_uid) == workload_key(raw):
            del self._by_job[old.job_uid]

    def prune(self, keep: Collection[Hashable]) -> None:
        for key in [key for key in self.items if key not in keep]:
            old = self.items.pop(key)
            if old.job_uid and self._by_job.get(old.job_uid) == key:
                del self._by_job[old.job_uid]

    def __len__(self) -> int:
        return len(self.items)

    def of_job(self, job_uid: str) -> str | None:
        """The key of the Workload of the Job of UID `job_uid` (None: none known)."""
        return self._by_job.get(job_uid)
