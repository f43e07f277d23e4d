"""`ptol crd`: print the PreemptionTolerationPolicy CRD generated from the models."""

from __future__ import annotations

import argparse

from preemption_toleration.manifests.crd import crd_yaml


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "crd",
        help="print the PreemptionTolerationPolicy CRD (kubectl apply -f -)",
        description="Print the PreemptionTolerationPolicy CustomResourceDefinition, generated from the models, "
        "as YAML: `ptol crd | kubectl apply -f -`. Needs no cluster.",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print(crd_yaml(), end="")
    return 0
