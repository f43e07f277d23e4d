"""`ptol operator`: run the operator that reconciles policies into PriorityClass annotations."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets

from preemption_toleration.governance.views import FIELD_MANAGER
from preemption_toleration.logs import configure_logging


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "operator",
        help="run the operator (policies -> PriorityClass annotations)",
        description="Reconcile every PreemptionTolerationPolicy into the annotations of the PriorityClasses "
        "it governs. Each flag has an environment-variable equivalent, shown in brackets.",
    )
    parser.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG"),
        help="kubeconfig file; default: $KUBECONFIG, ~/.kube/config, else the in-cluster service account",
    )
    parser.add_argument(
        "--peering",
        default=os.environ.get("PTOL_PEERING"),
        metavar="NAME",
        help="kopf peering name for running several replicas, one active [PTOL_PEERING]; "
        "default: standalone (run one replica only)",
    )
    parser.add_argument(
        "--priority",
        type=int,
        default=_env_int("PTOL_PEERING_PRIORITY", 0) or None,
        help="peering priority, unique per replica: the highest one is active; replicas with equal "
        "priorities all pause, so the default is a random one [PTOL_PEERING_PRIORITY]",
    )
    parser.add_argument(
        "--resync-seconds",
        type=float,
        default=float(os.environ.get("PTOL_RESYNC_SECONDS", "60")),
        help="how often everything is re-checked and failed writes retried [PTOL_RESYNC_SECONDS] (default 60)",
    )
    parser.add_argument(
        "--field-manager",
        default=os.environ.get("PTOL_FIELD_MANAGER", FIELD_MANAGER),
        help=f"server-side apply field manager [PTOL_FIELD_MANAGER] (default {FIELD_MANAGER})",
    )
    parser.add_argument(
        "--liveness",
        default=os.environ.get("PTOL_OPERATOR_LIVENESS"),
        metavar="URL",
        help="kopf liveness endpoint, e.g. http://0.0.0.0:8080/healthz [PTOL_OPERATOR_LIVENESS]",
    )
    parser.add_argument(
        "--metrics",
        default=os.environ.get("PTOL_OPERATOR_METRICS"),
        metavar="HOST:PORT",
        help="serve Prometheus metrics on http://HOST:PORT/metrics, e.g. 0.0.0.0:8081 [PTOL_OPERATOR_METRICS]",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from preemption_toleration.operator.handlers import OperatorConfig
    from preemption_toleration.operator.runner import run_operator

    configure_logging()
    config = OperatorConfig(
        kubeconfig=args.kubeconfig,
        field_manager=args.field_manager,
        resync_seconds=args.resync_seconds,
        peering_priority=args.priority if args.priority is not None else secrets.randbelow(10**9) + 1,
    )
    asyncio.run(run_operator(config, peering_name=args.peering, liveness_endpoint=args.liveness,
                             metrics_address=args.metrics))
    return 0
