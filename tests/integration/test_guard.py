"""The eviction guard against the real kube-scheduler (architecture §1 and §5), with `ptol run` serving the
operator, the webhooks and the guard.

`system-critical` of the design notes is `critical` here: the API server reserves the `system-` prefix.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.devcluster import LocalCluster
from tests.integration.components import RunProcess, Server, ptol_run_fixture
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import REACTION_SECONDS, eventually, unique_name
from tests.integration.objects import MIN, TOL, apply, class_manifest, policy_manifest, wait_annotations
from tests.integration.pods import (
    create_bound,
    events_of,
    node_of,
    pod_body,
    preempts,
    read_pod,
    set_scheduled_at,
    stays,
    until_bound,
    until_gone,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


components = ptol_run_fixture("--resync-seconds", "3")


@pytest.fixture(scope="module")
def classes(components: RunProcess, kubectl: Kubectl) -> Iterator[dict[str, str]]:
    """The classes of architecture §1 (unique names), the two tolerating ones governed by policies."""
    suffix = unique_name("c").split("-")[-1]
    names = {
        role: f"{role}-{suffix}" for role in ("critical", "high", "low", "low-non-preempted", "low-non-preempted-10min")
    }
    values = {"critical": 10000, "high": 9000}
    for role, name in names.items():
        apply(kubectl, class_manifest(name, values.get(role, 8000)))
    for role, seconds in (("low-non-preempted", -1), ("low-non-preempted-10min", 600)):
        apply(
            kubectl,
            policy_manifest(
                names[role],
                {"priorityClassName": names[role], "minimumPreemptablePriority": 10000, "tolerationSeconds": seconds},
            ),
        )
    yield names
    for name in names.values():
        kubectl("delete", "ptp", name, "--ignore-not-found", check=False)
        kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)


@pytest.fixture
async def node(make_node: MakeNode) -> AsyncIterator[str]:
    created = await make_node(cpu="3", memory="8Gi")
    yield created.metadata.name


async def high_held_back(
    api: ApiClient, namespace: str, node: str, classes: dict[str, str], role: str, annotations: dict[str, str]
) -> None:
    """A victim of the class of `role`, once its policy has annotated it, stays in the way of `high`."""
    await wait_annotations(api, classes[role], annotations)
    await create_bound(api, namespace, "victim", classes[role], node)
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", classes["high"], node))
    await stays(api, namespace, "victim", "high", node)


async def test_high_cannot_preempt_low_non_preempted_but_critical_can(
    api: ApiClient, namespace: str, node: str, classes: dict[str, str]
) -> None:
    await high_held_back(api, namespace, node, classes, "low-non-preempted", {MIN: "10000", TOL: "-1"})
    [event] = await eventually(
        lambda: events_of(api, namespace, "victim"),
        lambda e: len(e) == 1,
        timeout=REACTION_SECONDS,
        what="our Event on the victim",
    )
    assert event.type == "Warning" and event.source.component == "preemption-toleration-guard"
    assert f"pod {namespace}/victim (PriorityClass {classes['low-non-preempted']}, priority 8000)" in event.message
    assert f"the preemptor ({namespace}/high, priority 9000) is below it" in event.message

    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("critical", classes["critical"], node))
    await preempts(api, namespace, "victim", "critical", node)


async def test_a_preemptor_deleted_mid_preemption_still_protects_its_victims(
    api: ApiClient, namespace: str, node: str, classes: dict[str, str], kubectl: Kubectl
) -> None:
    """A job cancelled while the scheduler's asynchronous preemption for it is under way: the scheduler goes
    on deleting the victims it chose (played here by a DELETE as the scheduler, with the preemptor gone).
    The guard judges them against the pod it was preempting for, deleted since, and refuses the protected
    one. `high` asks 64 CPUs, so the scheduler itself never preempts for it."""
    await wait_annotations(api, classes["low-non-preempted"], {MIN: "10000", TOL: "-1"})
    await create_bound(api, namespace, "victim", classes["low-non-preempted"], node)
    core = client.CoreV1Api(api)
    await core.create_namespaced_pod(namespace, pod_body("high", classes["high"], node, cpu="64"))
    await core.delete_namespaced_pod("high", namespace)
    as_scheduler = ("delete", "pod", "victim", "-n", namespace, "--as=system:kube-scheduler", "--wait=false")
    deleted_since = f"the preemptor ({namespace}/high, deleted since, priority 9000) is below it"
    await eventually(  # once the guard's cache has seen the deletion
        lambda: asyncio.to_thread(kubectl, *as_scheduler, "--dry-run=server", check=False),
        lambda result: deleted_since in result.stderr,
        timeout=REACTION_SECONDS,
        what="a dry run judged against the deleted preemptor",
    )
    refused = kubectl(*as_scheduler, check=False)
    assert refused.returncode != 0 and deleted_since in refused.stderr, refused.stderr
    assert node_of(await read_pod(api, namespace, "victim")) == node


async def test_high_preempts_a_plain_low_pod(
    api: ApiClient, namespace: str, node: str, classes: dict[str, str]
) -> None:
    await create_bound(api, namespace, "victim", classes["low"], node)
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", classes["high"], node))
    await preempts(api, namespace, "victim", "high", node)
    assert await events_of(api, namespace, "victim") == []


async def test_guaranteed_running_time_then_preemption(
    api: ApiClient, namespace: str, node: str, classes: dict[str, str]
) -> None:
    await high_held_back(api, namespace, node, classes, "low-non-preempted-10min", {MIN: "10000", TOL: "600"})

    # As upstream's test does: move the PodScheduled time more than 600 s into the past.
    await set_scheduled_at(api, namespace, "victim", datetime.now(UTC) - timedelta(seconds=601))
    await preempts(api, namespace, "victim", "high", node)


async def test_pods_naming_a_pod_group_are_judged_one_by_one_where_groups_are_not_served(
    api: ApiClient, namespace: str, make_node: MakeNode, classes: dict[str, str]
) -> None:
    """Without `GenericWorkload` (this control plane) the API server drops `schedulingGroup`: two pods meant as
    one group are judged as pods, as ever. `over`, past its own 10 minutes, is preempted though `within`, of
    the same would-be group, was just scheduled (as members of an `all` group, both would be kept: the group's
    time runs from its last member's scheduling, test_guard_pod_groups.py)."""
    ten_minutes = classes["low-non-preempted-10min"]
    await wait_annotations(api, ten_minutes, {MIN: "10000", TOL: "600"})
    nodes = {name: (await make_node(cpu="2", memory="8Gi")).metadata.name for name in ("over", "within")}
    for name, node in nodes.items():
        body = pod_body(name, ten_minutes, node)
        body["spec"]["schedulingGroup"] = {"podGroupName": "job"}
        await client.CoreV1Api(api).create_namespaced_pod(namespace, body)
        await until_bound(api, namespace, name, node)
        raw = await client.CoreV1Api(api).read_namespaced_pod(name, namespace, _preload_content=False)
        assert "schedulingGroup" not in json.loads(await raw.read())["spec"]  # the client's model drops it too
    await set_scheduled_at(api, namespace, "over", datetime.now(UTC) - timedelta(seconds=601))
    await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", classes["high"], nodes["over"]))
    await preempts(api, namespace, "over", "high", nodes["over"])
    assert node_of(await read_pod(api, namespace, "within")) == nodes["within"]


async def _evict(api: ApiClient, namespace: str, name: str, annotations: dict[str, str]) -> ApiException | None:
    body = {
        "apiVersion": "policy/v1beta1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
    }
    try:
        await client.CoreV1Api(api).create_namespaced_pod_eviction(name, namespace, body)
    except ApiException as error:
        return error
    return None


async def test_eviction_with_the_preemptor_annotation_is_refused_without_it_evicts(
    api: ApiClient, namespace: str, node: str, classes: dict[str, str]
) -> None:
    await wait_annotations(api, classes["low-non-preempted-10min"], {MIN: "10000", TOL: "600"})
    await create_bound(api, namespace, "timed", classes["low-non-preempted-10min"], node, cpu="1")
    await create_bound(api, namespace, "forever", classes["low-non-preempted"], node, cpu="1")
    preemptor = {"preemption-toleration.scheduling.x-k8s.io/preemptor-priority": "9000"}

    refused = await _evict(api, namespace, "timed", preemptor)
    assert refused is not None and refused.status == 429
    message = json.loads(refused.body)["message"]
    assert message.startswith(
        'admission webhook "pods.guard.preemption-toleration.dev" denied the request: '
        f"pod {namespace}/timed (PriorityClass {classes['low-non-preempted-10min']}"
    )
    assert "s left of 600 s guaranteed running time). Retry after" in message

    refused = await _evict(api, namespace, "forever", preemptor)
    assert refused is not None and refused.status == 403
    assert "the toleration has no end" in json.loads(refused.body)["message"]

    assert await _evict(api, namespace, "forever", {}) is None  # a drain, not a preemption
    await until_gone(api, namespace, "forever", timeout=REACTION_SECONDS)


async def test_only_requests_that_may_be_preemptions_reach_the_guard(
    api: ApiClient,
    namespace: str,
    node: str,
    classes: dict[str, str],
    cluster: LocalCluster,
    kubectl: Kubectl,
    components: RunProcess,
) -> None:
    """The registered configuration carries the guard's matchConditions: the API server itself answers a
    user's DELETE and KWOK's status updates (as a kubelet's), and calls the guard for a preemption."""
    server = Server.of(components)

    async def guard_requests() -> float:
        return (await server.metric("ptol_webhook_requests_total", "endpoint")).get("guard", 0.0)

    before = await guard_requests()
    await create_bound(api, namespace, "plain", classes["low-non-preempted"], node, cpu="1")
    await eventually(  # KWOK's status update, as a kubelet's
        lambda: read_pod(api, namespace, "plain"),
        lambda p: (p or {}).get("status", {}).get("phase") == "Running",
        what="plain Running",
    )
    kubectl("delete", "pod", "plain", "-n", namespace, "--wait=true")
    assert await guard_requests() == before, "a user's DELETE or a status update reached the guard"

    await wait_annotations(api, classes["low-non-preempted"], {MIN: "10000", TOL: "-1"})
    await create_bound(api, namespace, "protected", classes["low-non-preempted"], node, cpu="1")
    refused = await _evict(
        api, namespace, "protected", {"preemption-toleration.scheduling.x-k8s.io/preemptor-priority": "9000"}
    )
    assert refused is not None and refused.status == 403
    assert await guard_requests() == before + 1
