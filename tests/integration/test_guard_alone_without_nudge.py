"""The guard alone, with the extender endpoint and its expiry nudge off (`--extender off`, a managed cluster's
setting): the scheduler's own retries, paced by the guard, schedule a preemptor at the end of the toleration
that held it back, so the webhook server needs no right to write pods. No nudge is planned or counted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes_asyncio.client import ApiClient

from tests.integration.components import Server, ptol_run_fixture
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import unique_name
from tests.integration.objects import MIN, TOL, apply, class_manifest
from tests.integration.test_scheduler_preemption import GUARANTEE_SECONDS, seconds_late

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


components = ptol_run_fixture("--extender", "off")


@pytest.fixture(scope="module")
def classes(server: Server, kubectl: Kubectl) -> Iterator[dict[str, str]]:
    suffix = unique_name("n").split("-")[-1]
    names = {"high": f"high-{suffix}", "guaranteed": f"guaranteed-{suffix}"}
    apply(kubectl, class_manifest(names["high"], 9000))
    guarantee = {MIN: "10000", TOL: str(GUARANTEE_SECONDS)}
    apply(kubectl, class_manifest(names["guaranteed"], 8000, annotations=guarantee))
    yield names
    for name in names.values():
        kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)


async def test_the_scheduler_finds_the_end_of_a_toleration_without_a_nudge(
    api: ApiClient, namespace: str, make_node: MakeNode, server: Server, classes: dict[str, str]
) -> None:
    node = (await make_node(cpu="3", memory="8Gi")).metadata.name
    late = await seconds_late(api, namespace, node, classes)
    assert -1 <= late <= 3, f"high was scheduled {GUARANTEE_SECONDS + late:.0f} s after the victim, not 20 to 23"
    refusals = await server.metric("ptol_guard_refusals_total", "kind")
    assert sum(refusals.values()) >= 1, "the guard held high back while the toleration lasted"
    assert await server.metric("ptol_preemptor_nudges_total", "outcome") == {}, "no nudge without the extender"
