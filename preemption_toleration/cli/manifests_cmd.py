"""`ptol webhook-config` and `ptol admission-policy`: print the webhook configurations for an in-cluster
install, and the ValidatingAdmissionPolicy that holds the PriorityClass rules CEL can express (both built by
the `manifests` package)."""

from __future__ import annotations

import argparse

from preemption_toleration.cli.values import non_empty, pod_priority
from preemption_toleration.guard.verdicts import DEFAULT_PREEMPTOR_IDENTITIES
from preemption_toleration.manifests.admission_policy import admission_policy_yaml
from preemption_toleration.manifests.webhook_configurations import (
    DEFAULT_NAMESPACE,
    DEFAULT_SERVICE,
    service_manifests_yaml,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "webhook-config", help="print the webhook configurations that call the in-cluster Service"
    )
    parser.add_argument(
        "--namespace", default=DEFAULT_NAMESPACE, help=f"the webhook Service's namespace (default {DEFAULT_NAMESPACE})"
    )
    parser.add_argument("--service", default=DEFAULT_SERVICE, help=f"the webhook's Service (default {DEFAULT_SERVICE})")
    parser.add_argument(
        "--preemptor-identity",
        action="append",
        dest="preemptor_identities",
        type=non_empty,
        metavar="USER",
        help="whose deletions are preemptions, for the guard's matchConditions (the webhook's own "
        f"--preemptor-identity list); repeatable (default {', '.join(DEFAULT_PREEMPTOR_IDENTITIES)})",
    )
    parser.add_argument(
        "--eviction-preemptor-priority",
        type=pod_priority,
        metavar="N",
        help="the webhook's own --eviction-preemptor-priority: when given, the guard's matchConditions send it "
        "every Eviction, not only those that name a preemptor (default: only those)",
    )
    parser.set_defaults(handler=run)
    policy_parser = subparsers.add_parser(
        "admission-policy",
        help="print the ValidatingAdmissionPolicy and binding that refuse bad PriorityClass annotations "
        "without the webhook",
    )
    policy_parser.set_defaults(handler=run_admission_policy)


def run(args: argparse.Namespace) -> int:
    identities = args.preemptor_identities or DEFAULT_PREEMPTOR_IDENTITIES
    every_eviction = args.eviction_preemptor_priority is not None
    print(service_manifests_yaml(args.namespace, args.service, identities, every_eviction), end="")
    return 0


def run_admission_policy(args: argparse.Namespace) -> int:
    print(admission_policy_yaml(), end="")
    return 0
