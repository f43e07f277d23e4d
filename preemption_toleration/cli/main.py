"""Entry point of `ptol` (and `kubectl ptol`): one argparse tree, one module per command.

Each command module exposes `register(subparsers)`, which adds its parser and sets `handler`
to a function taking the parsed arguments and returning the process exit code. A failure ends the
command with one line and an exit code of failures.py, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import preemption_toleration
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
from preemption_toleration.cli.failures import (
    EXIT_INTERRUPTED,
    EXIT_STDOUT_CLOSED,
    TRACEBACK_ENV,
    explained,
    program_name,
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


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog or program_name(),
        description="Victim-side preemption policy for Kubernetes (PreemptionToleration).",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {preemption_toleration.__version__}", help="print the version"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMAND_MODULES:
        module.register(subparsers)
    describe_from_help(parser)
    return parser


def describe_from_help(parser: argparse.ArgumentParser) -> None:
    """Gives each subcommand without a description its one-line help as one, so `COMMAND --help` says
    what it does."""
    for action in parser._actions:  # argparse has no public accessor for its actions
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, subparser in action.choices.items():
            help_text = helps.get(name)
            if not subparser.description and help_text:
                subparser.description = help_text[0].upper() + help_text[1:] + "."
            describe_from_help(subparser)


def chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the deepest subcommand `args` chose (`ptol dev cluster up`'s for `ptol dev cluster up`)."""
    for action in parser._actions:  # argparse has no public accessor for its actions
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest, None)
            if name in action.choices:
                return chosen_parser(action.choices[name], args)
    return parser


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """`parser.parse_args(argv)`, but an unknown argument is reported by the subcommand it was given to, with
    that subcommand's usage (argparse leaves it to the top-level parser, which shows `usage: ptol COMMAND`)."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        chosen_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except BrokenPipeError:
        _stdout_to_devnull()
        return EXIT_STDOUT_CLOSED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parse(parser, argv)
    except SystemExit:
        sys.stdout.flush()  # --help and --version print, then exit: a closed pipe shows here
        raise
    try:
        code = int(args.handler(args))
    except BrokenPipeError:
        raise
    except Exception as error:  # every failure ends in one line and an exit code
        if os.environ.get(TRACEBACK_ENV):
            raise
        message, code = explained(error)
        print(f"{parser.prog} {args.command}: error: {message}", file=sys.stderr)
        return code
    sys.stdout.flush()  # output that fit in the buffer meets a closed pipe here, not at exit
    return code


def _stdout_to_devnull() -> None:
    """After a closed pipe: what is left in stdout's buffer goes nowhere, so that flushing it at exit does
    not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout without a file descriptor (tests capture it)
        pass


if __name__ == "__main__":
    sys.exit(main())
