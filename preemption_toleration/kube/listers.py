"""The list (and watch) functions of the resources our caches follow, in the shape `Informer` calls."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.kube.informer import ListFunction


def priority_classes(api: ApiClient) -> ListFunction:
    return client.SchedulingV1Api(api).list_priority_class  # type: ignore[no-any-return]


def policies(api: ApiClient) -> ListFunction:
    custom = client.CustomObjectsApi(api)

    async def list_policies(**kwargs: Any) -> Any:
        return await custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, **kwargs)

    return list_policies


def pod_disruption_budgets(api: ApiClient) -> ListFunction:
    """PodDisruptionBudgets of all namespaces (policy/v1, the only version every supported release serves)."""
    custom = client.CustomObjectsApi(api)

    async def list_budgets(**kwargs: Any) -> Any:
        return await custom.list_cluster_custom_object("policy", "v1", "poddisruptionbudgets", **kwargs)

    return list_budgets
