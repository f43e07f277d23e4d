"""`ptol run` never takes over another's registrations: a second `ptol run` on the same control plane, or one
beside an installed release, is refused before it serves or touches anything, naming what runs there."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.webhooks.configurations import GUARD_NAME, NAME
from tests.integration.chart import inert_release_configurations
from tests.integration.components import RunProcess, ptol_run
from tests.integration.conftest import Kubectl

pytestmark = pytest.mark.integration


def second_run(cluster: LocalCluster, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`ptol run` as a user starts it, with the cluster's kubeconfig, until it exits (it must, at once)."""
    argv = [sys.executable, "-m", "preemption_toleration", "run", "--kubeconfig", str(cluster.kubeconfig)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)


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
    assert "Traceback" not in result.stderr and "422" not in result.stderr
