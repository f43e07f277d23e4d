"""Entry point of `ptol` (and `kubectl ptol`): one argparse tree, one module per command.

Each command module exposes `register(subparsers)`, which adds its parser and sets `handler`
to a function taking the parsed arguments and returning the process exit code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from preemption_toleration.cli import (
    crd_cmd,
    demo_cmd,
    dev_cmd,
    explain_cmd,
    manifests_cmd,
    operator_cmd,
    run_cmd,
    validate_cmd,
    webhook_cmd,
)

COMMAND_MODULES = [
    demo_cmd,
    validate_cmd,
    explain_cmd,
    crd_cmd,
    run_cmd,
    operator_cmd,
    webhook_cmd,
    manifests_cmd,
    dev_cmd,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptol",
        description="Victim-side preemption policy for Kubernetes (PreemptionToleration).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
