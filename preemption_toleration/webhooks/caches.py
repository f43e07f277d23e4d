"""The webhooks' view of the cluster: PriorityClasses and policies, from watches, never from a request."""

from __future__ import annotations

import asyncio
import logging

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.governance.views import ClassView, PolicyView, class_view, policy_view
from preemption_toleration.kube.informer import Informer
from preemption_toleration.webhooks.decisions import Snapshot


class AdmissionCaches:
    def __init__(self, api: ApiClient, logger: logging.Logger) -> None:
        custom = client.CustomObjectsApi(api)
        self.classes: Informer[ClassView] = Informer(
            "PriorityClass", client.SchedulingV1Api(api).list_priority_class, class_view, logger, self._changed
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

    @property
    def synced(self) -> bool:
        return self.classes.synced.is_set() and self.policies.synced.is_set()

    def snapshot(self) -> Snapshot:
        if self._snapshot is None:
            self._snapshot = Snapshot(policies=dict(self.policies.items), classes=dict(self.classes.items))
        return self._snapshot

    def tasks(self) -> list[asyncio.Task[None]]:
        return [
            asyncio.create_task(self.classes.run(), name="watch-priorityclasses"),
            asyncio.create_task(self.policies.run(), name="watch-policies"),
        ]
