"""The operator's wait before kopf starts again (operator/served.py), against the real API server: it returns
once discovery lists a resource whose CRD exists, and at once for a resource without a CRD."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.operator.served import CustomResource, wait_until_served
from tests.integration.helpers import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


def crd_body(resource: CustomResource, kind: str) -> dict[str, object]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": resource.crd_name},
        "spec": {
            "group": resource.group,
            "scope": "Cluster",
            "names": {"plural": resource.plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": resource.version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


async def test_it_waits_until_a_new_crds_resource_is_listed_by_discovery(api: ApiClient, cluster: LocalCluster) -> None:
    group = f"{unique_name('served')}.example.com"
    resource = CustomResource(group, "v1", "gadgets")
    extensions = client.ApiextensionsV1Api(api)
    await extensions.create_custom_resource_definition(crd_body(resource, "Gadget"))
    try:
        # Right after its creation, the CRD exists and its resource is not served yet: the same window as
        # after an API server restart.
        await asyncio.wait_for(wait_until_served(str(cluster.kubeconfig), [resource], asyncio.Event()), 60)
        listed = await client.CustomObjectsApi(api).get_api_resources(group, "v1")
        assert [r.name for r in listed.resources] == ["gadgets"]
    finally:
        await extensions.delete_custom_resource_definition(resource.crd_name)


async def test_a_resource_without_a_crd_is_not_waited_for(cluster: LocalCluster) -> None:
    absent = CustomResource("absent.example.com", "v1", "nothings")
    await asyncio.wait_for(wait_until_served(str(cluster.kubeconfig), [absent], asyncio.Event()), 5)
