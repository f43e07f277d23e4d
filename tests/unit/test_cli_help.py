"""`--help` says what every command and option is for, under the name it was called by, and agrees with
docs/cli.md: a walk of the whole argparse tree, `--version`, `kubectl ptol`, and the exit codes."""

from __future__ import annotations

import argparse
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from preemption_toleration import __version__
from preemption_toleration.cli import failures
from preemption_toleration.cli.failures import program_name
from preemption_toleration.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def commands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser, str | None]]:
    """(prog, parser, its one-line help) of `parser` and every subcommand under it."""
    yield parser.prog, parser, parser.description
    for action in parser._actions:  # argparse has no public accessor for its actions
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, subparser in action.choices.items():
                yield subparser.prog, subparser, helps.get(name)
                yield from list(commands(subparser))[1:]


def options(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            yield action


COMMANDS = list(commands(build_parser()))


def test_the_walk_finds_every_command() -> None:
    found = {prog for prog, _, _ in COMMANDS}
    assert {"ptol", "ptol crd", "ptol webhook-config", "ptol explain", "ptol dev cluster up"} <= found


@pytest.mark.parametrize("prog, parser, help_text", COMMANDS, ids=[prog for prog, _, _ in COMMANDS])
def test_every_command_has_a_description_and_a_help(
    prog: str, parser: argparse.ArgumentParser, help_text: str | None
) -> None:
    assert help_text and help_text.strip(), f"`{prog}` has no help in its parent's list"
    assert parser.description and parser.description.strip(), f"`{prog} --help` has no description"


@pytest.mark.parametrize("prog, parser, help_text", COMMANDS, ids=[prog for prog, _, _ in COMMANDS])
def test_every_option_has_a_help(prog: str, parser: argparse.ArgumentParser, help_text: str | None) -> None:
    missing = [
        "/".join(action.option_strings) or action.dest
        for action in options(parser)
        if not action.help or action.help == argparse.SUPPRESS or not action.help.strip()
    ]
    assert missing == [], f"`{prog}`: options without help"


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"ptol {__version__}\n"
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == __version__


@pytest.mark.parametrize(
    "argv0, name",
    [
        ("/usr/local/bin/kubectl-ptol", "kubectl ptol"),
        ("kubectl-ptol", "kubectl ptol"),
        ("/usr/local/bin/ptol", "ptol"),
        ("/repo/preemption_toleration/__main__.py", "ptol"),  # python -m preemption_toleration
    ],
)
def test_the_program_name_follows_argv0(argv0: str, name: str) -> None:
    assert program_name(argv0) == name


def test_kubectl_ptol_help_says_kubectl_ptol() -> None:
    parser = build_parser("kubectl ptol")
    assert parser.format_help().startswith("usage: kubectl ptol ")
    explain = dict((prog, sub) for prog, sub, _ in commands(parser))["kubectl ptol explain"]
    assert explain.format_usage().startswith("usage: kubectl ptol explain ")


def _help_of(command: str, flag: str) -> str:
    parser = dict((prog, sub) for prog, sub, _ in COMMANDS)[f"ptol {command}"]
    action = next(action for action in parser._actions if flag in action.option_strings)
    return " ".join((action.help or "").split())


def test_run_states_its_operator_identity_default() -> None:
    """`ptol run`'s operator writes as ptol-run:operator where it may impersonate, else as the kubeconfig's user
    (run_cmd.run_all): its help says so, the webhook's does not."""
    assert "default ptol-run:operator" in _help_of("run", "--operator-identity")
    assert "else the kubeconfig's user" in _help_of("run", "--operator-identity")
    assert "default system:serviceaccount:preemption-toleration:operator" in _help_of("webhook", "--operator-identity")


def test_docs_list_every_exit_code() -> None:
    codes = {value for name, value in vars(failures).items() if name.startswith("EXIT_")}
    rows = re.findall(r"^\| `?(\d+)`? \|", (ROOT / "docs" / "cli.md").read_text(), re.M)
    assert codes == {int(row) for row in rows} - {0}
