"""`ptol run --dev-cluster DIR`: the local control plane's kube-scheduler calls `ptol run` as its extender.

The scheduler of a cluster started by `ptol dev cluster up` is a detached process recorded in the
cluster's directory, so `ptol run` can restart it with the extender entry of its own URL and CA (what
config/scheduler writes for a real cluster), and restart it without the entry when it stops.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.kube.client import make_api_client
from preemption_toleration.manifests.scheduler_extender import scheduler_extender_of
from preemption_toleration.manifests.webhook_configurations import GUARD_NAME

logger = logging.getLogger("preemption_toleration.run")


def kubeconfig_server(path: str | Path) -> str | None:
    """The API server URL of a kubeconfig's current context, if the file says one."""
    try:
        config = yaml.safe_load(Path(path).read_text())
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        return str(next(c["cluster"]["server"] for c in config["clusters"] if c["name"] == context["cluster"]))
    except (OSError, yaml.YAMLError, KeyError, TypeError, StopIteration):
        return None


def attach(directory: Path, kubeconfig: str | None) -> tuple[LocalCluster, str] | str:
    """The local control plane in `directory` and the kubeconfig to use for it, or why it cannot be used."""
    cluster = LocalCluster(directory)
    if not cluster.running_components():
        return f"--dev-cluster: no local control plane runs in {directory} (start one with `ptol dev cluster up`)"
    if cluster.tied_to_starter:
        return (
            f"--dev-cluster: the control plane in {directory} belongs to the process that started it "
            "(`ptol demo` or a test session), which configures its scheduler itself"
        )
    if kubeconfig is None:
        return cluster, str(cluster.kubeconfig)
    if kubeconfig_server(kubeconfig) != cluster.server:
        return (
            f"--dev-cluster: the kubeconfig {kubeconfig} does not point at the control plane in {directory} "
            f"({cluster.server}); drop --kubeconfig (KUBECONFIG) to use that cluster's own"
        )
    return cluster, kubeconfig


async def registered_extender(kubeconfig: str) -> dict[str, Any]:
    """The extender entry for the guard configuration this process registered (its URL and CA)."""
    api = await make_api_client(kubeconfig)
    try:
        guard = await client.AdmissionregistrationV1Api(api).read_validating_webhook_configuration(GUARD_NAME)
        return scheduler_extender_of(api.sanitize_for_serialization(guard))
    finally:
        await api.close()


async def use_extender(cluster: LocalCluster, kubeconfig: str) -> None:
    entry = await registered_extender(kubeconfig)
    await asyncio.to_thread(cluster.restart_scheduler, [entry])
    logger.info(
        "local kube-scheduler restarted with this process as its extender",
        extra={"urlPrefix": entry["urlPrefix"], "config": str(cluster.directory / "scheduler-config.yaml")},
    )


async def drop_extender(cluster: LocalCluster) -> None:
    await asyncio.to_thread(cluster.restart_scheduler, [])
    logger.info("local kube-scheduler restarted without the extender")
