"""The PriorityClass webhook fails closed, but only on the writes its matchConditions select: with no webhook
server answering, the real API server still takes a PriorityClass that has none of our annotations and no
labels, and refuses one that has them (it cannot ask the webhook)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from preemption_toleration import pki
from preemption_toleration.devcluster.processes import free_port
from preemption_toleration.manifests.webhook_configurations import url_client_config, validating_configuration
from tests.integration.conftest import Kubectl
from tests.integration.helpers import unique_name
from tests.integration.objects import TOL, apply, class_manifest

pytestmark = pytest.mark.integration

CONFIGURATION = "ptol-test-webhook-down"


@pytest.fixture
def webhook_down(kubectl: Kubectl) -> Iterator[None]:
    """Our PriorityClass webhook (failurePolicy Fail, its matchConditions) calling a port nothing listens on."""
    base = f"https://127.0.0.1:{free_port()}"
    configuration = validating_configuration(lambda path: url_client_config(base, path, pki.generate_ca("x").cert_pem))
    configuration["metadata"]["name"] = CONFIGURATION
    configuration["webhooks"] = configuration["webhooks"][:1]  # the PriorityClass webhook alone
    assert configuration["webhooks"][0]["failurePolicy"] == "Fail"
    apply(kubectl, json.dumps(configuration))
    try:
        yield
    finally:
        kubectl("delete", "validatingwebhookconfiguration", CONFIGURATION, "--ignore-not-found")


def test_an_unrelated_priority_class_is_created_while_the_webhook_is_down(kubectl: Kubectl, webhook_down: None) -> None:
    plain, ours, labelled = unique_name("plain"), unique_name("ours"), unique_name("labelled")
    try:
        created = apply(kubectl, class_manifest(plain, description="no annotations of ours"))
        assert f"priorityclass.scheduling.k8s.io/{plain} created" in created.stdout
        kubectl("annotate", "priorityclass", plain, "team=ml")  # an update that is none of ours either

        for name, manifest in (
            (ours, class_manifest(ours, annotations={TOL: "600"})),
            (labelled, class_manifest(labelled, labels={"tier": "batch"})),
        ):
            refused = kubectl("apply", "-f", "-", input=manifest, check=False)
            assert refused.returncode != 0, name
            assert 'failed calling webhook "priorityclasses.validate.preemption-toleration.dev"' in refused.stderr
        assert kubectl("get", "priorityclass", ours, check=False).returncode != 0
    finally:
        for name in (plain, ours, labelled):
            kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)
