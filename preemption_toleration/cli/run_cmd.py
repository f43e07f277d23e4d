"""`ptol run`: every component in one process (operator and webhooks), for a local control plane."""

from __future__ import annotations

import argparse
import asyncio

from preemption_toleration.cli.signals import run_until_signalled
from preemption_toleration.cli.operator_cmd import add_operator_arguments
from preemption_toleration.cli.options import add_logging_arguments
from preemption_toleration.cli.webhook_cmd import add_webhook_arguments, prepare, settings_from


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="run the operator and the webhooks in one process (local control plane)",
        description="Run the operator and the webhook server in one process and register webhook "
        "configurations that call it on this machine (removed on exit). For a real cluster, install the "
        "manifests under config/ instead.")
    add_webhook_arguments(parser, host="127.0.0.1", port="0")
    add_operator_arguments(parser)
    add_logging_arguments(parser)
    parser.set_defaults(handler=run)


async def run_all(args: argparse.Namespace, stop: asyncio.Event) -> None:
    from preemption_toleration.kube.client import make_api_client
    from preemption_toleration.kube.identity import client_certificate_user
    from preemption_toleration.operator.handlers import OperatorConfig
    from preemption_toleration.operator.runner import run_operator
    from preemption_toleration.webhooks.runner import run_webhook

    settings = settings_from(args)
    settings.register_url = f"https://127.0.0.1:{args.port}"
    api = await make_api_client(args.kubeconfig)
    user = client_certificate_user(api)
    await api.close()
    if user and not args.operator_identities:
        settings.operator_identities = [user]  # the operator below writes as this kubeconfig's user
    operator_stop = asyncio.Event()
    webhook_ready = asyncio.Event()
    webhook = asyncio.create_task(run_webhook(settings, stop, webhook_ready))
    config = OperatorConfig(kubeconfig=args.kubeconfig, resync_seconds=args.resync_seconds)
    operator = asyncio.create_task(run_operator(config, stop_flag=operator_stop, metrics_address=args.metrics))
    # kopf installs its own SIGINT/SIGTERM handlers: whichever part ends first ends them all.
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({webhook, operator, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stop.set()
    operator_stop.set()
    results = await asyncio.gather(webhook, operator, stopped, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result


def run(args: argparse.Namespace) -> int:
    if not prepare(args, "run"):
        return 2
    return run_until_signalled(lambda stop: run_all(args, stop))
