"""`ptol webhook`: serve the admission webhooks over TLS."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from preemption_toleration.cli.failures import EXIT_FAILED, EXIT_USAGE, refused, require_cluster_configuration
from preemption_toleration.cli.options import add_command
from preemption_toleration.cli.signals import run_until_signalled
from preemption_toleration.cli.tls_files import key_pair_problem
from preemption_toleration.cli.webhook_options import settings_from, webhook_command_options
from preemption_toleration.logs import configure_logging
from preemption_toleration.webhooks.settings import WebhookError


def tls_problem(args: argparse.Namespace, registers: bool = False) -> str | None:
    """Why the TLS flags do not make sense together (`registers`: this process registers configurations
    that call it), if they do not."""
    if bool(args.cert_file) != bool(args.key_file):
        return "--cert-file and --key-file go together (PTOL_TLS_CERT_FILE, PTOL_TLS_KEY_FILE)"
    if args.cert_file and args.tls_secret:
        return (
            "choose one of --cert-file/--key-file and --tls-secret "
            "(PTOL_TLS_CERT_FILE/PTOL_TLS_KEY_FILE, PTOL_TLS_SECRET)"
        )
    if getattr(args, "ca_file", None) and not args.cert_file:
        return "--ca-file (PTOL_TLS_CA_FILE) is the CA of --cert-file: give both, or neither"
    if registers and args.cert_file and not getattr(args, "ca_file", None):
        return (
            "registering configurations with --cert-file needs the CA that signed it, for their caBundle: "
            "add --ca-file (PTOL_TLS_CA_FILE)"
        )
    return None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_command(
        subparsers,
        "webhook",
        webhook_command_options(),
        run,
        help="serve the admission webhooks",
        description="Serve the validating and mutating admission webhooks over TLS, "
        "with /healthz, /readyz and /metrics on the same port (/metrics on its own with --metrics-address).",
    )


def steering_problem(guard: str, steering: str) -> str | None:
    """Steering acts on the guard's refusals, and its rights (delete pods, keep Leases) are given only for
    that: it needs the guard enforcing."""
    if steering != "off" and guard != "enforce":
        return (
            f"--steering {steering} acts on the guard's refusals: it needs --guard enforce, not --guard {guard} "
            "(PTOL_GUARD, PTOL_STEERING)"
        )
    return None


def kueue_problem(guard: str, kueue: str) -> str | None:
    """Kueue's boost reads the guard's caches (the pods of each Job): it needs the guard served."""
    if kueue == "on" and guard == "off":
        return (
            "--kueue on reads the guard's caches: it needs --guard enforce or audit, not --guard off "
            "(PTOL_GUARD, PTOL_KUEUE)"
        )
    return None


def prepare(args: argparse.Namespace, command: str) -> bool:
    """Refuse flags that do not go together (False, with a message), else set up logging (True)."""
    registers = command == "run" or bool(getattr(args, "register_url", None) or getattr(args, "register_service", None))
    problem = tls_problem(args, registers=registers)
    if problem is None and getattr(args, "register_url", None) and getattr(args, "register_service", None):
        problem = "choose one of --register-url and --register-service (PTOL_REGISTER_URL, PTOL_REGISTER_SERVICE)"
    if problem is None and args.cert_file and args.key_file:
        problem = key_pair_problem(args.cert_file, args.key_file)
    if problem is None:
        problem = steering_problem(args.guard, args.steering)
    if problem is None:
        problem = kueue_problem(args.guard, args.kueue)
    if problem:
        refused(command, problem)
        return False
    configure_logging(args.log_level, args.log_format)
    return True


def run(args: argparse.Namespace) -> int:
    from preemption_toleration.webhooks.runner import run_webhook

    if not prepare(args, "webhook"):
        return EXIT_USAGE
    require_cluster_configuration(args.kubeconfig)
    settings = settings_from(args)
    return stopped_on_webhook_error("webhook", lambda: run_until_signalled(lambda stop: run_webhook(settings, stop)))


def stopped_on_webhook_error(command: str, main: Callable[[], int]) -> int:
    """Runs `main`; a WebhookError (settings the server cannot serve) ends it with its message and exit 1."""
    try:
        return main()
    except WebhookError as error:
        return refused(command, str(error), EXIT_FAILED)
