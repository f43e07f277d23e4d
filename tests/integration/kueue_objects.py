"""Kueue's objects as the Kueue tests make and read them: a queue (ResourceFlavor, ClusterQueue of some CPUs,
LocalQueue) with a node, a Job's Workload and its conditions, and a wait for what Kueue does."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from preemption_toleration.devcluster import (
    KEEP_RUNNING_LABEL,
    LocalCluster,
    create_node,
    delete_node,
    ensure_namespace,
)
from tests.integration.conftest import Kubectl
from tests.integration.helpers import START_SECONDS, unique_name

KUEUE_API = "kueue.x-k8s.io/v1beta2"


@asynccontextmanager
async def queue_with_a_node(
    cluster: LocalCluster, kubectl: Kubectl, quota_cpus: str, node_cpus: str, preemption: dict[str, str] | None = None
) -> AsyncIterator[tuple[str, str, str]]:
    """A namespace with a LocalQueue of a ClusterQueue of `quota_cpus` CPUs (with its `preemption` policy), and a
    node of `node_cpus` CPUs: (namespace, queue, node); all removed after."""
    namespace, name = unique_name("kueue"), unique_name("q")
    queue = cluster_queue(name, name, quota_cpus, preemption)
    manifests = [flavor(name), queue, local_queue(name, namespace)]
    async with kueue_objects(cluster, kubectl, namespace, node_cpus, manifests, name) as node:
        yield namespace, name, node


def flavor(name: str) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": name}}


def cluster_queue(
    name: str, flavor_name: str, cpus: str, preemption: dict[str, Any] | None = None, cohort: str | None = None
) -> dict[str, Any]:
    """A ClusterQueue of `cpus` CPUs of one flavor, of any namespace, with its `preemption` policy and `cohort`."""
    flavors = [{"name": flavor_name, "resources": [{"name": "cpu", "nominalQuota": cpus}]}]
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
    }
    if preemption:
        spec["preemption"] = preemption
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, namespace: str, cluster_queue: str | None = None, held: bool = False) -> dict[str, Any]:
    """A LocalQueue of `cluster_queue` (by default the ClusterQueue of the same name); `held`: it admits nothing
    (`stopPolicy: Hold`) until its policy is set to None."""
    spec = {"clusterQueue": cluster_queue or name}
    if held:
        spec["stopPolicy"] = "Hold"
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


@asynccontextmanager
async def kueue_objects(
    cluster: LocalCluster,
    kubectl: Kubectl,
    namespace: str,
    node_cpus: str,
    manifests: list[dict[str, Any]],
    probe_queue: str,
) -> AsyncIterator[str]:
    """`namespace`, a node of `node_cpus` CPUs and Kueue's objects of `manifests` applied, until Kueue's webhook
    suspends a Job queued to `probe_queue`: the node's name; all removed after."""
    node = unique_name("node")
    async with await cluster.api_client() as api:
        await ensure_namespace(api, namespace)
        await create_node(api, node, cpu=node_cpus)
        kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(m) for m in manifests))
        until(
            "Kueue's webhook suspending a Job of the new namespace", lambda: suspends(kubectl, namespace, probe_queue)
        )
        try:
            yield node
        finally:
            kubectl("delete", "namespace", namespace, "--wait=false", check=False)
            cluster_scoped = [m for m in manifests if "namespace" not in m["metadata"]]
            for manifest in reversed(cluster_scoped):  # queues before their flavors
                kind, name = manifest["kind"].lower(), manifest["metadata"]["name"]
                kubectl("delete", kind, name, "--ignore-not-found", check=False)
            await delete_node(api, node)


def suspends(kubectl: Kubectl, namespace: str, queue: str) -> bool:
    """Whether Kueue's Job webhook suspends a Job queued to `queue` in `namespace` (a server-side dry run): a
    Kueue that has not seen the namespace yet, say just after it started again, lets a Job run unsuspended."""
    probe = running_job("probe", queue, "", 1)
    found = kubectl("create", "--dry-run=server", "-n", namespace, "-o", "json", "-f", "-", input=json.dumps(probe))
    return json.loads(found.stdout)["spec"].get("suspend") is True


def until(what: str, check: Callable[[], Any], timeout: float = START_SECONDS) -> Any:
    """`check()`'s first true answer, asked every 0.5 s; an AssertionError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not within {timeout:.0f} s")
        time.sleep(0.5)


def workload_of(kubectl: Kubectl, namespace: str, job: str) -> dict[str, Any] | None:
    """The Workload of the Job `job` (None: none yet)."""
    items = json.loads(kubectl("get", "workloads", "-n", namespace, "-o", "json").stdout)["items"]
    return next((w for w in items if any(o.get("name") == job for o in w["metadata"].get("ownerReferences", []))), None)


def conditions(found: dict[str, Any] | None) -> dict[str, str]:
    """A Workload's conditions, type to status."""
    return {c["type"]: c["status"] for c in (found or {}).get("status", {}).get("conditions", [])}


def running_job(
    name: str,
    queue: str,
    priority_class: str,
    pods: int,
    namespace: str | None = None,
    workload_priority_class: str | None = None,
) -> dict[str, Any]:
    """A Job of `pods` pods of 1 CPU of `priority_class`, queued to the LocalQueue `queue`, whose pods keep running
    on KWOK's nodes until Kueue evicts it; with `workload_priority_class`, its Workload takes its priority from
    that WorkloadPriorityClass (Kueue's label on the Job)."""
    labels = {"kueue.x-k8s.io/queue-name": queue}
    if workload_priority_class is not None:
        labels["kueue.x-k8s.io/priority-class"] = workload_priority_class
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "metadata": {"labels": {KEEP_RUNNING_LABEL: "true"}},
                "spec": {
                    "restartPolicy": "Never",
                    **({"priorityClassName": priority_class} if priority_class else {}),
                    "containers": [{"name": "work", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                },
            },
        },
    }
