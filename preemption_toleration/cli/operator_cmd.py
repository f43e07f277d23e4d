"""`ptol operator`: run the operator that reconciles policies into PriorityClass annotations."""

from __future__ import annotations

import argparse

from preemption_toleration.cli.failures import require_cluster_configuration
from preemption_toleration.cli.options import (
    add_kubeconfig_argument,
    add_logging_arguments,
    env_option,
    host_and_port,
    non_empty,
    peering_priority,
    resync_seconds,
    url,
)
from preemption_toleration.cli.signals import run_until_signalled
from preemption_toleration.governance.views import FIELD_MANAGER
from preemption_toleration.logs import configure_logging


def add_operator_arguments(parser: argparse.ArgumentParser) -> None:
    """The operator's options other than --kubeconfig (shared with `ptol run`)."""
    env_option(
        parser,
        "--resync-seconds",
        env="PTOL_RESYNC_SECONDS",
        default="60",
        type=resync_seconds,
        help="how often everything is re-checked and failed writes retried",
    )
    env_option(
        parser,
        "--metrics",
        env="PTOL_OPERATOR_METRICS",
        type=host_and_port,
        metavar="HOST:PORT",
        help="serve the operator's Prometheus metrics on http://HOST:PORT/metrics, e.g. 0.0.0.0:8081; default: off",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "operator",
        help="run the operator (policies -> PriorityClass annotations)",
        description="Reconcile every PreemptionTolerationPolicy into the annotations of the PriorityClasses "
        "it governs. Each flag has an environment-variable equivalent, shown in brackets.",
    )
    add_kubeconfig_argument(parser)
    env_option(
        parser,
        "--peering",
        env="PTOL_PEERING",
        type=non_empty,
        metavar="NAME",
        help="kopf peering name for running several replicas, one active; default: standalone (run one replica only)",
    )
    env_option(
        parser,
        "--priority",
        env="PTOL_PEERING_PRIORITY",
        type=peering_priority,
        help="peering priority, unique per replica: the highest one is active; replicas with equal "
        "priorities all pause, so the default is a random one",
    )
    add_operator_arguments(parser)
    env_option(
        parser,
        "--field-manager",
        env="PTOL_FIELD_MANAGER",
        default=FIELD_MANAGER,
        type=non_empty,
        help="server-side apply field manager",
    )
    env_option(
        parser,
        "--liveness",
        env="PTOL_OPERATOR_LIVENESS",
        type=url("http"),
        metavar="URL",
        help="kopf liveness endpoint, e.g. http://0.0.0.0:8080/healthz; default: off",
    )
    add_logging_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from preemption_toleration.operator.handlers import OperatorConfig
    from preemption_toleration.operator.runner import run_operator

    configure_logging(args.log_level, args.log_format)
    require_cluster_configuration(args.kubeconfig)  # else kopf's login would retry it every minute, forever
    config = OperatorConfig(
        kubeconfig=args.kubeconfig,
        field_manager=args.field_manager,
        resync_seconds=args.resync_seconds,
    )
    if args.priority is not None:
        config.peering_priority = args.priority
    return run_until_signalled(
        lambda stop: run_operator(
            config, stop, peering_name=args.peering, liveness_endpoint=args.liveness, metrics_address=args.metrics
        )
    )
