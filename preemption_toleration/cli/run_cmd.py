"""`ptol run`: every component in one process (operator and webhooks), for a local control plane."""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from preemption_toleration.cli.failures import EXIT_USAGE, refused, require_cluster_configuration
from preemption_toleration.cli.operator_cmd import SHARED_WITH_RUN
from preemption_toleration.cli.options import LOGGING_OPTIONS, Option, add_command
from preemption_toleration.cli.run_replicas import replica_count
from preemption_toleration.cli.signals import run_until_signalled
from preemption_toleration.cli.values import non_empty
from preemption_toleration.cli.webhook_cmd import prepare, stopped_on_webhook_error
from preemption_toleration.cli.webhook_options import (
    DEFAULT_OPERATOR_IDENTITY,
    RUN_DEFAULTS,
    server_options,
    settings_from,
)
from preemption_toleration.kube.identity import RUN_OPERATOR_USER
from preemption_toleration.webhooks.settings import local_run_defaults

DEV_CLUSTER = Option(
    "--dev-cluster",
    env="PTOL_DEV_CLUSTER",
    type=non_empty,
    metavar="DIR",
    help="the local control plane of `ptol dev cluster up --dir DIR`: use its kubeconfig, and restart "
    "its kube-scheduler with this process as its extender (restored on exit)",
)

WEBHOOK_REPLICAS = Option(
    "--webhook-replicas",
    env="PTOL_WEBHOOK_REPLICAS",
    type=replica_count,
    default="1",
    metavar="N",
    help="run the webhook server as N processes (1 to 16), each with its own caches and memory, behind the one address "
    "the configurations call, its connections spread over them in turn as kube-proxy spreads a Service's: the "
    "chart's replicas on this machine (with N > 1, --metrics-address PORT gives replica i the port PORT + i)",
)


def run_command_options() -> tuple[Option, ...]:
    """Every option of `ptol run`, in the order of its help: the webhook server's, with defaults of its own,
    the operator's it shares, and --dev-cluster."""
    server = server_options(
        RUN_DEFAULTS,
        operator_identity_default=f"{RUN_OPERATOR_USER}, whom the operator acts as where the kubeconfig's user may "
        "impersonate (an admin); else the kubeconfig's user, the CN of its client certificate (for a kubeconfig "
        f"with a token, {DEFAULT_OPERATOR_IDENTITY}, so name the token's user here)",
    )
    return (*server, WEBHOOK_REPLICAS, *SHARED_WITH_RUN, DEV_CLUSTER, *LOGGING_OPTIONS)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_command(
        subparsers,
        "run",
        run_command_options(),
        run,
        help="run the operator and the webhooks in one process (a control plane on this machine)",
        description="Run the operator and the webhook server in one process and register webhook "
        "configurations that call it at https://127.0.0.1 (removed on exit): for a control plane on this "
        "machine, such as `ptol dev cluster up`'s (--dev-cluster). A remote cluster's API server cannot call "
        "this machine's 127.0.0.1: for a real cluster, install the Helm chart or the manifests under config/ "
        "instead (docs/install.md).",
    )


if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient

    from preemption_toleration.devcluster import LocalCluster

logger = logging.getLogger("preemption_toleration.run")


async def run_all(args: argparse.Namespace, stop: asyncio.Event, local: LocalCluster | None = None) -> None:
    from preemption_toleration.kube.client import make_api_client
    from preemption_toleration.operator.config import OperatorConfig
    from preemption_toleration.operator.runner import run_operator
    from preemption_toleration.webhooks.runner import run_webhook

    settings = settings_from(args, local_run_defaults())
    settings.register_url = f"https://127.0.0.1:{args.port}"
    impersonate: str | None = None
    if not args.operator_identities:
        api = await make_api_client(args.kubeconfig)
        try:
            impersonate, identity = await _operator_identity(api)
        finally:
            await api.close()
        if identity:
            settings.operator_identities = [identity]
    webhook_ready = asyncio.Event()
    if args.webhook_replicas > 1:
        from preemption_toleration.cli.run_replicas import run_replicas

        replicas = run_replicas(settings, args.webhook_replicas, stop, webhook_ready, (args.log_level, args.log_format))
        webhook = asyncio.create_task(replicas)
    else:
        webhook = asyncio.create_task(run_webhook(settings, stop, webhook_ready))
    config = OperatorConfig(
        kubeconfig=args.kubeconfig, resync_seconds=args.resync_seconds, impersonate=impersonate, kueue=settings.kueue
    )
    # kopf runs in a thread and event loop of its own (operator/supervision.py): whichever part ends first
    # ends them all.
    operator = asyncio.create_task(run_operator(config, stop, metrics_address=args.metrics))
    stopped = asyncio.create_task(stop.wait())
    scheduler = asyncio.create_task(_configure_scheduler(local, args.kubeconfig, webhook_ready, stop))
    await asyncio.wait({webhook, operator, stopped, scheduler}, return_when=asyncio.FIRST_COMPLETED)
    stop.set()
    results = await asyncio.gather(webhook, operator, stopped, scheduler, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result


async def _operator_identity(api: ApiClient) -> tuple[str | None, str | None]:
    """Whom the operator below writes as, and whom the webhooks take for the operator. Where the kubeconfig's
    user may impersonate (an admin of a local control plane), the operator acts as a user of its own, so that
    the same admin's hand edit of a managed annotation is refused, as in a cluster. Else it writes as the
    kubeconfig's user (the CN of its client certificate), whose hand edits then pass and are put back."""
    from preemption_toleration.kube.client import API_ERRORS
    from preemption_toleration.kube.identity import (
        RUN_OPERATOR_GROUP,
        RUN_OPERATOR_USER,
        client_certificate_user,
        may_impersonate,
    )

    try:
        if await may_impersonate(api, RUN_OPERATOR_USER, RUN_OPERATOR_GROUP):
            return RUN_OPERATOR_USER, RUN_OPERATOR_USER
    except API_ERRORS as error:
        logger.warning("cannot ask whether the kubeconfig's user may impersonate", extra={"problem": repr(error)})
    user = client_certificate_user(api)
    logger.warning(
        "the operator writes as the kubeconfig's user, so that user's hand edits of managed annotations pass "
        "(and are put back): it may not impersonate",
        extra={"user": user},
    )
    return None, user


async def _configure_scheduler(
    local: LocalCluster | None, kubeconfig: str, webhook_ready: asyncio.Event, stop: asyncio.Event
) -> None:
    """With --dev-cluster: once the webhooks are registered, the local scheduler uses our extender until
    we stop; then it is restarted without it. The entry is ignorable, so a call in between, to a closed
    port, only leaves the scheduler's own choice."""
    if local is None:
        await stop.wait()
        return
    from preemption_toleration.cli.local_scheduler import drop_extender, use_extender

    ready = asyncio.create_task(webhook_ready.wait())
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({ready, stopped}, return_when=asyncio.FIRST_COMPLETED)
    for task in (ready, stopped):
        task.cancel()
    if stop.is_set():
        return
    try:
        await use_extender(local, kubeconfig)
        await stop.wait()
    finally:
        await drop_extender(local)


def run(args: argparse.Namespace) -> int:
    if not prepare(args, "run"):
        return EXIT_USAGE
    local = None
    if args.dev_cluster:
        from preemption_toleration.cli.local_scheduler import attach

        if args.guard == "off":
            return refused(
                "run",
                "--dev-cluster needs the guard (--guard enforce or audit): its server is the scheduler's extender",
            )
        if args.extender == "off":
            return refused(
                "run",
                "--dev-cluster needs the extender endpoint (--extender on): the scheduler of the local control "
                "plane calls it",
            )

        attached = attach(Path(args.dev_cluster), args.kubeconfig)
        if isinstance(attached, str):
            return refused("run", attached)
        local, args.kubeconfig = attached
    require_cluster_configuration(args.kubeconfig)
    return stopped_on_webhook_error("run", lambda: run_until_signalled(lambda stop: run_all(args, stop, local)))
