"""Flags and their environment variables: precedence, checks with clear errors, and the tables of the docs."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest

from preemption_toleration import pki
from preemption_toleration.cli.main import build_parser, main
from preemption_toleration.cli.operator_cmd import CONFIG_OPTIONS
from preemption_toleration.cli.option_table import configuration_tables, with_tables
from preemption_toleration.cli.options import env_vars_of, flag_value, options_of, settings_values
from preemption_toleration.cli.webhook_cmd import tls_problem
from preemption_toleration.cli.webhook_options import REGISTRATION_OPTIONS, server_options, settings_from
from preemption_toleration.operator.config import OperatorConfig
from preemption_toleration.webhooks.settings import WebhookSettings, local_run_defaults

# The option tables (docs/configuration.md) and the command reference (docs/cli.md: ptol run's own options)
REFERENCE = [Path(__file__).resolve().parents[2] / "docs" / page for page in ("configuration.md", "cli.md")]
COMPONENTS = ["operator", "webhook", "run"]


def defaults_of(parser: argparse.ArgumentParser) -> dict[str, str]:
    return {
        action.option_strings[-1]: action.default
        for action in parser._actions
        if action.option_strings and isinstance(action.default, str)
    }


def subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise LookupError(name)


def all_variables() -> set[str]:
    parser = build_parser()
    return {variable for command in COMPONENTS for variable in env_vars_of(subcommand(parser, command)).values()}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases start from no variable set, whatever the shell running the tests exports."""
    for variable in all_variables():
        monkeypatch.delenv(variable, raising=False)


def parse(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], argv: list[str]) -> argparse.Namespace:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return build_parser().parse_args(argv)


@pytest.mark.parametrize(
    "rule, env, argv, attribute, expected",
    [
        ("default when neither flag nor variable", {}, ["webhook"], "port", 8443),
        ("variable when no flag", {"PTOL_WEBHOOK_PORT": "9443"}, ["webhook"], "port", 9443),
        ("flag wins over variable", {"PTOL_WEBHOOK_PORT": "9443"}, ["webhook", "--port", "10443"], "port", 10443),
        ("ptol run has its own default port", {}, ["run"], "port", 0),
        ("ptol run reads the same variable", {"PTOL_WEBHOOK_PORT": "9443"}, ["run"], "port", 9443),
        ("empty variable means unset", {"PTOL_WEBHOOK_PORT": ""}, ["webhook"], "port", 8443),
        ("seconds are a float", {"PTOL_RESYNC_SECONDS": "2.5"}, ["operator"], "resync_seconds", 2.5),
        ("the guard holds an immediate retry 1 s by default", {}, ["webhook"], "retry_hold_seconds", 1.0),
        ("a hold of 0 answers at once", {"PTOL_RETRY_HOLD_SECONDS": "0"}, ["run"], "retry_hold_seconds", 0.0),
        ("guard mode from the variable", {"PTOL_GUARD": "audit"}, ["webhook"], "guard", "audit"),
        ("the extender endpoint is served by default", {}, ["webhook"], "extender", "on"),
        ("the extender endpoint off by the variable", {"PTOL_EXTENDER": "off"}, ["run"], "extender", "off"),
        (
            "list from a comma-separated variable",
            {"PTOL_OPERATOR_IDENTITIES": "a, b,,"},
            ["webhook"],
            "operator_identities",
            ["a", "b"],
        ),
        (
            "list flags replace the variable's list",
            {"PTOL_OPERATOR_IDENTITIES": "a,b"},
            ["webhook", "--operator-identity", "c", "--operator-identity", "d"],
            "operator_identities",
            ["c", "d"],
        ),
        (
            "dns names have a variable",
            {"PTOL_WEBHOOK_DNS_NAMES": "webhook.example,localhost"},
            ["webhook"],
            "dns_names",
            ["webhook.example", "localhost"],
        ),
        ("unset list is None (the component's default applies)", {}, ["webhook"], "preemptor_identities", None),
        ("log level in any case", {"PTOL_LOG_LEVEL": "debug"}, ["run"], "log_level", "DEBUG"),
        ("WARN is WARNING", {"PTOL_LOG_LEVEL": "warn"}, ["operator"], "log_level", "WARNING"),
        ("log format in any case", {"PTOL_LOG_FORMAT": "JSON"}, ["webhook"], "log_format", "json"),
        ("peering priority", {"PTOL_PEERING_PRIORITY": "7"}, ["operator"], "priority", 7),
        ("eviction preemptor priority unset: off", {}, ["webhook"], "eviction_preemptor_priority", None),
        (
            "eviction preemptor priority from the variable",
            {"PTOL_EVICTION_PREEMPTOR_PRIORITY": "9000"},
            ["run"],
            "eviction_preemptor_priority",
            9000,
        ),
        (
            "eviction preemptor priority: the flag wins, negative allowed",
            {"PTOL_EVICTION_PREEMPTOR_PRIORITY": "9000"},
            ["webhook", "--eviction-preemptor-priority", "-5"],
            "eviction_preemptor_priority",
            -5,
        ),
        ("unset peering priority is random later", {}, ["operator"], "priority", None),
        (
            "operator metrics in ptol run",
            {"PTOL_OPERATOR_METRICS": "127.0.0.1:9100"},
            ["run"],
            "metrics",
            "127.0.0.1:9100",
        ),
    ],
)
def test_option_values(
    monkeypatch: pytest.MonkeyPatch, rule: str, env: dict[str, str], argv: list[str], attribute: str, expected: object
) -> None:
    assert getattr(parse(monkeypatch, env, argv), attribute) == expected, rule


def refused(rule: str, command_line: str, flag: str, reason: str) -> tuple[str, dict[str, str], list[str], str]:
    """A row: `command_line` ("VARIABLE=value ptol command" or "ptol command --flag value") is refused with
    the flag, the value and `reason`, and the variable when the value came from one."""
    words = command_line.split()
    ptol = words.index("ptol")
    env = dict(assignment.split("=", 1) for assignment in words[:ptol])
    argv = words[ptol + 1 :]
    if not env:
        return rule, env, argv, f"argument {flag}: '{argv[-1]}' {reason}"
    [(variable, value)] = env.items()
    return rule, env, argv, f"argument {flag}: '{value}' {reason} (from ${variable})"


@pytest.mark.parametrize(
    "rule, env, argv, message",
    [
        refused(
            "port not a number, from the variable",
            "PTOL_WEBHOOK_PORT=abc ptol webhook",
            "--port",
            "is not a port number (0 to 65535)",
        ),
        refused(
            "eviction preemptor priority beyond a PriorityClass value, from the variable",
            "PTOL_EVICTION_PREEMPTOR_PRIORITY=2147483648 ptol webhook",
            "--eviction-preemptor-priority",
            "is not a priority (an integer from -2147483648 to 2147483647)",
        ),
        refused(
            "eviction preemptor priority not an integer",
            "ptol run --eviction-preemptor-priority 9k",
            "--eviction-preemptor-priority",
            "is not a priority (an integer from -2147483648 to 2147483647)",
        ),
        refused(
            "port out of range, from the flag",
            "ptol webhook --port 70000",
            "--port",
            "is not a port number (0 to 65535)",
        ),
        refused(
            "guard mode not a choice, from the variable",
            "PTOL_GUARD=enforced ptol webhook",
            "--guard",
            "is not one of enforce, audit, off",
        ),
        refused(
            "zero resync", "PTOL_RESYNC_SECONDS=0 ptol operator", "--resync-seconds", "must be from 1 to 86400 seconds"
        ),
        refused(
            "a resync too small to be meant",
            "ptol operator --resync-seconds 1e-9",
            "--resync-seconds",
            "must be from 1 to 86400 seconds",
        ),
        refused(
            "liveness port out of range",
            "ptol operator --liveness http://0.0.0.0:99999/healthz",
            "--liveness",
            "has a port that is not a number from 0 to 65535",
        ),
        refused(
            "a hold the guard's webhook timeout would cut short",
            "ptol webhook --retry-hold-seconds 3",
            "--retry-hold-seconds",
            "must be from 0 to 2 seconds",
        ),
        refused(
            "resync not a number", "ptol run --resync-seconds 1m", "--resync-seconds", "is not a number of seconds"
        ),
        refused(
            "negative body limit",
            "PTOL_MAX_BODY_BYTES=-1 ptol webhook",
            "--max-body-bytes",
            "is not a positive integer",
        ),
        refused(
            "metrics without a port",
            "PTOL_OPERATOR_METRICS=0.0.0.0 ptol operator",
            "--metrics",
            "is not HOST:PORT (e.g. 0.0.0.0:8081)",
        ),
        refused(
            "liveness not a URL",
            "ptol operator --liveness 8080",
            "--liveness",
            "is not a URL starting with http:// and a host",
        ),
        refused(
            "register URL must be https",
            "PTOL_REGISTER_URL=http://127.0.0.1:8443 ptol webhook",
            "--register-url",
            "is not a URL starting with https:// and a host",
        ),
        refused(
            "secret without a namespace",
            "ptol webhook --tls-secret webhook-tls",
            "--tls-secret",
            "is not NAMESPACE/NAME",
        ),
        refused(
            "peering priority zero",
            "PTOL_PEERING_PRIORITY=0 ptol operator",
            "--priority",
            "is not a peering priority (an integer from 1 to 2147483647)",
        ),
        refused(
            "log format not a choice", "PTOL_LOG_FORMAT=jsn ptol operator", "--log-format", "is not one of text, json"
        ),
        refused(
            "log level not a level",
            "ptol webhook --log-level verbose",
            "--log-level",
            "is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
        ),
        (
            "empty identity flag",
            {},
            ["webhook", "--operator-identity", " "],
            "argument --operator-identity: an empty value",
        ),
    ],
)
def test_bad_values_exit_2_naming_the_source(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    rule: str,
    env: dict[str, str],
    argv: list[str],
    message: str,
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(monkeypatch, env, argv)
    assert exited.value.code == 2, rule
    assert message in capsys.readouterr().err, rule


def test_bad_variables_of_one_command_do_not_break_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    args = parse(
        monkeypatch,
        {"PTOL_WEBHOOK_PORT": "abc", "PTOL_GUARD": "x", "PTOL_RESYNC_SECONDS": "-1", "PTOL_PEERING_PRIORITY": "x"},
        ["validate", "-f", "config/samples"],
    )
    assert args.command == "validate"


@pytest.mark.parametrize(
    "rule, cert, key, secret, problem",
    [
        ("generated", None, None, None, None),
        ("files", "tls.crt", "tls.key", None, None),
        ("secret", None, None, "ns/name", None),
        ("certificate without key", "tls.crt", None, None, "--cert-file and --key-file go together"),
        ("key without certificate", None, "tls.key", None, "--cert-file and --key-file go together"),
        ("files and secret", "tls.crt", "tls.key", "ns/name", "choose one of --cert-file/--key-file and --tls-secret"),
    ],
)
def test_tls_flags_that_do_not_go_together(
    rule: str, cert: str | None, key: str | None, secret: str | None, problem: str | None
) -> None:
    found = tls_problem(argparse.Namespace(cert_file=cert, key_file=key, tls_secret=secret, ca_file=None))
    if problem is None:
        assert found is None, rule
    else:
        assert found is not None and problem in found, rule


@pytest.mark.parametrize("command", COMPONENTS)
def test_every_component_flag_has_a_variable_listed_in_the_docs(command: str) -> None:
    parser = subcommand(build_parser(), command)
    variables = env_vars_of(parser)
    assert set(options_of(parser)) == set(variables), "a component option without an environment variable"
    doc_lines = [line for page in REFERENCE for line in page.read_text().splitlines()]
    for flag, variable in variables.items():
        rows = [line for line in doc_lines if line.startswith("|") and f"`{flag}" in line and f"`{variable}`" in line]
        assert rows, f"docs/configuration.md (or docs/cli.md) has no table row with `{flag}` and `{variable}`"
        default = defaults_of(parser).get(flag)
        if command != "run" and default:  # ptol run's own defaults are in the command reference
            assert any(f"`{default}`" in row or f"| {default} |" in row for row in rows), (
                f"docs/configuration.md's row of {flag} does not give its default {default}"
            )


def test_the_option_tables_of_the_docs_are_made_from_the_declarations() -> None:
    page = REFERENCE[0].read_text()
    assert with_tables(page, configuration_tables()) == page, (
        "docs/configuration.md's option tables are stale: run "
        "`python -m preemption_toleration.cli.option_table docs/configuration.md`"
    )


def test_every_setting_is_declared_by_one_option() -> None:
    """A settings field the CLI cannot set is either internal (listed here) or an option forgotten."""
    webhook = [option.settings_field for option in (*server_options(), *REGISTRATION_OPTIONS)]
    assert sorted(webhook) == sorted({field.name for field in fields(WebhookSettings)} - {"ip_addresses"})
    operator = [option.settings_field for option in CONFIG_OPTIONS]
    assert sorted(operator) == sorted(
        {field.name for field in fields(OperatorConfig)} - {"settle_seconds", "impersonate"}
    )


@pytest.mark.parametrize(
    ("command", "defaults"), [("webhook", WebhookSettings()), ("run", local_run_defaults())], ids=["webhook", "run"]
)
def test_a_command_line_without_flags_gives_the_settings_defaults(command: str, defaults: WebhookSettings) -> None:
    """The options take their defaults from the settings' (one declaration): none of them differs."""
    args = build_parser().parse_args([command, "--kubeconfig", "kubeconfig"])
    given = settings_values(args, (*server_options(), *REGISTRATION_OPTIONS))
    assert {name: value for name, value in given.items() if getattr(defaults, name) != value} == {
        "kubeconfig": "kubeconfig"
    }
    assert settings_from(args, defaults) == replace(defaults, kubeconfig="kubeconfig")


def test_the_operator_command_line_without_flags_gives_the_configuration_defaults() -> None:
    given = settings_values(build_parser().parse_args(["operator"]), CONFIG_OPTIONS)
    defaults = OperatorConfig()
    assert {name: value for name, value in given.items() if getattr(defaults, name) != value} == {}


@pytest.fixture(scope="module")
def pem_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A serving certificate and its key, in PEM files (the flags read them)."""
    directory = tmp_path_factory.mktemp("tls")
    pair = pki.issue_serving_cert(pki.generate_ca("test-ca"), "localhost", dns_names=["localhost"])
    (directory / "tls.crt").write_bytes(pair.cert_pem)
    (directory / "tls.key").write_bytes(pair.key_pem)
    return str(directory / "tls.crt"), str(directory / "tls.key")


@pytest.mark.parametrize("command", ["webhook", "run"])
def test_commands_refuse_a_certificate_without_its_key_before_starting(
    command: str, capsys: pytest.CaptureFixture[str], pem_files: tuple[str, str]
) -> None:
    assert main([command, "--cert-file", pem_files[0]]) == 2
    assert capsys.readouterr().err == (
        f"ptol {command}: error: --cert-file and --key-file go together (PTOL_TLS_CERT_FILE, PTOL_TLS_KEY_FILE)\n"
    )


def test_run_refuses_a_dev_cluster_without_the_guard(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--dev-cluster", ".cluster", "--guard", "off"]) == 2
    assert capsys.readouterr().err == (
        "ptol run: error: --dev-cluster needs the guard (--guard enforce or audit): "
        "its server is the scheduler's extender\n"
    )


def test_run_refuses_a_dev_cluster_without_the_extender_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--dev-cluster", ".cluster", "--extender", "off"]) == 2
    assert capsys.readouterr().err == (
        "ptol run: error: --dev-cluster needs the extender endpoint (--extender on): the scheduler of the local "
        "control plane calls it\n"
    )


@pytest.mark.parametrize(
    ("rule", "cert", "ca", "registers", "problem"),
    [
        ("files registered with their CA", "tls.crt", "ca.crt", True, None),
        ("files served only: no CA needed", "tls.crt", None, False, None),
        (
            "files registered without their CA",
            "tls.crt",
            None,
            True,
            "registering configurations with --cert-file needs the CA that signed it, for their caBundle: "
            "add --ca-file",
        ),
        ("a CA without files", None, "ca.crt", False, "--ca-file (PTOL_TLS_CA_FILE) is the CA of --cert-file"),
    ],
)
def test_registering_with_certificate_files_needs_their_ca(
    rule: str, cert: str | None, ca: str | None, registers: bool, problem: str | None
) -> None:
    found = tls_problem(
        argparse.Namespace(cert_file=cert, key_file=cert and "tls.key", tls_secret=None, ca_file=ca),
        registers=registers,
    )
    assert (found is None) if problem is None else (found is not None and found.startswith(problem)), rule


def test_run_refuses_certificate_files_without_their_ca_before_starting(
    capsys: pytest.CaptureFixture[str], pem_files: tuple[str, str]
) -> None:
    assert main(["run", "--cert-file", pem_files[0], "--key-file", pem_files[1]]) == 2
    assert capsys.readouterr().err == (
        "ptol run: error: registering configurations with --cert-file needs the CA "
        "that signed it, for their caBundle: add --ca-file (PTOL_TLS_CA_FILE)\n"
    )


def test_errors_name_the_plugin_when_run_as_kubectl_ptol(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/kubectl-ptol"])
    assert main(["run", "--dev-cluster", ".cluster", "--guard", "off"]) == 2
    assert capsys.readouterr().err.startswith("kubectl ptol run: error: --dev-cluster needs the guard")


def test_the_command_reference_gives_ptol_runs_own_defaults() -> None:
    """docs/cli.md's `ptol run` row spells each default in which `ptol run` differs from `ptol webhook`, as
    `local_run_defaults()` declares it (the one source): a changed default makes the row stale."""
    (row,) = [line for line in REFERENCE[1].read_text().splitlines() if line.startswith("| `ptol run` |")]
    webhook, run = WebhookSettings(), local_run_defaults()
    differing = [
        (option.flag, flag_value(getattr(run, option.settings_field)))
        for option in server_options()
        if getattr(run, option.settings_field) != getattr(webhook, option.settings_field)
    ]
    assert differing, "ptol run has defaults of its own"
    for flag, value in differing:
        assert f"{flag} {value}" in row, f"docs/cli.md's ptol run row does not give {flag} {value}"
