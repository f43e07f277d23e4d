"""The Kueue test bed (`ptol dev cluster up --feature kueue`): Kueue's controller manager, built from the Go
modules pinned in testbed/kueue/, admits a Job queued to it, the Job controller runs its pods on KWOK's nodes,
and Kueue's webhooks (with the PriorityBoost gate on) judge its objects."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from preemption_toleration.devcluster import LocalCluster
from tests.integration.conftest import Kubectl
from tests.integration.kueue_objects import conditions, queue_with_a_node, suspends, until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@pytest.fixture
async def queue(kueue_cluster: LocalCluster, kueue_kubectl: Kubectl) -> AsyncIterator[tuple[str, str, str]]:
    """A namespace with a LocalQueue of a ClusterQueue of 4 CPUs, and a node of 4 CPUs: (namespace, queue,
    node)."""
    async with queue_with_a_node(kueue_cluster, kueue_kubectl, "4", "4") as made:
        yield made


def job(name: str, queue: str, pods: int) -> str:
    return json.dumps(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {
                "parallelism": pods,
                "completions": pods,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "work", "image": "busybox", "resources": {"requests": {"cpu": "1"}}},
                        ],
                    }
                },
            },
        }
    )


def workload_in(kubectl: Kubectl, namespace: str) -> dict | None:
    items = json.loads(kubectl("get", "workloads", "-n", namespace, "-o", "json").stdout)["items"]
    return items[0] if items else None


async def test_kueue_admits_a_queued_job_and_its_pods_run_on_kwoks_nodes(
    kueue_kubectl: Kubectl, queue: tuple[str, str, str]
) -> None:
    namespace, name, node = queue
    # Kueue's webhook suspends a Job queued to it (seen in a server-side dry run: a real Job may be admitted and
    # unsuspended before it can be read back)
    assert suspends(kueue_kubectl, namespace, name), "Kueue's webhook suspends a Job queued to it"
    kueue_kubectl("apply", "-n", namespace, "-f", "-", input=job("train", name, 2))

    def admitted() -> dict | None:
        workload = workload_in(kueue_kubectl, namespace)
        return workload if conditions(workload).get("Admitted") == "True" else None

    workload = until("the Job's Workload admitted", admitted)
    assert workload["metadata"]["ownerReferences"][0]["name"] == "train"

    def ran() -> bool:
        # KWOK's stages run a Job's pods and complete them at once
        pods = json.loads(kueue_kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
        finished = [p for p in pods if p["status"].get("phase") == "Succeeded" and p["spec"].get("nodeName") == node]
        return len(finished) == 2

    until("the Job's two pods run on the node", ran)

    def completed() -> bool:
        found = json.loads(kueue_kubectl("get", "job", "train", "-n", namespace, "-o", "json").stdout)
        return found["status"].get("succeeded") == 2

    until("the Job complete", completed)


async def test_kueues_webhook_judges_the_priority_boost_so_its_gate_is_on(
    kueue_kubectl: Kubectl, queue: tuple[str, str, str]
) -> None:
    """Kueue's Workload webhook checks `kueue.x-k8s.io/priority-boost` only with PriorityBoost on."""
    namespace, name, _ = queue
    kueue_kubectl("apply", "-n", namespace, "-f", "-", input=job("boosted", name, 1))
    workload = until("the Job's Workload", lambda: workload_in(kueue_kubectl, namespace))
    refused = kueue_kubectl(
        "annotate",
        "workload",
        workload["metadata"]["name"],
        "-n",
        namespace,
        "kueue.x-k8s.io/priority-boost=ten",
        check=False,
    )
    assert refused.returncode != 0 and "must be a valid signed integer" in refused.stderr, refused.stderr
    kueue_kubectl(
        "annotate", "workload", workload["metadata"]["name"], "-n", namespace, "kueue.x-k8s.io/priority-boost=5"
    )
