"""`ptol webhook`: serve the admission webhooks over TLS."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from preemption_toleration.cli.signals import run_until_signalled
from preemption_toleration.webhooks.decisions import AdmissionConfig
from preemption_toleration.webhooks.server import DEFAULT_MAX_BODY_BYTES

if TYPE_CHECKING:
    from preemption_toleration.webhooks.runner import WebhookSettings
from preemption_toleration.logs import configure_logging


def add_webhook_arguments(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument("--kubeconfig", default=env("KUBECONFIG"),
                        help="kubeconfig file; default: $KUBECONFIG, ~/.kube/config, else in-cluster")
    parser.add_argument("--host", default=env("PTOL_WEBHOOK_HOST", "0.0.0.0"),
                        help="address to listen on [PTOL_WEBHOOK_HOST] (default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=int(env("PTOL_WEBHOOK_PORT", "8443")),
                        help="HTTPS port; 0 picks a free one [PTOL_WEBHOOK_PORT] (default 8443)")
    parser.add_argument("--operator-identity", action="append", dest="operator_identities",
                        default=[i for i in env("PTOL_OPERATOR_IDENTITIES", "").split(",") if i] or None,
                        metavar="USER",
                        help="user whose changes to managed annotations are allowed (the operator); repeatable "
                        f"[PTOL_OPERATOR_IDENTITIES, comma-separated] (default "
                        f"{AdmissionConfig().operator_identities[0]})")
    parser.add_argument("--max-body-bytes", type=int, default=int(env("PTOL_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)),
                        help=f"larger requests get a 400 [PTOL_MAX_BODY_BYTES] (default {DEFAULT_MAX_BODY_BYTES})")
    parser.add_argument("--cert-file", default=env("PTOL_TLS_CERT_FILE"),
                        help="serving certificate (PEM), reloaded when it changes [PTOL_TLS_CERT_FILE]; "
                        "default: generate one")
    parser.add_argument("--key-file", default=env("PTOL_TLS_KEY_FILE"), help="its key [PTOL_TLS_KEY_FILE]")
    parser.add_argument("--dns-name", action="append", dest="dns_names", metavar="NAME",
                        help="SAN of a generated certificate; repeatable (default localhost)")
    parser.add_argument("--guard", choices=["enforce", "audit", "off"], default=env("PTOL_GUARD", "enforce"),
                        help="the eviction guard: refuse protected preemptions (enforce), only report them "
                        "(audit), or not serve it [PTOL_GUARD] (default enforce)")
    parser.add_argument("--preemptor-identity", action="append", dest="preemptor_identities", metavar="USER",
                        default=[i for i in env("PTOL_PREEMPTOR_IDENTITIES", "").split(",") if i] or None,
                        help="user whose pod deletions and DisruptionTarget marks are preemptions; repeatable "
                        "[PTOL_PREEMPTOR_IDENTITIES, comma-separated] (default system:kube-scheduler)")
    parser.add_argument("--tls-secret", default=env("PTOL_TLS_SECRET"), metavar="NAMESPACE/NAME",
                        help="self-managed TLS: keep the CA and serving certificate in this Secret, put the CA in "
                        "our webhook configurations' caBundle, renew before expiry [PTOL_TLS_SECRET]")
    parser.add_argument("--service", default=env("PTOL_WEBHOOK_SERVICE", "preemption-toleration-webhook"),
                        help="the webhook's Service, whose DNS names the self-managed certificate covers "
                        "[PTOL_WEBHOOK_SERVICE]")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("webhook", help="serve the admission webhooks",
                                   description="Serve the validating and mutating admission webhooks over TLS, "
                                   "with /healthz, /readyz and /metrics on the same port.")
    add_webhook_arguments(parser)
    parser.add_argument("--register-url", default=os.environ.get("PTOL_REGISTER_URL"), metavar="URL",
                        help="register webhook configurations that call this URL (e.g. https://127.0.0.1:8443), "
                        "removed on exit; for a local control plane [PTOL_REGISTER_URL]")
    parser.set_defaults(handler=run)


def settings_from(args: argparse.Namespace) -> WebhookSettings:
    from preemption_toleration.webhooks.runner import WebhookSettings

    settings = WebhookSettings(
        kubeconfig=args.kubeconfig,
        host=args.host,
        port=args.port,
        max_body_bytes=args.max_body_bytes,
        cert_file=args.cert_file,
        key_file=args.key_file,
        register_url=getattr(args, "register_url", None),
        tls_secret=args.tls_secret,
        guard_mode=args.guard,
        service=args.service,
    )
    if args.operator_identities:
        settings.operator_identities = list(args.operator_identities)
    if args.preemptor_identities:
        settings.preemptor_identities = list(args.preemptor_identities)
    if args.dns_names:
        settings.dns_names = list(args.dns_names)
    return settings


def run(args: argparse.Namespace) -> int:
    from preemption_toleration.webhooks.runner import run_webhook

    configure_logging()
    settings = settings_from(args)
    return run_until_signalled(lambda stop: run_webhook(settings, stop))
