"""Steering with the chart's two replicas, live: two `ptol webhook` processes of the installed release behind
its Service (`replicas.webhook_replicas`), steering on, the extender off (a managed cluster). The Service is
routed to one replica while the first preemptor is steered and to the other for the second (the first's
connections closed, as a pod that leaves the endpoints drains), so the two preemptors are steered by different
replicas: both bind, the protected pod stays, and neither replica clears a nomination."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.service_proxy import UNROUTED_CHECK_SECONDS
from tests.integration import steering as bed
from tests.integration.chart import slate
from tests.integration.components import INSTALL_NAMESPACE
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.replicas import Replicas, until_registered, webhook_replicas

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@pytest.fixture
def replicas(cluster: LocalCluster, kubectl: Kubectl, tmp_path: Path) -> Iterator[Replicas]:
    """The chart with steering on and the extender off, two replicas started."""
    values = ("--set", "extender.enabled=false", "--set", "guard.steering=on")
    with slate(cluster, kubectl), webhook_replicas(cluster, kubectl, tmp_path, 2, *values) as found:
        found.start()
        yield found


async def test_two_preemptors_steered_by_different_replicas_both_bind_and_no_nomination_is_cleared(
    api: ApiClient,
    kubectl: Kubectl,
    namespace: str,
    make_node: MakeNode,
    replicas: Replicas,
    steering_classes: dict[str, str],
) -> None:
    await until_registered(kubectl)
    replicas.route([0])

    async def to_the_other_replica() -> None:
        replicas.route([1])
        await asyncio.sleep(2 * UNROUTED_CHECK_SECONDS)  # replica 0's connections closed

    holders = await bed.second_of_two_preemptors(
        api, namespace, make_node, steering_classes, INSTALL_NAMESPACE, to_the_other_replica
    )
    assert holders["first"].startswith("webhook-0-") and holders["second"].startswith("webhook-1-"), holders
    assert sum(await replicas.steering("unblocked")) == 0
    assert [steered >= 1 for steered in await replicas.steering("steered")] == [True, True]
