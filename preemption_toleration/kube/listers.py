"""The list (and watch) functions of the resources our caches follow, in the shape `Informer` calls."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.api.resources import (
    CLUSTER_QUEUES,
    KUEUE_GROUP,
    KUEUE_VERSION,
    POD_GROUP_API,
    WORKLOADS,
    ClassKind,
)
from preemption_toleration.kube.informer import ListFunction


def priority_classes(api: ApiClient) -> ListFunction:
    return client.SchedulingV1Api(api).list_priority_class  # type: ignore[no-any-return]


def cluster_custom_objects(api: ApiClient, group: str, version: str, plural: str) -> ListFunction:
    """Custom (or built-in, by the same path) objects of all namespaces, or cluster-scoped ones."""
    custom = client.CustomObjectsApi(api)

    async def list_objects(**kwargs: Any) -> Any:
        return await custom.list_cluster_custom_object(group, version, plural, **kwargs)

    return list_objects


def workload_priority_classes(api: ApiClient) -> ListFunction:
    """Kueue's WorkloadPriorityClasses (cluster-scoped)."""
    kind = ClassKind.WORKLOAD_PRIORITY_CLASS
    return cluster_custom_objects(api, kind.group, KUEUE_VERSION, kind.plural)


def workloads(api: ApiClient) -> ListFunction:
    """Kueue's Workloads of all namespaces."""
    return cluster_custom_objects(api, KUEUE_GROUP, KUEUE_VERSION, WORKLOADS)


def cluster_queues(api: ApiClient) -> ListFunction:
    """Kueue's ClusterQueues (cluster-scoped)."""
    return cluster_custom_objects(api, KUEUE_GROUP, KUEUE_VERSION, CLUSTER_QUEUES)


def policies(api: ApiClient) -> ListFunction:
    return cluster_custom_objects(api, GROUP, VERSION, PLURAL)


def pod_disruption_budgets(api: ApiClient) -> ListFunction:
    """PodDisruptionBudgets of all namespaces (policy/v1, the only version every supported release serves)."""
    return cluster_custom_objects(api, "policy", "v1", "poddisruptionbudgets")


def pod_groups(api: ApiClient) -> ListFunction:
    """PodGroups of all namespaces (`scheduling.k8s.io/v1beta1`, where the API server serves them)."""
    return cluster_custom_objects(api, *POD_GROUP_API)


async def serves(api: ApiClient, group: str, version: str, plural: str) -> bool:
    """Whether the API server serves `plural` in `group`/`version` (discovery: a group not served is a 404)."""
    try:
        found = await client.CustomObjectsApi(api).get_api_resources(group, version)
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return any(resource.name == plural for resource in found.resources or [])


async def serves_pod_groups(api: ApiClient) -> bool:
    """Whether the API server serves PodGroups (1.37 with `GenericWorkload` on, and its beta API served)."""
    return await serves(api, *POD_GROUP_API)


async def serves_workloads(api: ApiClient) -> bool:
    """Whether the API server serves Kueue's Workloads (Kueue installed)."""
    return await serves(api, KUEUE_GROUP, KUEUE_VERSION, WORKLOADS)
