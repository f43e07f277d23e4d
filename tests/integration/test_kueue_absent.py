"""`ptol run --kueue on` where Kueue is not installed (its CRDs not served): the server and the operator start and
govern PriorityClasses as without it, and a policy of WorkloadPriorityClasses says that they are not served."""

from __future__ import annotations

import pytest
from kubernetes_asyncio.client import ApiClient

from tests.integration.components import RunProcess, ptol_run_fixture
from tests.integration.conftest import Kubectl
from tests.integration.helpers import unique_name
from tests.integration.objects import (
    MIN,
    TOL,
    apply,
    class_manifest,
    policy_manifest,
    read_policy,
    ready,
    wait_annotations,
    wait_ready,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

components = ptol_run_fixture("--kueue", "on")


async def test_without_kueue_priority_classes_are_governed_and_its_kind_is_told_not_served(
    components: RunProcess, api: ApiClient, kubectl: Kubectl
) -> None:
    klass, of_kueue = unique_name("absent"), unique_name("absent-wpc")
    apply(kubectl, class_manifest(klass))
    try:
        spec = {"priorityClassName": klass, "minimumPreemptablePriority": 10000, "tolerationSeconds": -1}
        apply(kubectl, policy_manifest(klass, spec))
        await wait_annotations(api, klass, {MIN: "10000", TOL: "-1"})
        apply(kubectl, policy_manifest(of_kueue, {**spec, "priorityClassKind": "WorkloadPriorityClass"}))
        await wait_ready(api, of_kueue, "False", "KindNotServed")
        _, _, message = ready(await read_policy(api, of_kueue))
        assert "is Kueue installed?" in message, message
    finally:
        kubectl("delete", "ptp", klass, of_kueue, "--ignore-not-found", check=False)
        kubectl("delete", "priorityclass", klass, "--ignore-not-found", check=False)
