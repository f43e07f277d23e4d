"""What the real kube-scheduler does around a victim the guard refuses, with the guard alone (no extender):
its `DisruptionTarget` status patch, and its parallel, asynchronous deletion of a node's victims
(architecture §5, "What the scheduler does around a refusal").

Since 1.26 the scheduler patches each victim's status with `DisruptionTarget=True`/`PreemptionByScheduler`
before it deletes it, and a refused patch stops that victim's deletion. With asynchronous preemption (on by
default since 1.33) it deletes a node's victims in parallel, all but the least important one (lowest
priority, then latest started), and that one only after all the others are gone; and a failed deletion
sends the preemptor straight back to the queue, which the guard paces by holding the refusal of an
immediate retry (`--retry-hold-seconds`, 1 s by default).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.manifests.webhook_configurations import GUARD_WEBHOOK
from tests.integration.components import Server, ptol_run_fixture, registered_extender, scheduler_extended
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import SCHEDULING_SECONDS, eventually, past_the_second_of, unique_name
from tests.integration.objects import MIN, TOL, apply, class_manifest, policy_manifest, wait_annotations
from tests.integration.pods import create_bound, node_of, pod_body, read_pod, stays, until_gone
from tests.metrics import by_label

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

GUARANTEE_SECONDS = 20
PACED_REFUSALS = 5  # enough of the scheduler's retries to tell one a second from tens


components = ptol_run_fixture("--resync-seconds", "3")


@pytest.fixture(scope="module")
def classes(server: Server, kubectl: Kubectl) -> Iterator[dict[str, str]]:
    """`high` (9000), plain `low`, `protected` (8000: never preempted below 10000, by a policy) and
    `guaranteed` (8000: not below 10000 for its first 20 s, by its own annotations)."""
    suffix = unique_name("c").split("-")[-1]
    names = {role: f"{role}-{suffix}" for role in ("high", "low", "protected", "guaranteed")}
    for role, name in names.items():
        notes = {MIN: "10000", TOL: str(GUARANTEE_SECONDS)} if role == "guaranteed" else {}
        apply(kubectl, class_manifest(name, 9000 if role == "high" else 8000, annotations=notes))
    spec = {"priorityClassName": names["protected"], "minimumPreemptablePriority": 10000, "tolerationSeconds": -1}
    apply(kubectl, policy_manifest(names["protected"], spec))
    yield names
    kubectl("delete", "ptp", names["protected"], "--ignore-not-found", check=False)
    for name in names.values():
        kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)


@pytest.fixture
async def node(make_node: MakeNode, api: ApiClient, classes: dict[str, str]) -> AsyncIterator[str]:
    await wait_annotations(api, classes["protected"], {MIN: "10000", TOL: "-1"})
    created = await make_node(cpu="3", memory="8Gi")
    yield created.metadata.name


def disruption_targets(pod: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [c for c in ((pod or {}).get("status") or {}).get("conditions") or [] if c["type"] == "DisruptionTarget"]


def webhook_rejections(kubectl: Kubectl) -> dict[str, float]:
    """The API server's count of the guard's refusals, by the code it passed on to the client."""
    text = kubectl("get", "--raw", "/metrics").stdout
    return by_label(text, "apiserver_admission_webhook_rejection_count_total", "rejection_code", name=GUARD_WEBHOOK)


async def refusals_by_kind(server: Server) -> dict[str, float]:
    return await server.metric("ptol_guard_refusals_total", "kind")


async def started(api: ApiClient, namespace: str, name: str, class_name: str, node: str) -> None:
    """A pod of 1 CPU bound to `node` and started (the scheduler orders victims by their start time, which
    the API has to the second: the next pod is started at least a second later)."""
    await create_bound(api, namespace, name, class_name, node, cpu="1")
    pod = await eventually(
        lambda: read_pod(api, namespace, name),
        lambda p: bool(((p or {}).get("status") or {}).get("startTime")),
        what=f"{name} started",
    )
    await past_the_second_of(pod["status"]["startTime"])


async def test_a_refused_victim_keeps_running_and_carries_no_disruption_target(
    api: ApiClient, namespace: str, node: str, classes: dict[str, str], server: Server, kubectl: Kubectl
) -> None:
    rejections_before = webhook_rejections(kubectl)
    refusals_before = await refusals_by_kind(server)
    await create_bound(api, namespace, "victim", classes["protected"], node, cpu="2")
    started = time.monotonic()
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", classes["high"], node, cpu="2"))
    await eventually(
        lambda: refusals_by_kind(server),
        lambda found: found.get("status", 0) - refusals_before.get("status", 0) >= PACED_REFUSALS,
        timeout=SCHEDULING_SECONDS,
        what=f"{PACED_REFUSALS} refusals of the scheduler's status patch",
    )
    await stays(api, namespace, "victim", "high", node)

    victim = await read_pod(api, namespace, "victim")
    assert disruption_targets(victim) == [], "a refused victim carries the scheduler's DisruptionTarget"
    assert ((victim or {}).get("status") or {}).get("phase") == "Running"
    refusals = await refusals_by_kind(server)
    seconds = time.monotonic() - started
    refused = refusals.get("status", 0) - refusals_before.get("status", 0)
    # The scheduler retries at once (asynchronous preemption), tens of times a second; the guard holds the
    # refusal of an immediate retry 1 s (--retry-hold-seconds), so about one attempt a second remains.
    assert refused <= 2 * seconds + 2, f"{refused} refusals in {seconds:.1f} s: the loop is not paced"
    assert refusals.get("delete", 0) == refusals_before.get("delete", 0), "the scheduler got as far as a DELETE"
    rejections = webhook_rejections(kubectl)
    assert rejections.get("403", 0) > rejections_before.get("403", 0), "the API server saw no 403 from the guard"
    assert {code for code, n in rejections.items() if n != rejections_before.get(code, 0)} == {"403"}


@pytest.mark.parametrize("older", ["protected", "low"])
async def test_a_node_with_a_protected_and_a_plain_victim(
    api: ApiClient, namespace: str, node: str, classes: dict[str, str], server: Server, older: str
) -> None:
    """Two victims of one priority: the older is the more important, deleted in the parallel batch; the
    newer is the least important, deleted only after the batch succeeded."""
    newer = "low" if older == "protected" else "protected"
    await started(api, namespace, older, classes[older], node)
    await started(api, namespace, newer, classes[newer], node)
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", classes["high"], node, cpu="3"))

    if older == "low":  # the plain pod is in the parallel batch: deleted, then the protected one is refused
        await until_gone(api, namespace, "low")
    # when the protected pod is the older, its refusal stops the batch: the plain pod is spared
    await stays(api, namespace, "protected", "high", node, spared=("low",) if older == "protected" else ())
    for name in ("protected", "low"):
        assert disruption_targets(await read_pod(api, namespace, name)) == [], f"{name} carries DisruptionTarget"


@pytest.fixture(params=["guard alone", "with the extender"])
def scheduler(request: pytest.FixtureRequest, cluster: LocalCluster, server: Server) -> Iterator[str]:
    """The scheduler as it runs (the guard alone), or restarted with our extender for this test."""
    if request.param == "with the extender":
        with scheduler_extended(cluster, registered_extender(cluster)):
            yield request.param
    else:
        yield request.param


def scheduled_at(pod: dict[str, Any] | None) -> datetime:
    [condition] = [c for c in (pod or {})["status"]["conditions"] if c["type"] == "PodScheduled"]
    moment = condition["lastTransitionTime"]
    return moment if isinstance(moment, datetime) else datetime.fromisoformat(moment.replace("Z", "+00:00"))


async def seconds_late(api: ApiClient, namespace: str, node: str, classes: dict[str, str]) -> float:
    """A `guaranteed` victim on `node`, then a `high` preemptor for it: how many seconds after the end of the
    victim's toleration the preemptor was scheduled (the API's PodScheduled times, whole seconds)."""
    victim = await create_bound(api, namespace, "victim", classes["guaranteed"], node, cpu="2")
    end = scheduled_at(victim) + timedelta(seconds=GUARANTEE_SECONDS)
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", classes["high"], node, cpu="2"))
    preemptor = await eventually(
        lambda: read_pod(api, namespace, "high"),
        lambda pod: node_of(pod) == node,
        timeout=GUARANTEE_SECONDS + 60,
        interval=0.2,
        what="high bound",
    )
    return (scheduled_at(preemptor) - end).total_seconds()


async def test_a_preemptor_held_back_by_a_20_s_toleration_is_scheduled_within_23_s(
    api: ApiClient, namespace: str, node: str, classes: dict[str, str], scheduler: str
) -> None:
    """When a time-limited toleration ends, the preemptor waiting on it is scheduled at once: with the
    guard alone, its paced retries (and the expiry nudge) find the victim no longer protected; with the
    extender, the nudge re-queues it."""
    late = await seconds_late(api, namespace, node, classes)
    assert late <= 3, f"{scheduler}: high was scheduled {GUARANTEE_SECONDS + late:.0f} s after the victim, not 23"
    gone = await read_pod(api, namespace, "victim")
    assert gone is None or gone["metadata"].get("deletionTimestamp"), "high was bound beside its victim"
