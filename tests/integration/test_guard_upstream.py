"""Upstream's integration scenarios (scheduler-plugins test/integration/preemption_toleration_test.go) with
the stock kube-scheduler, by the guard alone and again with the scheduler extender on (the same outcomes):
victim class value 1000, minimum 1010, pods of 2 CPUs on 3 CPUs.

The classes with an unparsable annotation are created before the webhooks are registered (our validating
webhook would refuse them), as in a cluster where they predate the installation.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from tests.builders import priority_class
from tests.integration.components import RunProcess, ptol_run_fixture
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import unique_name
from tests.integration.objects import MIN, TOL, apply, class_manifest
from tests.integration.pods import create_bound, pod_body, preempts, set_scheduled_at, stays

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

SUFFIX = unique_name("u").split("-")[-1]
UNPARSABLE = f"victims-unparsable-{SUFFIX}"


@contextmanager
def scenario_classes(cluster: LocalCluster) -> Iterator[None]:
    """The unparsable class and the preemptors' classes, made before `ptol run` registers its webhooks and
    deleted after it stops."""
    classes = [priority_class(UNPARSABLE, 1000, "a")]
    classes += [priority_class(f"p{priority}-{SUFFIX}", priority) for priority in (1010, 1009, 1005, 1001)]
    # The Priority admission plugin takes a pod's preemptionPolicy from its class.
    classes.append({**priority_class(f"p1001-never-{SUFFIX}", 1001), "preemptionPolicy": "Never"})
    listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": classes})
    subprocess.run(cluster.kubectl_argv("apply", "-f", "-"), input=listed, text=True, capture_output=True, check=True)
    try:
        yield
    finally:
        names = [body["metadata"]["name"] for body in classes]
        subprocess.run(
            cluster.kubectl_argv("delete", "priorityclass", *names, "--ignore-not-found"), capture_output=True
        )


components = ptol_run_fixture("--resync-seconds", "3", extended=(False, True), before=scenario_classes)


@pytest.fixture
def extended(components: RunProcess, request: pytest.FixtureRequest) -> bool:
    """Whether the scheduler asks our extender in this run of the module (the parameter of `components`)."""
    return bool(request.node.callspec.params["components"])


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
        apply(kubectl, class_manifest(victims, 1000, annotations=annotations))
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
