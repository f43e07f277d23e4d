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


BUDGET_VERSIONS = ("v1", "v1beta1")  # policy/v1 since Kubernetes 1.21; 1.20 serves only v1beta1


async def served_version(api: ApiClient, group: str, wanted: tuple[str, ...]) -> str:
    """The first of `wanted` that the API server serves for `group`."""
    groups = await client.ApisApi(api).get_api_versions()
    served = {version.version for found in groups.groups if found.name == group for version in found.versions}
    for version in wanted:
        if version in served:
            return version
    raise LookupError(f"the API server serves none of {', '.join(f'{group}/{v}' for v in wanted)}")


def pod_disruption_budgets(api: ApiClient) -> ListFunction:
    """PodDisruptionBudgets of all namespaces, in the newest version the server serves (asked once)."""
    custom = client.CustomObjectsApi(api)
    version: list[str] = []

    async def list_budgets(**kwargs: Any) -> Any:
        if not version:
            version.append(await served_version(api, "policy", BUDGET_VERSIONS))
        return await custom.list_cluster_custom_object("policy", version[0], "poddisruptionbudgets", **kwargs)

    return list_budgets
