"""The operator under faults in the middle of a burst of 50 policies: killed with SIGKILL, or its API server
restarted. Afterwards, as a user sees it: every policy is Ready, every class carries exactly its policy's
annotations, and deleting the policies releases every class and leaves no finalizer behind."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.devcluster import LocalCluster
from tests.integration.components import OperatorProcess, install_crd
from tests.integration.conftest import Kubectl
from tests.integration.helpers import ANSWER_SECONDS, SLOW_SECONDS, START_SECONDS, eventually, unique_name
from tests.integration.objects import MIN, TOL, class_manifest, ours, policy_manifest, ready

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

BURST = 50


@pytest.fixture
def operator(cluster: LocalCluster) -> Iterator[OperatorProcess]:
    install_crd(cluster)
    process = OperatorProcess(cluster, "--resync-seconds", "3", log_name="operator-faults.log")
    process.start()
    yield process
    process.stop()


class Burst:
    """50 classes and, for each, a policy of its own with its own values."""

    def __init__(self, kubectl: Kubectl) -> None:
        self.kubectl = kubectl
        label = unique_name("fault")
        self.classes = [f"{label}-c{i}" for i in range(BURST)]
        self.policies = [f"{label}-p{i}" for i in range(BURST)]

    def wanted(self, index: int) -> dict[str, str]:
        return {MIN: str(10000 + index), TOL: str(60 * (index + 1))}

    def apply_classes(self) -> None:
        manifests = [json.loads(class_manifest(name)) for name in self.classes]
        self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests}))

    def apply_policies(self) -> None:
        manifests = [
            json.loads(
                policy_manifest(
                    policy,
                    {
                        "priorityClassName": name,
                        "minimumPreemptablePriority": 10000 + i,
                        "tolerationSeconds": 60 * (i + 1),
                    },
                )
            )
            for i, (policy, name) in enumerate(zip(self.policies, self.classes, strict=True))
        ]
        self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests}))

    async def annotated(self, api: ApiClient) -> int:
        classes = await _classes(api, self.classes)
        return sum(ours(classes.get(name)) == self.wanted(i) for i, name in enumerate(self.classes))

    async def converged(self, api: ApiClient) -> list[str]:
        """What still differs from the converged state (empty: converged)."""
        classes = await _classes(api, self.classes)
        policies = await _policies(api, self.policies)
        wrong = [
            f"{name}: {ours(classes.get(name))}"
            for i, name in enumerate(self.classes)
            if ours(classes.get(name)) != self.wanted(i)
        ]
        wrong += [
            f"{name}: {ready(policies.get(name))}"
            for name in self.policies
            if ready(policies.get(name))[:2] != ("True", "Applied")
        ]
        return wrong

    async def left_behind(self, api: ApiClient) -> list[str]:
        """What deleting the policies has not undone yet: a policy (its finalizer), a class's annotations."""
        classes = await _classes(api, self.classes)
        left = [f"{name}: {ours(classes.get(name))}" for name in self.classes if ours(classes.get(name))]
        return left + list(await _policies(api, self.policies))

    async def converges_then_deleted_leaves_nothing(self, api: ApiClient) -> None:
        """Every policy becomes Ready and every class gets its policy's annotations; then deleting the policies
        releases every class and leaves no finalizer behind."""
        await eventually(
            lambda: self.converged(api),
            lambda wrong: wrong == [],
            timeout=SLOW_SECONDS,
            what="every policy Ready and every class with its policy's annotations",
        )
        self.kubectl("delete", "ptp", *self.policies, "--wait=false")
        await eventually(
            lambda: self.left_behind(api),
            lambda left: left == [],
            timeout=SLOW_SECONDS,
            what="every policy gone (no finalizer left behind) and every class released",
        )

    def cleanup(self) -> None:
        self.kubectl("delete", "ptp", *self.policies, "--ignore-not-found", check=False)
        self.kubectl("delete", "priorityclass", *self.classes, "--ignore-not-found", check=False)


async def _classes(api: ApiClient, names: list[str]) -> dict[str, dict]:
    listed = await client.SchedulingV1Api(api).list_priority_class()
    wanted = set(names)
    return {
        pc["metadata"]["name"]: pc
        for pc in api.sanitize_for_serialization(listed)["items"]
        if pc["metadata"]["name"] in wanted
    }


async def _policies(api: ApiClient, names: list[str]) -> dict[str, dict]:
    listed = await client.CustomObjectsApi(api).list_cluster_custom_object(GROUP, VERSION, PLURAL)
    wanted = set(names)
    return {p["metadata"]["name"]: p for p in listed["items"] if p["metadata"]["name"] in wanted}


async def _answers(api: ApiClient) -> bool:
    """Whether a call of `api` is answered: after the API server's restart, which blocked the event loop, a call
    can find one of its pooled connections closed (then the pool drops it, and the next call opens another)."""
    try:
        await client.VersionApi(api).get_code()
    except aiohttp.ClientError:
        return False
    return True


@pytest.fixture
async def burst(kubectl: Kubectl) -> AsyncIterator[Burst]:
    made = Burst(kubectl)
    made.apply_classes()
    yield made
    made.cleanup()


async def fault_in_the_middle(api: ApiClient, burst: Burst, fault: Callable[[], None]) -> int:
    """Applies the burst and calls `fault` once the first class is written; returns how many were then."""
    burst.apply_policies()
    done = await eventually(
        lambda: burst.annotated(api),
        lambda count: count > 0,
        timeout=START_SECONDS,
        interval=0.05,
        what="the first class written",
    )
    fault()
    return done


async def test_an_operator_killed_in_the_middle_of_a_burst_converges_after_its_restart(
    api: ApiClient, operator: OperatorProcess, burst: Burst
) -> None:
    def kill() -> None:
        assert operator.process is not None
        operator.process.kill()  # SIGKILL: no cleanup of any kind
        operator.process.wait()
        operator.process = None

    assert await fault_in_the_middle(api, burst, kill) < BURST, "the kill came after the burst"
    operator.start()
    await burst.converges_then_deleted_leaves_nothing(api)


async def test_an_api_server_restarted_in_the_middle_of_a_burst_leaves_nothing_behind(
    api: ApiClient, cluster: LocalCluster, operator: OperatorProcess, burst: Burst
) -> None:
    assert await fault_in_the_middle(api, burst, cluster.restart_apiserver) < BURST, "the restart came after the burst"
    await eventually(
        lambda: _answers(api), bool, timeout=ANSWER_SECONDS, what="the admin client's calls answered again"
    )
    await burst.converges_then_deleted_leaves_nothing(api)
