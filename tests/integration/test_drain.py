"""`kubectl drain` against the guard with --eviction-preemptor-priority (#28 §2, "Drains, for real"): the
real kubectl, API server, disruption controller and scheduler, with `ptol run` serving the guard.

A drain's Evictions name no preemptor. With the option, the guard judges each as a preemption by a pod of
that priority: a pod whose toleration still holds refuses it with 429 and the seconds left, so kubectl
retries every 5 s and prints our message, as it does for a PodDisruptionBudget's 429; the drain finishes
once the toleration has ended and the budget allows it. A pod whose toleration is over is evicted at once.
The pods are bare (no controller), so the drains take `--force`, which does not skip Evictions or budgets.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.core.pods import scheduled_since
from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.manifests.webhook_configurations import GUARD_WEBHOOK
from tests.integration.components import RunProcess, ptol_run_fixture
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import ANSWER_SECONDS, REACTION_SECONDS, eventually, unique_name
from tests.integration.objects import MIN, TOL, apply, class_manifest
from tests.integration.pods import create_bound, read_pod, set_scheduled_at, until_gone

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

DRAIN_PRIORITY = 9000  # the guard's --eviction-preemptor-priority
TOLERATION_SECONDS = 30


components = ptol_run_fixture("--eviction-preemptor-priority", str(DRAIN_PRIORITY))


@pytest.fixture(scope="module")
def tolerating_class(components: RunProcess, kubectl: Kubectl) -> Iterator[str]:
    """Priority 8000, refusing priorities below 10000 for 30 s of running time: the drain's 9000 among them."""
    name = unique_name("drain-30s")
    apply(kubectl, class_manifest(name, 8000, annotations={MIN: "10000", TOL: "30"}))
    yield name
    kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)


@pytest.fixture
async def node(make_node: MakeNode) -> AsyncIterator[str]:
    created = await make_node(cpu="4", memory="8Gi")
    yield created.metadata.name


class Drain:
    """`kubectl drain NODE` running in the background; its output read when it ends."""

    def __init__(self, cluster: LocalCluster, node: str, timeout: str = "80s") -> None:
        self.argv = cluster.kubectl_argv(
            "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force", f"--timeout={timeout}"
        )
        self.process: asyncio.subprocess.Process | None = None
        self.output = ""

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *self.argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def finish(self, timeout: float) -> int:
        assert self.process is not None
        try:
            out, _ = await asyncio.wait_for(self.process.communicate(), timeout)
        except TimeoutError:
            self.process.kill()
            out, _ = await self.process.communicate()
            self.output = out.decode()
            raise AssertionError(f"kubectl drain still running after {timeout:.0f} s more:\n{self.output}") from None
        self.output = out.decode()
        assert self.process.returncode is not None
        return self.process.returncode


async def _budget(api: ApiClient, namespace: str, name: str, app: str) -> None:
    """minAvailable 1 over the one pod labelled `app`: no disruption allowed, once the controller has counted."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
    }
    await client.PolicyV1Api(api).create_namespaced_pod_disruption_budget(namespace, body)
    await eventually(
        lambda: client.PolicyV1Api(api).read_namespaced_pod_disruption_budget(name, namespace),
        lambda b: b.status is not None and b.status.current_healthy == 1 and b.status.observed_generation == 1,
        timeout=REACTION_SECONDS,
        what="the budget counted by the disruption controller",
    )


async def _labelled_bound(api: ApiClient, namespace: str, name: str, node: str, app: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}],
        },
    }
    await client.CoreV1Api(api).create_namespaced_pod(namespace, body)
    await eventually(
        lambda: read_pod(api, namespace, name),
        lambda p: ((p or {}).get("status") or {}).get("phase") == "Running",
        timeout=REACTION_SECONDS,
        what=f"{name} running",
    )


def _toleration_end(pod: dict[str, Any] | None) -> datetime:
    scheduled = scheduled_since(pod or {})
    assert scheduled is not None, pod
    return scheduled + timedelta(seconds=TOLERATION_SECONDS)


async def test_drain_waits_for_the_toleration_and_the_budget_and_says_why(
    api: ApiClient, namespace: str, node: str, tolerating_class: str, cluster: LocalCluster
) -> None:
    tolerating = await create_bound(api, namespace, "tolerating", tolerating_class, node, cpu="1")
    end = _toleration_end(tolerating)
    await _labelled_bound(api, namespace, "budgeted", node, "budgeted")
    await _budget(api, namespace, "budgeted", "budgeted")

    drain = Drain(cluster, node)
    await drain.start()
    # Until the toleration ends, both pods stay and the drain waits (kubectl retries every 5 s).
    while datetime.now(UTC) < end - timedelta(seconds=1):
        if not drain.running:
            code = await drain.finish(5)
            raise AssertionError(f"kubectl drain ended ({code}) before the toleration did:\n{drain.output}")
        assert await read_pod(api, namespace, "tolerating") is not None, "evicted while it tolerated the drain"
        assert await read_pod(api, namespace, "budgeted") is not None, "evicted against its budget"
        await asyncio.sleep(1)
    # Then the next retry evicts the tolerating pod; the budget still holds the other.
    await until_gone(api, namespace, "tolerating", timeout=REACTION_SECONDS)
    assert datetime.now(UTC) >= end
    assert drain.running and await read_pod(api, namespace, "budgeted") is not None, "the budget did not hold"

    await client.PolicyV1Api(api).patch_namespaced_pod_disruption_budget(
        "budgeted", namespace, {"spec": {"minAvailable": 0}}
    )
    code = await drain.finish(40)
    assert code == 0, drain.output
    assert await read_pod(api, namespace, "budgeted") is None
    assert f"node/{node} drained" in drain.output

    ours = re.search(
        rf'error when evicting pods/"tolerating" -n "{namespace}" \(will retry after 5s\): admission webhook '
        rf'"{re.escape(GUARD_WEBHOOK)}" denied the request: pod {namespace}/tolerating \(PriorityClass '
        rf"{tolerating_class}, priority 8000\) tolerates preemption by priorities below 10000 \(the annotations "
        rf"of PriorityClass {tolerating_class}\); this eviction names no preemptor and counts as a preemption by "
        rf"priority {DRAIN_PRIORITY} \(the guard's --eviction-preemptor-priority\), which the pod refuses until "
        rf"(\S+Z) \((\d+) s left of 30 s guaranteed running time\)\. Retry after (\d+) s\.",
        drain.output,
    )
    assert ours is not None, drain.output
    assert ours.group(1) == end.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert 0 < int(ours.group(2)) <= TOLERATION_SECONDS and ours.group(2) == ours.group(3)
    assert (
        f'error when evicting pods/"budgeted" -n "{namespace}" (will retry after 5s): Cannot evict pod as it would '
        "violate the pod's disruption budget." in drain.output
    ), drain.output


async def _evictable(api: ApiClient, namespace: str, name: str) -> bool:
    """Whether the guard lets an eviction of the pod through now: a server-side dry run, which it judges as
    it would the eviction (and reports no refusal of)."""
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
    try:
        await client.CoreV1Api(api).create_namespaced_pod_eviction(name, namespace, eviction, dry_run="All")
    except ApiException as error:
        if error.status in (403, 429):
            return False
        raise
    return True


async def test_drain_evicts_a_pod_whose_toleration_is_over_at_once(
    api: ApiClient, namespace: str, node: str, tolerating_class: str, cluster: LocalCluster
) -> None:
    await create_bound(api, namespace, "over", tolerating_class, node, cpu="1")
    moved = datetime.now(UTC) - timedelta(seconds=TOLERATION_SECONDS + 30)
    await set_scheduled_at(api, namespace, "over", moved)
    await eventually(
        lambda: read_pod(api, namespace, "over"),
        lambda p: _toleration_end(p) < datetime.now(UTC),
        timeout=ANSWER_SECONDS,
        what="the toleration over",
    )
    await eventually(  # the guard's watch has seen the rewritten time
        lambda: _evictable(api, namespace, "over"), bool, timeout=REACTION_SECONDS, what="the guard letting it go"
    )

    drain = Drain(cluster, node, timeout="30s")
    await drain.start()
    code = await drain.finish(30)
    assert code == 0, drain.output
    # a refused eviction would show as kubectl's "error when evicting ... (will retry after 5s)": none was
    assert "error when evicting" not in drain.output, drain.output
    assert await read_pod(api, namespace, "over") is None
