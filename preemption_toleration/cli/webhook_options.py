"""The webhook server's options, each declared once: `ptol webhook` and `ptol run` add them to their parsers,
`settings_from` reads them into a WebhookSettings, and docs/configuration.md's table is made from them. Their
defaults are the settings' (webhooks/settings.py): WebhookSettings' own for `ptol webhook`, `local_run_defaults`
for `ptol run`."""

from __future__ import annotations

import argparse
import dataclasses
import os

from preemption_toleration.cli.options import KUBECONFIG, LOGGING_OPTIONS, Option, flag_value, settings_values, switch
from preemption_toleration.cli.tls_files import certificate_file, private_key_file
from preemption_toleration.cli.values import (
    choice,
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
from preemption_toleration.webhooks.settings import WebhookSettings, local_run_defaults


def _listed(values: list[str]) -> str:
    return ", ".join(values)


GUARD_MODES = ("enforce", "audit", "off")
STEERING_MODES = ("off", "audit", "on")
WEBHOOK_DEFAULTS = WebhookSettings()  # read only: `ptol webhook`'s defaults, for the help and the docs' table
RUN_DEFAULTS = local_run_defaults()
DEFAULT_OPERATOR_IDENTITY = _listed(WEBHOOK_DEFAULTS.operator_identities)
_METRICS_ADDRESS_HELP = (
    "serve /metrics on http://HOST:PORT/metrics (e.g. 0.0.0.0:8081; port 0: a free one, logged), a port "
    "of its own that a NetworkPolicy can close, and no longer on the HTTPS port; default: "
)


def server_options(
    defaults: WebhookSettings = WEBHOOK_DEFAULTS,
    *,
    operator_identity_default: str = DEFAULT_OPERATOR_IDENTITY,
) -> tuple[Option, ...]:
    """The options of the server itself, which `ptol webhook` and `ptol run` share, with the `defaults` of each
    (`operator_identity_default`: how its help names whom the webhooks take for the operator by default), in the
    order of their help."""
    return (
        KUBECONFIG,
        Option(
            "--host",
            env="PTOL_WEBHOOK_HOST",
            default=flag_value(defaults.host),
            type=non_empty,
            help="address to listen on",
            meaning="listen address",
        ),
        Option(
            "--port",
            env="PTOL_WEBHOOK_PORT",
            default=flag_value(defaults.port),
            type=port_number,
            help="HTTPS port; 0 picks a free one",
            meaning="HTTPS port (0: any free one)",
        ),
        Option(
            "--operator-identity",
            env="PTOL_OPERATOR_IDENTITIES",
            dest="operator_identities",
            metavar="USER",
            repeatable=True,
            help="user whose changes to managed annotations are allowed (the operator; default "
            f"{operator_identity_default})",
            table_default=f"`{DEFAULT_OPERATOR_IDENTITY}`",
            meaning="may change managed annotations",
        ),
        Option(
            "--max-body-bytes",
            env="PTOL_MAX_BODY_BYTES",
            default=flag_value(defaults.max_body_bytes),
            type=positive_integer,
            help="larger requests get a 400",
        ),
        Option(
            "--list-page-size",
            env="PTOL_LIST_PAGE_SIZE",
            default=flag_value(defaults.list_page_size),
            type=positive_integer,
            help="objects per page when the caches list pods, nodes, classes and policies",
            meaning="objects per page when the caches list (`limit`/`continue`)",
        ),
        Option(
            "--cache-staleness-seconds",
            env="PTOL_CACHE_STALENESS_SECONDS",
            default=flag_value(defaults.stale_after),
            type=positive_integer,
            help="a cache whose watch is down and that has had no successful list or watch for this long "
            "is too stale to decide from: /readyz and the decisions that read it answer 503",
            setting="stale_after",
            to_setting=float,
            meaning="a cache whose watch is down and that has had no successful list or watch for this long is "
            "too stale: `/readyz` and the decisions that read it answer 503",
        ),
        Option(
            "--shutdown-delay-seconds",
            env="PTOL_SHUTDOWN_DELAY_SECONDS",
            default=flag_value(defaults.shutdown_delay),
            type=non_negative_integer,
            help="on SIGTERM or SIGINT, drain this long before closing: /readyz answers 503 and each answer "
            "closes its connection, until none is left",
            setting="shutdown_delay",
            to_setting=float,
            table_default=f"`{flag_value(WEBHOOK_DEFAULTS.shutdown_delay)}` "
            f"(`ptol run`: {flag_value(RUN_DEFAULTS.shutdown_delay)}, it unregisters first)",
            meaning="on SIGTERM or SIGINT, drain at most this long before closing: `/readyz` answers 503 and every "
            "answer carries `Connection: close`, until no client connection is left (then up to 1 s more, no "
            "longer listening, for the connections already accepted); keep it below the pod's "
            "`terminationGracePeriodSeconds`",
        ),
        Option(
            "--cert-file",
            env="PTOL_TLS_CERT_FILE",
            type=certificate_file,
            help="serving certificate (PEM), reloaded when it changes; needs --key-file; default: generate one",
            meaning="an external serving certificate (PEM), reloaded when it changes; with `--key-file`",
        ),
        Option(
            "--key-file",
            env="PTOL_TLS_KEY_FILE",
            type=private_key_file,
            help="its key (PEM)",
            meaning="the key of `--cert-file` (PEM)",
        ),
        Option(
            "--ca-file",
            env="PTOL_TLS_CA_FILE",
            type=certificate_file,
            help="the CA certificate (PEM) that signed --cert-file: the caBundle of the configurations this "
            "process registers (--register-url, ptol run)",
            meaning="the CA that signed `--cert-file`: the caBundle of configurations this process registers "
            "(`--register-url`, `ptol run`), which need it",
        ),
        Option(
            "--dns-name",
            env="PTOL_WEBHOOK_DNS_NAMES",
            dest="dns_names",
            metavar="NAME",
            repeatable=True,
            help=f"SAN of a generated certificate (default {_listed(defaults.dns_names)})",
            table_default=f"`{_listed(WEBHOOK_DEFAULTS.dns_names)}`",
            meaning="SANs of a generated certificate",
        ),
        Option(
            "--guard",
            env="PTOL_GUARD",
            default=flag_value(defaults.guard_mode),
            type=choice(*GUARD_MODES),
            help="the eviction guard: refuse protected preemptions (enforce), only report them (audit), "
            "or not serve it (off)",
            shown="MODE",
            setting="guard_mode",
            meaning="the eviction guard: `enforce`, `audit` or `off`",
        ),
        switch(
            "--extender",
            env="PTOL_EXTENDER",
            default=defaults.extender,
            help="the scheduler extender endpoint (/extender/preempt), which reads the guard's caches, and the "
            "expiry nudge it needs: serve them (on), or (off) answer it 404 and write no pod, where no "
            "kube-scheduler is configured to call it (the guard alone: the scheduler's own retries find a "
            "toleration's end); --guard off turns it off too",
            meaning="the scheduler extender endpoint (`/extender/preempt`, part of the guard) and the expiry nudge it "
            "needs: `off` answers it 404 and writes no pod, for clusters whose kube-scheduler is not configured to "
            "call it (the guard alone: the scheduler's own retries, paced by the guard, find a toleration's end), "
            "so nothing can record a preemptor through it ([Known limits](known-limits.md)); `--guard off` turns "
            "it off too",
        ),
        Option(
            "--extender-client-ca",
            env="PTOL_EXTENDER_CLIENT_CA",
            type=certificate_file,
            metavar="FILE",
            help="the CA certificate (PEM) that signs the client certificate kube-scheduler presents to the "
            "extender endpoint, which answers no caller without one (403); default: the cluster's CA (the "
            "kubeconfig's, or in a pod its ServiceAccount's ca.crt), which signs kube-scheduler's own "
            "certificate on kubeadm-style control planes",
            table_default="the cluster's CA",
            meaning="the CA (PEM) that signs the client certificate kube-scheduler presents to `/extender/preempt`, "
            "which answers no caller without one (403); by default the CA of the cluster the server talks to (its "
            "kubeconfig's, or in a pod its ServiceAccount's `ca.crt`), which signs kube-scheduler's own "
            "certificate on kubeadm-style control planes",
        ),
        Option(
            "--steering",
            env="PTOL_STEERING",
            default=flag_value(defaults.steering),
            type=choice(*STEERING_MODES),
            help="where the scheduler calls no extender (managed clusters): when the guard refuses the scheduler's "
            "victims, preempt the ones upstream's plugin would choose, on the node it would choose, and nominate "
            "the preemptor there (on); only report it (audit); or not (off). Needs the rights to delete pods, "
            "patch pods/status and keep Leases in --lease-namespace",
            shown="off\\|audit\\|on",
            meaning="where kube-scheduler calls no extender (managed clusters): when the guard refuses the "
            "scheduler's victims, preempt those upstream's plugin would choose, on the node it would choose, and "
            "nominate the preemptor there (`on`); `audit` only reports the plan (log line, Event on the preemptor, "
            '`ptol_steering_total{outcome="audited"}`); needs the rights to delete pods, patch `pods/status` and '
            "keep Leases ([Steering](eviction-guard.md#steering-managed-clusters))",
        ),
        switch(
            "--kueue",
            env="PTOL_KUEUE",
            default=defaults.kueue,
            help="where Kueue admits Jobs: keep Kueue's preemption off a Workload its class (a PriorityClass or a "
            "WorkloadPriorityClass) protects, by its priority-boost annotation (Kueue's PriorityBoost gate on); needs "
            "--guard, and the rights to list, watch and patch Kueue's Workloads and to list and watch its "
            "WorkloadPriorityClasses",
            meaning="where Kueue admits Jobs: while a Job's Workload is protected by its class (a PriorityClass, or a "
            "WorkloadPriorityClass a policy governs), raise its "
            "effective priority in Kueue to the class's minimum - 1 (the `kueue.x-k8s.io/priority-boost` "
            "annotation, with Kueue's `PriorityBoost` gate on), so that Kueue preempts it only as upstream's plugin "
            "would; needs `--guard`, the rights to list, watch and patch `workloads.kueue.x-k8s.io` and to list and "
            "watch `workloadpriorityclasses.kueue.x-k8s.io` "
            "([Kueue](tasks/kueue.md))",
        ),
        Option(
            "--lease-namespace",
            env="PTOL_LEASE_NAMESPACE",
            default=os.environ.get("POD_NAMESPACE") or defaults.lease_namespace,
            type=non_empty,
            help="namespace of the Leases by which the replicas agree: the guard's one decision per victim pod "
            "group and preemption, steering's one action per preemptor (default: the pod's namespace, "
            f"POD_NAMESPACE, else {defaults.lease_namespace})",
            shown="NS",
            table_default=f"`POD_NAMESPACE`, else `{WEBHOOK_DEFAULTS.lease_namespace}`",
            meaning="namespace of the Leases by which the replicas agree: the guard's one decision per victim "
            "PodGroup and preemption ([Pod groups](eviction-guard.md#pod-groups-kubernetes-137)), steering's one "
            "action per preemptor once per minute",
        ),
        Option(
            "--metrics-address",
            env="PTOL_WEBHOOK_METRICS_ADDRESS",
            default=flag_value(defaults.metrics_address),
            type=host_and_port,
            metavar="HOST:PORT",
            help=_METRICS_ADDRESS_HELP + (defaults.metrics_address or "on the HTTPS port"),
            table_default=f"`ptol webhook`: {flag_value(WEBHOOK_DEFAULTS.metrics_address) or 'off'}, on the HTTPS "
            f"port; `ptol run`: `{RUN_DEFAULTS.metrics_address}`, a free port, logged",
            meaning="serve `/metrics` on `http://HOST:PORT/metrics`, a port of its own that a NetworkPolicy can "
            "close, and no longer on the HTTPS port (the chart and `config/` use `0.0.0.0:8081`)",
        ),
        Option(
            "--retry-hold-seconds",
            env="PTOL_RETRY_HOLD_SECONDS",
            default=flag_value(defaults.retry_hold),
            type=hold_seconds,
            help="hold the guard's refusal of a scheduler retrying the same victim at once (asynchronous "
            "preemption) this long, so the retries come about once per hold; 0 answers at once",
            setting="retry_hold",
            to_setting=float,
            shown="S",
            meaning="0 to 2: hold the guard's refusal of a scheduler that retries the same protected victim at once "
            "(asynchronous preemption) this long, which paces its retries to about one per hold; the first "
            "refusal, and a retry after the scheduler's own backoff, is answered at once; 0 answers every refusal "
            "at once",
        ),
        Option(
            "--preemptor-identity",
            env="PTOL_PREEMPTOR_IDENTITIES",
            dest="preemptor_identities",
            metavar="USER",
            repeatable=True,
            help="user whose pod deletions and DisruptionTarget marks are preemptions "
            f"(default {_listed(defaults.preemptor_identities)})",
            table_default=f"`{_listed(WEBHOOK_DEFAULTS.preemptor_identities)}`",
            meaning="whose deletions are preemptions",
        ),
        Option(
            "--eviction-preemptor-priority",
            env="PTOL_EVICTION_PREEMPTOR_PRIORITY",
            type=pod_priority,
            metavar="N",
            help="judge an Eviction that names no preemptor (a drain, an autoscaler's scale-down), by anyone, as a "
            "preemption by a pod of priority N: a tolerating pod refuses it (429 with the seconds left, for a "
            "toleration that ends); the registered guard configuration then receives every Eviction; default: "
            "such Evictions are allowed",
            meaning="opt-in: judge an Eviction that names no preemptor (`kubectl drain`, the cluster autoscaler's or "
            "Karpenter's scale-down), by anyone, as a preemption by a pod of priority N (an integer from "
            "-2147483648 to 2147483647): a pod whose class refuses N is refused, 429 with the seconds left while a "
            "time-limited toleration lasts (kubectl drain retries every 5 s), 403 for a toleration without end; "
            "`ptol run` then registers the guard for every Eviction; for an in-cluster install, give `ptol "
            "webhook-config` the same flag ([Drains](eviction-guard.md#drains-and-scale-downs-opt-in))",
        ),
        Option(
            "--tls-secret",
            env="PTOL_TLS_SECRET",
            type=namespaced_name,
            metavar="NAMESPACE/NAME",
            help="self-managed TLS: keep the CA and serving certificate in this Secret, put the CA in our "
            "webhook configurations' caBundle, renew before expiry",
            meaning="self-managed TLS in a Secret",
        ),
        Option(
            "--service",
            env="PTOL_WEBHOOK_SERVICE",
            default=flag_value(defaults.service),
            type=non_empty,
            help="the webhook's Service, whose DNS names the self-managed certificate covers",
            shown="NAME",
            meaning="names of the self-managed certificate",
        ),
    )


# `ptol webhook`'s own: registration, where `ptol run` registers at its own URL
REGISTRATION_OPTIONS = (
    Option(
        "--register-url",
        env="PTOL_REGISTER_URL",
        type=url("https"),
        metavar="URL",
        help="register webhook configurations that call this URL (e.g. https://127.0.0.1:8443), removed "
        "on exit; for a local control plane",
        meaning="register configurations calling this URL (local use; a port of 0 in it stands for the port the "
        "server listens on), removed on exit",
    ),
    Option(
        "--register-service",
        env="PTOL_REGISTER_SERVICE",
        type=namespaced_name,
        metavar="NAMESPACE/NAME",
        help="once ready, register webhook configurations that call this Service (port 443), with the CA "
        "of the server's certificate, and apply them again every 5 minutes; kept on exit (the other "
        "replicas serve). Until a server is ready nothing is registered, so no write waits on it",
        meaning="once ready, register configurations calling this Service (port 443) with the server's CA, apply "
        "them again every 5 minutes, and keep them on exit (the other replicas serve); what the chart and "
        "`config/` set ([Webhooks registered once ready](install.md#webhooks-registered-once-ready))",
    ),
    Option(
        "--register-owner",
        env="PTOL_REGISTER_OWNER",
        type=non_empty,
        metavar="CLUSTERROLE",
        help="the registered configurations are owned by this ClusterRole (the server's own), so that "
        "deleting the install deletes them (Kubernetes' garbage collector)",
        table_default="none",
        meaning="the ClusterRole that owns the registered configurations, so that deleting the install deletes "
        "them (the garbage collector)",
    ),
    switch(
        "--admission-webhooks",
        env="PTOL_ADMISSION_WEBHOOKS",
        default=WEBHOOK_DEFAULTS.admission_webhooks,
        help="register the PriorityClass and policy admission webhooks (on), or only the guard (off)",
        meaning="register the PriorityClass and policy webhooks; `off`: only the guard (a configuration "
        "registered earlier is deleted)",
    ),
    Option(
        "--guard-failure-policy",
        env="PTOL_GUARD_FAILURE_POLICY",
        default=flag_value(WEBHOOK_DEFAULTS.guard_failure_policy),
        type=choice("Ignore", "Fail"),
        help="the registered guard's failurePolicy: Ignore (a guard outage never blocks pod deletions) or "
        "Fail (nothing the guard would judge goes through while it is down, drains included)",
        shown="Ignore\\|Fail",
        meaning="the registered guard's failurePolicy",
    ),
    Option(
        "--guard-skip-namespace",
        env="PTOL_GUARD_SKIP_NAMESPACES",
        dest="guard_skip_namespaces",
        metavar="NAMESPACE",
        repeatable=True,
        help="a namespace the registered guard never judges "
        f"(default {_listed(WEBHOOK_DEFAULTS.guard_skip_namespaces)}; with --register-service the Service's namespace "
        "is skipped too)",
        table_default=f"`{_listed(WEBHOOK_DEFAULTS.guard_skip_namespaces)}`",
        meaning="a namespace the registered guard never judges, by name; repeatable; with `--register-service`, "
        "the Service's namespace too",
    ),
)


def webhook_command_options() -> tuple[Option, ...]:
    """Every option of `ptol webhook`, in the order of its help."""
    return (*server_options(), *LOGGING_OPTIONS, *REGISTRATION_OPTIONS)


def settings_from(args: argparse.Namespace, defaults: WebhookSettings | None = None) -> WebhookSettings:
    """The server's settings from the parsed options of `ptol webhook` or `ptol run` (whose `defaults` are
    `local_run_defaults()`): an option not given leaves the field of `defaults`."""
    given = settings_values(args, (*server_options(), *REGISTRATION_OPTIONS))
    return dataclasses.replace(defaults or WebhookSettings(), **given)
