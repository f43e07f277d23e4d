"""`ptol run` never takes over another's registrations: a second `ptol run` on the same control plane, or one
beside an installed release, is refused before it serves or touches anything, naming what runs there."""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.logs import REGISTERED
from preemption_toleration.manifests.webhook_configurations import GUARD_NAME, NAME
from tests.integration.chart import inert_release_configurations
from tests.integration.components import RunProcess, install_crd, ptol_run
from tests.integration.conftest import Kubectl
from tests.integration.helpers import ANSWER_SECONDS, START_SECONDS

pytestmark = pytest.mark.integration


def second_run(cluster: LocalCluster, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`ptol run` as a user starts it, with the cluster's kubeconfig, until it exits (it must, at once)."""
    argv = [sys.executable, "-m", "preemption_toleration", "run", "--kubeconfig", str(cluster.kubeconfig)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=START_SECONDS, cwd=tmp_path, check=False)


@pytest.fixture
def first(cluster: LocalCluster) -> Iterator[RunProcess]:
    with ptol_run(cluster) as process:
        yield process


def test_a_second_ptol_run_is_refused_naming_the_first(
    first: RunProcess, cluster: LocalCluster, kubectl: Kubectl, tmp_path: Path
) -> None:
    registered = yaml.safe_load(kubectl("get", "validatingwebhookconfiguration", GUARD_NAME, "-o", "yaml").stdout)
    url = registered["webhooks"][0]["clientConfig"]["url"]
    server = url.rsplit("/guard/", 1)[0]
    result = second_run(cluster, tmp_path)
    assert result.returncode == 1, result.stderr
    assert f"is registered for {server}, where a server still answers: another `ptol run`" in result.stderr
    assert "Traceback" not in result.stderr
    # the first keeps its registrations and serves on
    after = yaml.safe_load(kubectl("get", "validatingwebhookconfiguration", GUARD_NAME, "-o", "yaml").stdout)
    assert after["webhooks"][0]["clientConfig"]["url"] == url and first.running()


@pytest.fixture
def installed_release(kubectl: Kubectl) -> Iterator[None]:
    """The configurations of an installed release (calling its Service), inert."""
    with inert_release_configurations(kubectl):
        yield


def test_ptol_run_beside_an_installed_release_is_refused_naming_its_configurations(
    installed_release: None, cluster: LocalCluster, tmp_path: Path
) -> None:
    result = second_run(cluster, tmp_path)
    assert result.returncode == 1, result.stderr
    assert (
        f"validatingwebhookconfiguration {NAME} is registered for Service "
        "preemption-toleration/preemption-toleration-webhook: an installed release"
    ) in result.stderr
    # not the API server's raw refusal of a URL registration over a Service's (422)
    assert "Traceback" not in result.stderr and "exactly one of url or service" not in result.stderr


def test_ptol_run_serves_metrics_on_a_port_of_its_own(cluster: LocalCluster, kubectl: Kubectl, tmp_path: Path) -> None:
    """As the Deployments do: /metrics on a free loopback port of its own (logged), not on the HTTPS port."""
    install_crd(cluster)
    process = ComponentProcess("run", cluster.kubeconfig, tmp_path / "run.log")
    since = process.start()
    try:
        process.wait_for(REGISTERED, since, timeout=START_SECONDS)
        [metrics_url] = re.findall(r"http://127\.0\.0\.1:\d+/metrics", process.log()[since:])
        with urllib.request.urlopen(metrics_url, timeout=ANSWER_SECONDS) as response:
            assert "ptol_webhook_requests_total" in response.read().decode()
        registered = yaml.safe_load(kubectl("get", "validatingwebhookconfiguration", GUARD_NAME, "-o", "yaml").stdout)
        https_base = registered["webhooks"][0]["clientConfig"]["url"].rsplit("/guard/", 1)[0]
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        with pytest.raises(urllib.error.HTTPError) as not_there:
            urllib.request.urlopen(f"{https_base}/metrics", timeout=ANSWER_SECONDS, context=context)
        assert not_there.value.code == 404
    finally:
        process.stop()
        for kind, name in (
            ("validatingwebhookconfiguration", NAME),
            ("mutatingwebhookconfiguration", NAME),
            ("validatingwebhookconfiguration", GUARD_NAME),
        ):
            kubectl("delete", kind, name, "--ignore-not-found", check=False)
