"""The webhooks' view of the cluster: PriorityClasses and policies, from watches, never from a request."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.governance.views import ClassView, PolicyView, class_view, policy_view
from preemption_toleration.guard.decisions import GuardSnapshot
from preemption_toleration.guard.slim import pod_key, slim_node, slim_pod
from preemption_toleration.kube.informer import CacheStats, Informer
from preemption_toleration.webhooks.decisions import Snapshot


class AdmissionCaches:
    """Classes and policies for every webhook; with `guard`, also slim pods and nodes for the guard."""

    def __init__(self, api: ApiClient, logger: logging.Logger, guard: bool = False) -> None:
        custom = client.CustomObjectsApi(api)
        core = client.CoreV1Api(api)
        self.pods: Informer[dict[str, Any]] | None = None
        self.nodes: Informer[dict[str, Any]] | None = None
        if guard:
            self.pods = Informer("pods", core.list_pod_for_all_namespaces, slim_pod, logger, key=pod_key)
            self.nodes = Informer("nodes", core.list_node, slim_node, logger)
        self.classes: Informer[ClassView] = Informer(
            "priorityclasses", client.SchedulingV1Api(api).list_priority_class, class_view, logger, self._changed
        )
        self.policies: Informer[PolicyView] = Informer(
            PLURAL,
            lambda **kwargs: custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, **kwargs),
            policy_view,
            logger,
            self._changed,
        )
        self._snapshot: Snapshot | None = None

    def _changed(self) -> None:
        self._snapshot = None

    def informers(self) -> list[Informer[Any]]:
        return [i for i in (self.classes, self.policies, self.pods, self.nodes) if i is not None]

    def stats(self) -> list[CacheStats]:
        return [informer.stats() for informer in self.informers()]

    @property
    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.informers())

    def guard_snapshot(self) -> GuardSnapshot:
        # The live dictionaries: a decision runs without awaiting, so nothing changes under it.
        snapshot = self.snapshot()
        return GuardSnapshot(
            pods=self.pods.items if self.pods else {},  # type: ignore[arg-type]
            nodes=self.nodes.items if self.nodes else {},  # type: ignore[arg-type]
            classes=snapshot.classes,
            policies=snapshot.policies,
        )

    def snapshot(self) -> Snapshot:
        if self._snapshot is None:
            self._snapshot = Snapshot(policies=dict(self.policies.items), classes=dict(self.classes.items))
        return self._snapshot

    def tasks(self) -> list[asyncio.Task[None]]:
        return [asyncio.create_task(informer.run(), name=f"watch-{informer.kind}") for informer in self.informers()]
