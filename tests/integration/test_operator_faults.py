"""The operator under faults: in the middle of a burst of 50 policies, killed with SIGKILL, or its API server
restarted; afterwards, as a user sees it, every policy is Ready, every class carries exactly its policy's
annotations, and deleting the policies releases every class and leaves no policy behind. A write another
admission check refuses, retried once it is let through, without waiting for the resync; a policy deleted while
the operator was stopped, released at its start; and a policy of an earlier release, which kopf's finalizer
held, let go."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.devcluster import LocalCluster
from tests.integration import helpers, objects
from tests.integration.components import OperatorProcess, install_crd
from tests.integration.conftest import Kubectl
from tests.integration.refusals import refused_by_admission

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

BURST = 50


@contextlib.contextmanager
def running_operator(
    cluster: LocalCluster, resync_seconds: int, log_name: str, *args: str
) -> Iterator[OperatorProcess]:
    install_crd(cluster)
    process = OperatorProcess(cluster, "--resync-seconds", str(resync_seconds), *args, log_name=log_name)
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def operator(cluster: LocalCluster) -> Iterator[OperatorProcess]:
    with running_operator(cluster, 3, "operator-faults.log") as process:
        yield process


class Burst:
    """50 classes and, for each, a policy of its own with its own values."""

    def __init__(self, kubectl: Kubectl) -> None:
        self.kubectl = kubectl
        label = helpers.unique_name("fault")
        self.classes = [f"{label}-c{i}" for i in range(BURST)]
        self.policies = [f"{label}-p{i}" for i in range(BURST)]

    def wanted(self, index: int) -> dict[str, str]:
        return {objects.MIN: str(10000 + index), objects.TOL: str(60 * (index + 1))}

    def apply_classes(self) -> None:
        manifests = [json.loads(objects.class_manifest(name)) for name in self.classes]
        objects.apply(self.kubectl, json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests}))

    def apply_policies(self) -> None:
        manifests = [
            json.loads(
                objects.policy_manifest(
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
        objects.apply(self.kubectl, json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests}))

    async def annotated(self, api: ApiClient) -> int:
        classes = await _classes(api, self.classes)
        return sum(objects.ours(classes.get(name)) == self.wanted(i) for i, name in enumerate(self.classes))

    async def converged(self, api: ApiClient) -> list[str]:
        """What still differs from the converged state (empty: converged)."""
        classes = await _classes(api, self.classes)
        policies = await _policies(api, self.policies)
        wrong = [
            f"{name}: {objects.ours(classes.get(name))}"
            for i, name in enumerate(self.classes)
            if objects.ours(classes.get(name)) != self.wanted(i)
        ]
        wrong += [
            f"{name}: {objects.ready(policies.get(name))}"
            for name in self.policies
            if objects.ready(policies.get(name))[:2] != ("True", "Applied")
        ]
        return wrong

    async def left_behind(self, api: ApiClient) -> list[str]:
        """What deleting the policies has not undone yet: a policy, a class's annotations."""
        classes = await _classes(api, self.classes)
        left = [
            f"{name}: {objects.ours(classes.get(name))}" for name in self.classes if objects.ours(classes.get(name))
        ]
        return left + list(await _policies(api, self.policies))

    async def converges_then_deleted_leaves_nothing(self, api: ApiClient) -> None:
        """Every policy becomes Ready and every class gets its policy's annotations; then deleting the policies
        releases every class and leaves no policy behind."""
        await helpers.eventually(
            lambda: self.converged(api),
            lambda wrong: wrong == [],
            timeout=helpers.SLOW_SECONDS,
            what="every policy Ready and every class with its policy's annotations",
        )
        self.kubectl("delete", "ptp", *self.policies, "--wait=false")
        await helpers.eventually(
            lambda: self.left_behind(api),
            lambda left: left == [],
            timeout=helpers.SLOW_SECONDS,
            what="every policy gone and every class released",
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
    done = await helpers.eventually(
        lambda: burst.annotated(api),
        lambda count: count > 0,
        timeout=helpers.START_SECONDS,
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
    await helpers.eventually(
        lambda: _answers(api), bool, timeout=helpers.ANSWER_SECONDS, what="the admin client's calls answered again"
    )
    await burst.converges_then_deleted_leaves_nothing(api)


@pytest.fixture
def unhurried_operator(cluster: LocalCluster) -> Iterator[OperatorProcess]:
    """An operator whose resync comes only after the tests that use it: what it does, it did on its own."""
    with running_operator(cluster, 3600, "operator-unhurried.log") as process:
        yield process


def class_writes_refused(api: ApiClient, label: str) -> AbstractAsyncContextManager[Callable[[], Awaitable[None]]]:
    """Every change of a PriorityClass labelled `label` refused, as another admission check of a cluster may;
    yields the function that lets them through again."""
    rule = {
        "apiGroups": ["scheduling.k8s.io"],
        "apiVersions": ["v1"],
        "operations": ["UPDATE"],
        "resources": ["priorityclasses"],
    }
    return refused_by_admission(
        api,
        f"refuse-{label}",
        rule,
        "false",
        "refused by the test",
        {"objectSelector": {"matchLabels": {label: "true"}}},
    )


@contextlib.contextmanager
def deleted_after(kubectl: Kubectl, pc: str, ptp: str) -> Iterator[None]:
    """The class `pc` and the policy `ptp` a test makes, deleted after it whatever happened."""
    try:
        yield
    finally:
        kubectl("delete", "ptp", ptp, "--ignore-not-found", check=False)
        kubectl("delete", "priorityclass", pc, "--ignore-not-found", check=False)


def apply_policy(kubectl: Kubectl, ptp: str, pc: str, **metadata: Any) -> None:
    """`kubectl apply` of policy `ptp`: class `pc` not preempted below priority 10000, with this metadata."""
    manifest = json.loads(objects.policy_manifest(ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 10000}))
    manifest["metadata"].update(metadata)
    objects.apply(kubectl, json.dumps(manifest))


async def test_a_refused_write_is_retried_without_waiting_for_the_resync(
    api: ApiClient, kubectl: Kubectl, unhurried_operator: OperatorProcess
) -> None:
    """Another check refuses the class's write: the policy says so (ApplyFailed); once the check lets writes
    through, the operator's own retry writes the class, with nothing else changed to ask for it."""
    pc, ptp, label = helpers.unique_name("refused"), helpers.unique_name("policy"), helpers.unique_name("refuse")
    objects.apply(kubectl, objects.class_manifest(pc, labels={label: "true"}))
    with deleted_after(kubectl, pc, ptp):
        async with class_writes_refused(api, label) as let_through:

            async def refused() -> str:
                probe = '{"metadata":{"annotations":{"probe":"x"}}}'
                return kubectl("patch", "priorityclass", pc, "--dry-run=server", "-p", probe, check=False).stderr

            await helpers.eventually(refused, lambda said: "refused by the test" in said, what="the refusal in force")
            apply_policy(kubectl, ptp, pc)
            policy = await objects.wait_ready(api, ptp, "False", "ApplyFailed")
            assert "refused by the test" in objects.ready(policy)[2]
            assert objects.ours(await objects.read_class(api, pc)) == {}
            await let_through()
            await objects.wait_annotations(api, pc, {objects.MIN: "10000"})
            await objects.wait_ready(api, ptp, "True", "Applied")


async def test_a_policy_deleted_while_the_operator_was_stopped_is_released_at_its_start(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess
) -> None:
    """No finalizer holds a policy: `kubectl delete` while the operator is stopped deletes it at once, and the
    operator releases its class when it starts."""
    pc, ptp = helpers.unique_name("orphan"), helpers.unique_name("policy")
    objects.apply(kubectl, objects.class_manifest(pc))
    with deleted_after(kubectl, pc, ptp):
        apply_policy(kubectl, ptp, pc)
        await objects.wait_annotations(api, pc, {objects.MIN: "10000"})
        policy = await objects.wait_ready(api, ptp, "True", "Applied")
        # nothing written on the policy but its status: no finalizer, no annotation of kopf's or ours
        assert "finalizers" not in policy["metadata"]
        assert list(policy["metadata"].get("annotations") or {}) == ["kubectl.kubernetes.io/last-applied-configuration"]
        operator.stop()
        kubectl("delete", "ptp", ptp, "--wait=true", "--timeout=10s")
        assert objects.ours(await objects.read_class(api, pc)) == {objects.MIN: "10000"}
        operator.start()
        await objects.wait_annotations(api, pc, {})


async def test_a_policy_an_earlier_release_held_by_its_finalizer_is_let_go(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess
) -> None:
    """Earlier releases put kopf's finalizer on every policy: the operator removes it, from a policy in use, and
    from one deleted while no operator ran, left Terminating, which then goes and releases its class."""
    pc, ptp = helpers.unique_name("former"), helpers.unique_name("policy")
    former = {"finalizers": [f"{GROUP}/finalizer"]}

    async def finalizers() -> list[str] | None:
        found = await objects.read_policy(api, ptp)
        return None if found is None else list(found["metadata"].get("finalizers") or [])

    objects.apply(kubectl, objects.class_manifest(pc))
    with deleted_after(kubectl, pc, ptp):
        apply_policy(kubectl, ptp, pc, **former)
        await objects.wait_annotations(api, pc, {objects.MIN: "10000"})
        await helpers.eventually(
            finalizers, lambda found: found == [], timeout=helpers.REACTION_SECONDS, what="its finalizer removed"
        )
        operator.stop()
        apply_policy(kubectl, ptp, pc, **former)  # as the earlier release left it
        kubectl("delete", "ptp", ptp, "--wait=false")
        assert await finalizers() == [f"{GROUP}/finalizer"]  # Terminating
        operator.start()
        await helpers.eventually(
            finalizers, lambda found: found is None, timeout=helpers.START_SECONDS, what="the policy gone"
        )
        await objects.wait_annotations(api, pc, {})


async def test_a_peered_replica_reconciles_after_its_listing_without_waiting_for_the_resync(
    api: ApiClient, kubectl: Kubectl, cluster: LocalCluster
) -> None:
    """A replica of a peering stands by until its listing of the policies is complete, and the requests the
    listing's objects make come while it does: the listing's end asks again, so a policy applied before the
    replica started is written at its start, not a resync period later."""
    pc, ptp = helpers.unique_name("peered"), helpers.unique_name("policy")
    install_crd(cluster)
    objects.apply(kubectl, objects.class_manifest(pc))
    with deleted_after(kubectl, pc, ptp):
        apply_policy(kubectl, ptp, pc)
        peered = ("--peering", "preemption-toleration", "--priority", "300")
        with running_operator(cluster, 3600, "operator-unhurried-peered.log", *peered):
            await objects.wait_annotations(api, pc, {objects.MIN: "10000"})
            await objects.wait_ready(api, ptp, "True", "Applied")
