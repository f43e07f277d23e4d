"""`ptol run` in each TLS mode registers configurations the API server can call: generated in memory (the
other modules), a Secret (`--tls-secret`) and files (`--cert-file --key-file --ca-file`). A certificate
that does not cover the registered host stops it at once with the reason, instead of registering
configurations the API server cannot call."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.components import ComponentProcess
from tests.integration.components import install_crd, ptol_run
from tests.integration.conftest import Kubectl
from tests.integration.helpers import SLOW_SECONDS, denied, unique_name
from tests.integration.load import certificate_files
from tests.integration.objects import MIN, class_manifest

pytestmark = [pytest.mark.integration]

VALIDATE = "priorityclasses.validate.preemption-toleration.dev"


def refuses_a_bad_class(kubectl: Kubectl) -> str:
    name = unique_name("tls-mode")
    result = kubectl("apply", "-f", "-", input=class_manifest(name, annotations={MIN: "10k"}), check=False)
    return denied(result, VALIDATE)


def test_ptol_run_with_a_tls_secret(cluster: LocalCluster, kubectl: Kubectl, namespace: str) -> None:
    with ptol_run(cluster, "--tls-secret", f"{namespace}/ptol-tls"):
        message = refuses_a_bad_class(kubectl)
        assert 'minimum-preemptable-priority="10k" is not a base-10 integer' in message
    stored = kubectl("get", "secret", "-n", namespace, "ptol-tls", "-o", "jsonpath={.data.ca\\.crt}")
    assert stored.stdout  # the pair was kept in the Secret it was given


def test_ptol_run_with_certificate_files(cluster: LocalCluster, kubectl: Kubectl, tmp_path: Path) -> None:
    cert, key, ca, _ = certificate_files(tmp_path, ["127.0.0.1"])
    with ptol_run(cluster, "--cert-file", str(cert), "--key-file", str(key), "--ca-file", str(ca)):
        message = refuses_a_bad_class(kubectl)
        assert 'minimum-preemptable-priority="10k" is not a base-10 integer' in message


def test_ptol_run_refuses_a_certificate_that_does_not_cover_its_url(cluster: LocalCluster, tmp_path: Path) -> None:
    install_crd(cluster)
    cert, key, ca, _ = certificate_files(tmp_path, [])  # localhost only: the URL's host is 127.0.0.1
    process = ComponentProcess(
        "run",
        cluster.kubeconfig,
        cluster.logs_dir / "ptol-run-uncovered.log",
        "--cert-file",
        str(cert),
        "--key-file",
        str(key),
        "--ca-file",
        str(ca),
    )
    since = process.start()
    try:
        assert process.process is not None
        code = process.process.wait(timeout=SLOW_SECONDS)
    finally:
        process.stop()
    output = process.log()[since:]
    assert code == 1, output[-2000:]
    last = output.rstrip().splitlines()[-1]
    assert re.fullmatch(
        r"ptol run: error: the serving certificate does not cover 127\.0\.0\.1, the host of "
        r"https://127\.0\.0\.1:\d+, so the API server would refuse it; add it to the certificate "
        r"\(--dns-name, or the certificate's SANs\) or register another URL",
        last,
    ), last
    found = subprocess.run(
        cluster.kubectl_argv("get", "validatingwebhookconfiguration", "preemption-toleration"),
        capture_output=True,
        text=True,
    )
    assert found.returncode != 0  # nothing was registered
