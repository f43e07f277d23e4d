"""`ptol operator`: run the operator that reconciles policies into PriorityClass annotations."""

from __future__ import annotations

import argparse

from preemption_toleration.cli.failures import require_cluster_configuration
from preemption_toleration.cli.options import (
    KUBECONFIG,
    LOGGING_OPTIONS,
    Option,
    add_command,
    flag_value,
    settings_values,
    switch,
)
from preemption_toleration.cli.signals import run_until_signalled
from preemption_toleration.cli.values import (
    host_and_port,
    non_empty,
    peering_priority,
    resync_seconds,
    url,
)
from preemption_toleration.logs import configure_logging
from preemption_toleration.operator.config import OPERATOR_DEFAULTS

RESYNC_SECONDS = Option(
    "--resync-seconds",
    env="PTOL_RESYNC_SECONDS",
    default=flag_value(OPERATOR_DEFAULTS.resync_seconds),
    type=resync_seconds,
    help="how often everything is re-checked (failed writes are retried 10 s after they fail)",
    shown="S",
    meaning="how often everything is re-checked (1 to 86400); failed writes are retried 10 s after they fail",
)
METRICS = Option(
    "--metrics",
    env="PTOL_OPERATOR_METRICS",
    type=host_and_port,
    metavar="HOST:PORT",
    help="serve the operator's Prometheus metrics on http://HOST:PORT/metrics, e.g. 0.0.0.0:8081; default: off",
    setting="metrics_address",
    meaning="Prometheus `/metrics`, e.g. `0.0.0.0:8081`",
)
PEERING = Option(
    "--peering",
    env="PTOL_PEERING",
    type=non_empty,
    metavar="NAME",
    help="kopf peering name for running several replicas, one active; default: standalone (run one replica only)",
    setting="peering_name",
    table_default="standalone",
    meaning="kopf peering for several replicas, one active",
)
PEERING_PRIORITY = Option(
    "--priority",
    env="PTOL_PEERING_PRIORITY",
    type=peering_priority,
    help="peering priority, unique per replica: the highest one is active; replicas with equal "
    "priorities all pause, so the default is a random one",
    setting="peering_priority",
    shown="N",
    table_default="random",
    meaning="peering priority; the highest live replica is active",
)
FIELD_MANAGER_OPTION = Option(
    "--field-manager",
    env="PTOL_FIELD_MANAGER",
    default=OPERATOR_DEFAULTS.field_manager,
    type=non_empty,
    help="server-side apply field manager",
    setting="field_manager",
    shown="NAME",
)
KUEUE = switch(
    "--kueue",
    env="PTOL_KUEUE",
    default=OPERATOR_DEFAULTS.kueue,
    help="also govern Kueue's WorkloadPriorityClasses, named by policies of priorityClassKind "
    "WorkloadPriorityClass; needs the rights to list, watch and patch them",
    meaning="also govern Kueue's WorkloadPriorityClasses: policies of `priorityClassKind: WorkloadPriorityClass` "
    "are applied to their annotations, which the webhook server's `--kueue on` reads; needs the rights to list, "
    "watch and patch `workloadpriorityclasses.kueue.x-k8s.io` ([Kueue](tasks/kueue.md))",
)
LIVENESS = Option(
    "--liveness",
    env="PTOL_OPERATOR_LIVENESS",
    type=url("http"),
    metavar="URL",
    help="kopf liveness endpoint, e.g. http://0.0.0.0:8080/healthz; default: off",
    setting="liveness_endpoint",
    meaning="kopf liveness endpoint, e.g. `http://0.0.0.0:8080/healthz`",
)

# the operator's options that `ptol run` shares
SHARED_WITH_RUN = (RESYNC_SECONDS, METRICS)
# the fields of OperatorConfig, and run_operator's other arguments
CONFIG_OPTIONS = (KUBECONFIG, PEERING_PRIORITY, RESYNC_SECONDS, FIELD_MANAGER_OPTION, KUEUE)
RUN_OPTIONS = (PEERING, LIVENESS, METRICS)


def operator_command_options() -> tuple[Option, ...]:
    """Every option of `ptol operator`, in the order of its help."""
    return (
        KUBECONFIG,
        PEERING,
        PEERING_PRIORITY,
        *SHARED_WITH_RUN,
        FIELD_MANAGER_OPTION,
        KUEUE,
        LIVENESS,
        *LOGGING_OPTIONS,
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_command(
        subparsers,
        "operator",
        operator_command_options(),
        run,
        help="run the operator (policies -> PriorityClass annotations)",
        description="Reconcile every PreemptionTolerationPolicy into the annotations of the PriorityClasses "
        "it governs. Each flag has an environment-variable equivalent, shown in brackets.",
    )


def run(args: argparse.Namespace) -> int:
    from preemption_toleration.operator.config import OperatorConfig
    from preemption_toleration.operator.runner import run_operator

    configure_logging(args.log_level, args.log_format)
    require_cluster_configuration(args.kubeconfig)  # else kopf's login would retry it every minute, forever
    config = OperatorConfig(**settings_values(args, CONFIG_OPTIONS))
    return run_until_signalled(lambda stop: run_operator(config, stop, **settings_values(args, RUN_OPTIONS)))
