"""Upstream's integration scenarios (scheduler-plugins test/integration/preemption_toleration_test.go) with
the stock kube-scheduler, by the guard alone and again with the scheduler extender on (the same outcomes):
victim class value 1000, minimum 1010, pods of 2 CPUs on 3 CPUs.

The classes with an unparsable annotation are created before the webhooks are registered (our validating
webhook would refuse them), as in a cluster where they predate the installation.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from tests.integration.components import RunProcess, ptol_run, scheduler_extended
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import unique_name
from tests.integration.objects import MIN, TOL, class_manifest
from tests.integration.pods import create_bound, pod_body, preempts, set_scheduled_at, stays

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

SUFFIX = unique_name("u").split("-")[-1]
UNPARSABLE = f"victims-unparsable-{SUFFIX}"


@pytest.fixture(scope="module", params=["guard alone", "with the extender"])
def components(cluster: LocalCluster, kubectl: Kubectl, request: pytest.FixtureRequest) -> Iterator[RunProcess]:
    kubectl("apply", "-f", "-", input=class_manifest(UNPARSABLE, 1000, annotations={MIN: "a"}))
    for priority in (1010, 1009, 1005, 1001):
        kubectl("apply", "-f", "-", input=class_manifest(f"p{priority}-{SUFFIX}", priority))
    # The Priority admission plugin takes a pod's preemptionPolicy from its class.
    never = json.loads(class_manifest(f"p1001-never-{SUFFIX}", 1001))
    never["preemptionPolicy"] = "Never"
    kubectl("apply", "-f", "-", input=json.dumps(never))
    with ptol_run(cluster, "--resync-seconds", "3") as process:
        if request.param == "with the extender":
            with scheduler_extended(cluster):
                yield process
        else:
            yield process
    for name in [UNPARSABLE, f"p1001-never-{SUFFIX}"] + [f"p{p}-{SUFFIX}" for p in (1010, 1009, 1005, 1001)]:
        kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)


@pytest.fixture
def extended(components: RunProcess, request: pytest.FixtureRequest) -> bool:
    """Whether the scheduler asks our extender in this run of the module (the parameter of `components`)."""
    return bool(request.node.callspec.params["components"] == "with the extender")


@pytest.fixture
async def node(make_node: MakeNode) -> AsyncIterator[str]:
    created = await make_node(cpu="3", memory="8Gi")
    yield created.metadata.name


UPSTREAM = [
    # (scenario, toleration, preemptor priority, preemption policy, scheduled seconds ago, can tolerate)
    ("preemptor >= minimum", None, 1010, None, None, False),
    ("preemptor >= minimum, toleration has no effect", "30", 1010, None, None, False),
    ("preemptor < minimum, no toleration seconds", None, 1009, None, None, False),
    ("preemptor < minimum, toleration -1", "-1", 1009, None, 10**9, True),
    ("preemptor < minimum, scheduled within toleration", "30", 1005, None, None, True),
    ("preemptor < minimum, toleration elapsed", "5", 1005, None, 10, False),
    ("unparsable policy, PreemptLowerPriority", "unparsable", 1001, "PreemptLowerPriority", None, False),
    ("unparsable policy, Never", "unparsable", 1001, "Never", 10**9, True),
]


@pytest.mark.parametrize(
    ("scenario", "toleration", "priority", "policy", "ago", "tolerates"), UPSTREAM, ids=[c[0] for c in UPSTREAM]
)
async def test_upstream_scenarios_with_the_real_scheduler(
    api: ApiClient,
    namespace: str,
    node: str,
    kubectl: Kubectl,
    extended: bool,
    scenario: str,
    toleration: str | None,
    priority: int,
    policy: str | None,
    ago: int | None,
    tolerates: bool,
) -> None:
    victims = UNPARSABLE if toleration == "unparsable" else unique_name("victims")
    if toleration != "unparsable":
        annotations = {MIN: "1010"} if toleration is None else {MIN: "1010", TOL: toleration}
        kubectl("apply", "-f", "-", input=class_manifest(victims, 1000, annotations=annotations))
    try:
        await create_bound(api, namespace, "victim", victims, node)
        if ago is not None:
            await set_scheduled_at(api, namespace, "victim", datetime.now(UTC) - timedelta(seconds=ago))
        class_name = f"p{priority}-never-{SUFFIX}" if policy == "Never" else f"p{priority}-{SUFFIX}"
        preemptor = pod_body("p", class_name, node)
        if policy == "PreemptLowerPriority":
            preemptor["spec"]["preemptionPolicy"] = policy  # the same as its class says
        await client.CoreV1Api(api).create_namespaced_pod(namespace, preemptor)
        if tolerates:
            # The scheduler's first failure is its decision when it does not preempt (a preemptor that never
            # preempts) or our extender chooses no victim; the guard alone refuses the victim chosen (two).
            await stays(api, namespace, "victim", "p", node, attempts=1 if extended or policy == "Never" else 2)
        else:
            await preempts(api, namespace, "victim", "p", node)
    finally:
        if victims != UNPARSABLE:
            kubectl("delete", "priorityclass", victims, "--ignore-not-found", check=False)
