"""Everything keeps working after the API server restarts, as in a control-plane upgrade: every watch of
the operator (kopf) and of the webhook caches (our informer) breaks and must resume on its own.

The operator's resync is set far beyond the test, so what it does afterwards comes from resumed watches.
"""

from __future__ import annotations

import subprocess

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.kube.informer import MAX_BACKOFF_SECONDS
from tests.integration.components import RunProcess, ptol_run_fixture
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import REACTION_SECONDS, SLOW_SECONDS, START_SECONDS, denied, eventually, unique_name
from tests.integration.objects import (
    MIN,
    TOL,
    apply,
    apply_class_and_policy,
    class_manifest,
    wait_annotations,
    wait_ready,
)
from tests.integration.pods import create_bound, events_of, pod_body, stays

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

RESTARTS = 3


components = ptol_run_fixture("--resync-seconds", "3600")


async def test_operator_webhooks_and_guard_resume_after_the_api_server_restarts(
    api: ApiClient,
    cluster: LocalCluster,
    components: RunProcess,
    kubectl: Kubectl,
    alice: Kubectl,
    make_node: MakeNode,
    namespace: str,
) -> None:
    suffix = unique_name("r").split("-")[-1]
    high, before, after = f"high-{suffix}", f"before-{suffix}", f"after-{suffix}"
    names = (high, before, after)
    try:
        apply(kubectl, class_manifest(high, 9000))
        apply_class_and_policy(kubectl, before, before)
        await wait_annotations(api, before, {MIN: "10000", TOL: "-1"})

        # Several times: a watch that reconnects while the restarted server does not serve our CRD yet gets a
        # 404, which stops kopf (it is started again); the window is short, so one restart rarely hits it.
        for _ in range(RESTARTS):
            cluster.restart_apiserver()
            await eventually(
                lambda: _api_answers(api), bool, timeout=REACTION_SECONDS, what="the API after the restart"
            )

        # The operator: a class, then its policy, both created after the restart. (In this order the
        # mutating webhook has nothing to add, so the annotations can only come from the operator.)
        apply_class_and_policy(kubectl, after, after)
        await eventually(
            lambda: _annotations_within(api, after),
            bool,
            timeout=START_SECONDS,
            what="the operator applying a policy created after the restart",
        )
        await wait_ready(api, after, "True", "Applied")

        # The webhook's policy cache learns the new policy. Its watch may still be in its backoff after the
        # restarts (up to the informer's cap): until then a hand change is admitted, and the operator puts it
        # back; once the watch has resumed, the change is refused.
        async def alices_change() -> subprocess.CompletedProcess[str]:
            return alice("annotate", "--overwrite", "priorityclass", after, f"{MIN}=9000", check=False)

        result = await eventually(
            alices_change,
            lambda done: done.returncode != 0,
            timeout=MAX_BACKOFF_SECONDS + 15,
            interval=1.0,
            what="the webhook refusing a hand change to the new policy's class",
        )
        message = denied(result, "priorityclasses.validate.preemption-toleration.dev")
        assert f'but PreemptionTolerationPolicy "{after}" manages it' in message

        # The guard's pod, node and class caches know objects created after the restart.
        node = (await make_node(cpu="3", memory="8Gi")).metadata.name
        # kube-scheduler's own watches back off after failing to reconnect to a restarted API server (client-go
        # waits up to 30 s plus as much jitter): once it binds the victim, its caches are current.
        await create_bound(api, namespace, "victim", after, node, timeout=SLOW_SECONDS)
        await client.CoreV1Api(api).create_namespaced_pod(namespace, pod_body("high", high, node))
        await stays(api, namespace, "victim", "high", node)
        assert await events_of(api, namespace, "victim"), "the guard refused nothing: no PreemptionRefused Event"
        assert components.running(), components.log()[-3000:]
    finally:
        for name in names:
            kubectl("delete", "ptp", name, "--ignore-not-found", check=False)
            kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)


async def _api_answers(api: ApiClient) -> bool:
    try:
        await client.VersionApi(api).get_code()
    except Exception:  # noqa: BLE001 - stale pooled connections fail once after the restart
        return False
    return True


async def _annotations_within(api: ApiClient, name: str) -> bool:
    pc = await client.SchedulingV1Api(api).read_priority_class(name)
    annotations = pc.metadata.annotations or {}
    return annotations.get(MIN) == "10000" and annotations.get(TOL) == "-1"
