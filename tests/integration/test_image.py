"""The image users install: the repository's Dockerfile built with podman, and run as the chart runs it.

The chart is installed with helm, naming the image just built. Its two Deployments' containers then run
from that image under podman, with the Deployments' arguments, their securityContext (read-only root, UID
65532, every capability dropped) and a token of the chart's ServiceAccounts, on the host's network: the
API server reaches the webhook's Service through the test bed's service proxy, as kube-proxy would.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster import image as images
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.devcluster.processes import free_port
from tests.integration.chart import (
    SERVICE,
    clean_slate,
    container_args,
    install_release,
    live,
    started_and_answering,
    stopped_and_removed,
    token_kubeconfig,
)
from tests.integration.components import INSTALL_NAMESPACE, ROOT
from tests.integration.conftest import Kubectl
from tests.integration.helpers import SLOW_SECONDS, unique_name, with_value
from tests.integration.objects import MIN, TOL, apply_class_and_policy, wait_annotations

pytestmark = [pytest.mark.integration]
__all__ = ["clean_slate"]  # a fixture

OPERATOR = "preemption-toleration-operator"
KUBECONFIG_INSIDE = "/var/run/ptol/kubeconfig"


@pytest.fixture(scope="module")
def image() -> str:
    missing = images.image_tools_missing()
    assert not missing, f"{', '.join(missing)} not on PATH: scripts/image-tools.sh installs them"
    return images.build_image(ROOT)


def run_as(deployment: dict[str, Any]) -> str:
    """The container's user as the Deployment sets it, after checking the rest of its securityContext is
    what `images.run_argv` gives every container: a read-only root and no capability."""
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    context = container["securityContext"]
    assert context["readOnlyRootFilesystem"] is True and context["capabilities"] == {"drop": ["ALL"]}, context
    assert context["allowPrivilegeEscalation"] is False, context
    user = f"{pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}"
    assert user == images.RUN_AS, user
    return user


@contextlib.contextmanager
def containers() -> Iterator[list[str]]:
    """The names of the containers a test starts; each removed afterwards, however the test ended."""
    names: list[str] = []
    try:
        yield names
    finally:
        for name in names:
            images.podman("rm", "--force", "--ignore", name, check=False)


@pytest.mark.asyncio(loop_scope="session")
async def test_the_image_serves_the_chart_s_webhooks_and_runs_its_operator(
    image: str, api: ApiClient, cluster: LocalCluster, kubectl: Kubectl, clean_slate: None, tmp_path: Path
) -> None:
    repository, _, tag = image.rpartition(":")
    installed = install_release(
        cluster,
        "--set",
        f"image.repository={repository}",
        "--set",
        f"image.tag={tag}",
    )
    assert installed.returncode == 0, installed.stderr
    port, health, metrics, webhook_metrics = free_port(), free_port(), free_port(), free_port()

    def in_container(
        deployment: str, names: list[str], *override: tuple[str, str], extra: tuple[str, ...] = ()
    ) -> ComponentProcess:
        live_deployment = live(kubectl, "deployment", deployment, "-n", INSTALL_NAMESPACE)
        [container] = live_deployment["spec"]["template"]["spec"]["containers"]
        assert container["image"] == image, container["image"]
        run_as(live_deployment)
        command, *args = container_args(kubectl, deployment)
        for flag, value in override:
            args = with_value(args, flag, value)
        args += extra
        kubeconfig = token_kubeconfig(cluster, kubectl, command, tmp_path / f"{command}.kubeconfig")
        kubeconfig.chmod(0o644)  # readable by the container's user, as a mounted token is
        name = unique_name(f"ptol-{command}")
        names.append(name)
        launcher = images.run_argv(image, name, [(kubeconfig, KUBECONFIG_INSIDE)], {"PTOL_LOG_LEVEL": "INFO"})
        environment = {"CONTAINERS_CONF": str(images.containers_conf())}
        log = tmp_path / f"{command}.log"
        return ComponentProcess(command, KUBECONFIG_INSIDE, log, *args, launcher=launcher, env=environment)

    pc, ptp, bad = unique_name("image-class"), unique_name("image-policy"), unique_name("image-bad")
    with containers() as names:
        webhook = in_container(
            SERVICE,
            names,
            ("--metrics-address", f"127.0.0.1:{webhook_metrics}"),
            extra=("--host", "127.0.0.1", "--port", str(port)),
        )
        operator = in_container(
            OPERATOR,
            names,
            ("--liveness", f"http://127.0.0.1:{health}/healthz"),
            ("--metrics", f"127.0.0.1:{metrics}"),
            extra=("--resync-seconds", "3"),
        )
        service = live(kubectl, "service", SERVICE, "-n", INSTALL_NAMESPACE)
        cluster.route_service(service["spec"]["clusterIP"], 443, f"127.0.0.1:{port}")
        try:
            # a bad PriorityClass, refused by the webhook in the container, with its message
            await started_and_answering(webhook, operator, kubectl, bad, SLOW_SECONDS)

            # the operator in the container annotates the policy's class
            apply_class_and_policy(kubectl, pc, ptp)
            await wait_annotations(
                api, pc, {MIN: "10000", TOL: "-1"}, SLOW_SECONDS, "the class annotated by the operator in the container"
            )
            for process in (webhook, operator):
                assert "Traceback" not in process.log(), process.log()[-3000:]
                assert "forbidden" not in process.log().lower(), process.log()[-3000:]
        finally:
            stopped_and_removed(kubectl, (operator, webhook), ptp, pc, bad)


def test_the_image_runs_read_only_as_an_unprivileged_user(image: str) -> None:
    """What a pod of the chart gets: `ptol` as UID 65532, its package not writable, /tmp writable (the
    chart mounts an emptyDir there), and no source tree left from the build stage."""
    argv = images.run_argv(image, unique_name("ptol-probe"), [], {})
    argv[argv.index(image) : argv.index(image)] = ["--entrypoint", "python3"]
    probe = (
        "import os, sys; import preemption_toleration as p; "
        "print(os.getuid(), os.getgid(), p.__file__, os.access('/opt/ptol', os.W_OK), "
        "os.access('/tmp', os.W_OK), os.path.exists('/src'))"
    )
    environment = {"CONTAINERS_CONF": str(images.containers_conf())}
    result = subprocess.run(
        [*argv, "-c", probe], capture_output=True, text=True, timeout=SLOW_SECONDS, env={**os.environ, **environment}
    )
    assert result.returncode == 0, result.stderr
    uid, gid, where, package_writable, tmp_writable, sources = result.stdout.split()
    assert (uid, gid) == ("65532", "65532")
    assert where.startswith("/opt/ptol/lib/"), where
    assert (package_writable, tmp_writable, sources) == ("False", "True", "False")
    version = subprocess.run(
        [*images.run_argv(image, unique_name("ptol-version"), [], {}), "--version"],
        capture_output=True,
        text=True,
        timeout=SLOW_SECONDS,
        env={**os.environ, **environment},
    )
    assert version.returncode == 0 and version.stdout.startswith("ptol "), version
