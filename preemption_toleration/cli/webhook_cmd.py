"""`ptol webhook`: serve the admission webhooks over TLS."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from preemption_toleration.admission.decisions import AdmissionConfig
from preemption_toleration.cli.failures import EXIT_FAILED, EXIT_USAGE, refused, require_cluster_configuration
from preemption_toleration.cli.options import (
    add_kubeconfig_argument,
    add_logging_arguments,
    choice,
    env_list_option,
    env_option,
    hold_seconds,
    host_and_port,
    namespaced_name,
    non_empty,
    non_negative_integer,
    pod_priority,
    port_number,
    positive_integer,
    url,
)
from preemption_toleration.cli.signals import run_until_signalled
from preemption_toleration.cli.tls_files import certificate_file, key_pair_problem, private_key_file
from preemption_toleration.kube.informer import DEFAULT_PAGE_SIZE, DEFAULT_STALE_AFTER_SECONDS
from preemption_toleration.logs import configure_logging
from preemption_toleration.webhooks.handling import DEFAULT_MAX_BODY_BYTES

if TYPE_CHECKING:
    from preemption_toleration.webhooks.runner import WebhookSettings

GUARD_MODES = ("enforce", "audit", "off")
STEERING_MODES = ("off", "audit", "on")


DEFAULT_OPERATOR_IDENTITY = next(iter(AdmissionConfig().operator_identities))


def add_webhook_arguments(
    parser: argparse.ArgumentParser,
    *,
    host: str = "0.0.0.0",
    port: str = "8443",
    shutdown_delay: str = "5",
    operator_identity_default: str = DEFAULT_OPERATOR_IDENTITY,
    metrics_address: str | None = None,
) -> None:
    add_kubeconfig_argument(parser)
    env_option(parser, "--host", env="PTOL_WEBHOOK_HOST", default=host, type=non_empty, help="address to listen on")
    env_option(
        parser, "--port", env="PTOL_WEBHOOK_PORT", default=port, type=port_number, help="HTTPS port; 0 picks a free one"
    )
    env_list_option(
        parser,
        "--operator-identity",
        env="PTOL_OPERATOR_IDENTITIES",
        dest="operator_identities",
        metavar="USER",
        help="user whose changes to managed annotations are allowed (the operator; default "
        f"{operator_identity_default})",
    )
    env_option(
        parser,
        "--max-body-bytes",
        env="PTOL_MAX_BODY_BYTES",
        default=str(DEFAULT_MAX_BODY_BYTES),
        type=positive_integer,
        help="larger requests get a 400",
    )
    env_option(
        parser,
        "--list-page-size",
        env="PTOL_LIST_PAGE_SIZE",
        default=str(DEFAULT_PAGE_SIZE),
        type=positive_integer,
        help="objects per page when the caches list pods, nodes, classes and policies",
    )
    env_option(
        parser,
        "--cache-staleness-seconds",
        env="PTOL_CACHE_STALENESS_SECONDS",
        default=str(int(DEFAULT_STALE_AFTER_SECONDS)),
        type=positive_integer,
        help="a cache whose watch is down and that has had no successful list or watch for this long "
        "is too stale to decide from: /readyz and the decisions that read it answer 503",
    )
    env_option(
        parser,
        "--shutdown-delay-seconds",
        env="PTOL_SHUTDOWN_DELAY_SECONDS",
        default=shutdown_delay,
        type=non_negative_integer,
        help="on SIGTERM or SIGINT, drain this long before closing: /readyz answers 503 and each answer "
        "closes its connection, until none is left",
    )
    env_option(
        parser,
        "--cert-file",
        env="PTOL_TLS_CERT_FILE",
        type=certificate_file,
        help="serving certificate (PEM), reloaded when it changes; needs --key-file; default: generate one",
    )
    env_option(parser, "--key-file", env="PTOL_TLS_KEY_FILE", type=private_key_file, help="its key (PEM)")
    env_option(
        parser,
        "--ca-file",
        env="PTOL_TLS_CA_FILE",
        type=certificate_file,
        help="the CA certificate (PEM) that signed --cert-file: the caBundle of the configurations this "
        "process registers (--register-url, ptol run)",
    )
    env_list_option(
        parser,
        "--dns-name",
        env="PTOL_WEBHOOK_DNS_NAMES",
        dest="dns_names",
        metavar="NAME",
        help="SAN of a generated certificate (default localhost)",
    )
    env_option(
        parser,
        "--guard",
        env="PTOL_GUARD",
        default="enforce",
        type=choice(*GUARD_MODES),
        help="the eviction guard: refuse protected preemptions (enforce), only report them (audit), "
        "or not serve it (off)",
    )
    env_option(
        parser,
        "--extender",
        env="PTOL_EXTENDER",
        default="on",
        type=choice("on", "off"),
        help="the scheduler extender endpoint (/extender/preempt), which reads the guard's caches, and the expiry "
        "nudge it needs: serve them (on), or (off) answer it 404 and write no pod, where no kube-scheduler is "
        "configured to call it (the guard alone: the scheduler's own retries find a toleration's end); "
        "--guard off turns it off too",
    )
    env_option(
        parser,
        "--extender-client-ca",
        env="PTOL_EXTENDER_CLIENT_CA",
        type=certificate_file,
        metavar="FILE",
        help="the CA certificate (PEM) that signs the client certificate kube-scheduler presents to the extender "
        "endpoint, which answers no caller without one (403); default: the cluster's CA (the kubeconfig's, or "
        "in a pod its ServiceAccount's ca.crt), which signs kube-scheduler's own certificate on kubeadm-style "
        "control planes",
    )
    env_option(
        parser,
        "--steering",
        env="PTOL_STEERING",
        default="off",
        type=choice(*STEERING_MODES),
        help="where the scheduler calls no extender (managed clusters): when the guard refuses the scheduler's "
        "victims, preempt the ones upstream's plugin would choose, on the node it would choose, and nominate the "
        "preemptor there (on); only report it (audit); or not (off). Needs the rights to delete pods, patch "
        "pods/status and keep Leases in --steering-namespace",
    )
    env_option(
        parser,
        "--steering-namespace",
        env="PTOL_STEERING_NAMESPACE",
        default=os.environ.get("POD_NAMESPACE") or "default",
        type=non_empty,
        help="namespace of the Leases by which replicas steer each preemptor once (default: the pod's namespace, "
        "POD_NAMESPACE, else default)",
    )
    env_option(
        parser,
        "--metrics-address",
        env="PTOL_WEBHOOK_METRICS_ADDRESS",
        default=metrics_address,
        type=host_and_port,
        metavar="HOST:PORT",
        help="serve /metrics on http://HOST:PORT/metrics (e.g. 0.0.0.0:8081; port 0: a free one, logged), a port "
        "of its own that a NetworkPolicy can close, and no longer on the HTTPS port; default: "
        + ("on the HTTPS port" if metrics_address is None else metrics_address),
    )
    env_option(
        parser,
        "--retry-hold-seconds",
        env="PTOL_RETRY_HOLD_SECONDS",
        default="1",
        type=hold_seconds,
        help="hold the guard's refusal of a scheduler retrying the same victim at once (asynchronous "
        "preemption) this long, so the retries come about once per hold; 0 answers at once",
    )
    env_list_option(
        parser,
        "--preemptor-identity",
        env="PTOL_PREEMPTOR_IDENTITIES",
        dest="preemptor_identities",
        metavar="USER",
        help="user whose pod deletions and DisruptionTarget marks are preemptions (default system:kube-scheduler)",
    )
    env_option(
        parser,
        "--eviction-preemptor-priority",
        env="PTOL_EVICTION_PREEMPTOR_PRIORITY",
        type=pod_priority,
        metavar="N",
        help="judge an Eviction that names no preemptor (a drain, an autoscaler's scale-down), by anyone, as a "
        "preemption by a pod of priority N: a tolerating pod refuses it (429 with the seconds left, for a "
        "toleration that ends); the registered guard configuration then receives every Eviction; default: "
        "such Evictions are allowed",
    )
    env_option(
        parser,
        "--tls-secret",
        env="PTOL_TLS_SECRET",
        type=namespaced_name,
        metavar="NAMESPACE/NAME",
        help="self-managed TLS: keep the CA and serving certificate in this Secret, put the CA in our "
        "webhook configurations' caBundle, renew before expiry",
    )
    env_option(
        parser,
        "--service",
        env="PTOL_WEBHOOK_SERVICE",
        default="preemption-toleration-webhook",
        type=non_empty,
        help="the webhook's Service, whose DNS names the self-managed certificate covers",
    )


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
    parser = subparsers.add_parser(
        "webhook",
        help="serve the admission webhooks",
        description="Serve the validating and mutating admission webhooks over TLS, "
        "with /healthz, /readyz and /metrics on the same port (/metrics on its own with --metrics-address).",
    )
    add_webhook_arguments(parser)
    add_logging_arguments(parser)
    env_option(
        parser,
        "--register-url",
        env="PTOL_REGISTER_URL",
        type=url("https"),
        metavar="URL",
        help="register webhook configurations that call this URL (e.g. https://127.0.0.1:8443), removed "
        "on exit; for a local control plane",
    )
    env_option(
        parser,
        "--register-service",
        env="PTOL_REGISTER_SERVICE",
        type=namespaced_name,
        metavar="NAMESPACE/NAME",
        help="once ready, register webhook configurations that call this Service (port 443), with the CA "
        "of the server's certificate, and apply them again every 5 minutes; kept on exit (the other "
        "replicas serve). Until a server is ready nothing is registered, so no write waits on it",
    )
    env_option(
        parser,
        "--register-owner",
        env="PTOL_REGISTER_OWNER",
        type=non_empty,
        metavar="CLUSTERROLE",
        help="the registered configurations are owned by this ClusterRole (the server's own), so that "
        "deleting the install deletes them (Kubernetes' garbage collector)",
    )
    env_option(
        parser,
        "--admission-webhooks",
        env="PTOL_ADMISSION_WEBHOOKS",
        default="on",
        type=choice("on", "off"),
        help="register the PriorityClass and policy admission webhooks (on), or only the guard (off)",
    )
    env_option(
        parser,
        "--guard-failure-policy",
        env="PTOL_GUARD_FAILURE_POLICY",
        default="Ignore",
        type=choice("Ignore", "Fail"),
        help="the registered guard's failurePolicy: Ignore (a guard outage never blocks pod deletions) or "
        "Fail (nothing the guard would judge goes through while it is down, drains included)",
    )
    env_list_option(
        parser,
        "--guard-skip-namespace",
        env="PTOL_GUARD_SKIP_NAMESPACES",
        dest="guard_skip_namespaces",
        metavar="NAMESPACE",
        help="a namespace the registered guard never judges (default kube-system; with --register-service the "
        "Service's namespace is skipped too)",
    )
    parser.set_defaults(handler=run)


def settings_from(args: argparse.Namespace) -> WebhookSettings:
    from preemption_toleration.webhooks.runner import WebhookSettings

    settings = WebhookSettings(
        kubeconfig=args.kubeconfig,
        host=args.host,
        port=args.port,
        max_body_bytes=args.max_body_bytes,
        list_page_size=args.list_page_size,
        stale_after=float(args.cache_staleness_seconds),
        shutdown_delay=float(args.shutdown_delay_seconds),
        cert_file=args.cert_file,
        key_file=args.key_file,
        ca_file=args.ca_file,
        register_url=getattr(args, "register_url", None),
        register_service=getattr(args, "register_service", None),
        register_owner=getattr(args, "register_owner", None),
        admission_webhooks=getattr(args, "admission_webhooks", "on") == "on",
        guard_failure_policy=getattr(args, "guard_failure_policy", "Ignore"),
        tls_secret=args.tls_secret,
        guard_mode=args.guard,
        extender=args.extender == "on",
        metrics_address=args.metrics_address,
        retry_hold=float(args.retry_hold_seconds),
        eviction_preemptor_priority=args.eviction_preemptor_priority,
        service=args.service,
        steering=args.steering,
        extender_client_ca=args.extender_client_ca,
        steering_namespace=args.steering_namespace,
    )
    if args.operator_identities:
        settings.operator_identities = list(args.operator_identities)
    if args.preemptor_identities:
        settings.preemptor_identities = list(args.preemptor_identities)
    if args.dns_names:
        settings.dns_names = list(args.dns_names)
    if getattr(args, "guard_skip_namespaces", None):
        settings.guard_skip_namespaces = list(args.guard_skip_namespaces)
    return settings


def prepare(args: argparse.Namespace, command: str) -> bool:
    """Refuse flags that do not go together (False, with a message), else set up logging (True)."""
    registers = command == "run" or bool(getattr(args, "register_url", None) or getattr(args, "register_service", None))
    problem = tls_problem(args, registers=registers)
    if problem is None and getattr(args, "register_url", None) and getattr(args, "register_service", None):
        problem = "choose one of --register-url and --register-service (PTOL_REGISTER_URL, PTOL_REGISTER_SERVICE)"
    if problem is None and args.cert_file and args.key_file:
        problem = key_pair_problem(args.cert_file, args.key_file)
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
    from preemption_toleration.webhooks.runner import WebhookError

    try:
        return main()
    except WebhookError as error:
        return refused(command, str(error), EXIT_FAILED)
