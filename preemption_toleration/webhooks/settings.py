"""The webhook server's settings (the options of `ptol webhook` and `ptol run`, cli/webhook_options.py), and the
error that says the server cannot do what they ask.

The fields' defaults are the only place they are written: those of `ptol webhook`, a server in a cluster. Its
options take their defaults from here, and `ptol run` from `local_run_defaults`."""

from __future__ import annotations

from dataclasses import dataclass, field

from preemption_toleration.admission.decisions import AdmissionConfig
from preemption_toleration.guard.verdicts import DEFAULT_PREEMPTOR_IDENTITIES
from preemption_toleration.kube.informer import DEFAULT_PAGE_SIZE, DEFAULT_STALE_AFTER_SECONDS
from preemption_toleration.serving.handling import DEFAULT_MAX_BODY_BYTES


@dataclass
class WebhookSettings:
    kubeconfig: str | None = None
    host: str = "0.0.0.0"
    port: int = 8443
    operator_identities: list[str] = field(default_factory=lambda: list(AdmissionConfig().operator_identities))
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    list_page_size: int = DEFAULT_PAGE_SIZE  # objects per page when the caches list
    stale_after: float = DEFAULT_STALE_AFTER_SECONDS  # a cache without list or watch this long is not ready
    shutdown_delay: float = 5.0  # on stop: seconds of draining (not ready, connections closed after answers)
    cert_file: str | None = None  # with key_file: external certificates (cert-manager), reloaded on change
    key_file: str | None = None
    ca_file: str | None = None  # the CA of cert_file, for configurations this process registers
    dns_names: list[str] = field(default_factory=lambda: ["localhost"])
    ip_addresses: list[str] = field(default_factory=lambda: ["127.0.0.1"])
    # Self-managed in-cluster TLS: "namespace/name" of the Secret that keeps the CA and serving pair;
    # the certificate's names are those of `service` in that namespace.
    tls_secret: str | None = None
    service: str = "preemption-toleration-webhook"
    # The eviction guard: off, "enforce" or "audit" (allow everything, report what would be refused).
    guard_mode: str = "enforce"
    extender: bool = True  # serve the scheduler extender endpoint (needs the guard's caches)
    # "host:port": serve /metrics there (plain HTTP), not on the HTTPS port; None: beside the webhooks
    metrics_address: str | None = None
    preemptor_identities: list[str] = field(default_factory=lambda: list(DEFAULT_PREEMPTOR_IDENTITIES))
    retry_hold: float = 1.0  # seconds to hold the refusal of a scheduler's immediate retry (guard.repeats)
    # Opt-in: judge an Eviction that names no preemptor as a preemption by this priority (GuardConfig).
    eviction_preemptor_priority: int | None = None
    # Register webhook configurations pointing at this URL (the local control plane); removed on exit.
    register_url: str | None = None
    # Register webhook configurations calling this Service ("namespace/name"), once ready; kept on exit,
    # owned by the ClusterRole `register_owner` (deleted with it).
    register_service: str | None = None
    register_owner: str | None = None
    admission_webhooks: bool = True  # register the PriorityClass and policy webhooks (else only the guard)
    guard_failure_policy: str = "Ignore"
    guard_skip_namespaces: list[str] = field(default_factory=lambda: ["kube-system"])
    # the CA that signs the scheduler's client certificate (the extender's caller); None: the cluster's CA
    extender_client_ca: str | None = None
    # Steering (steering.adapter.steerer): off, "audit" (report what it would do) or "on"; its Leases' namespace
    steering: str = "off"
    lease_namespace: str = "default"
    # Kueue (kueue.adapter): write the priority-boost that keeps Kueue's preemption off protected Workloads
    kueue: bool = False


def local_run_defaults() -> WebhookSettings:
    """`ptol run`'s defaults, for a control plane on this machine: loopback and a free port; no draining, since
    it unregisters its configurations first; /metrics on a free loopback port of its own (logged), apart from the
    HTTPS port as the Deployments serve it."""
    return WebhookSettings(host="127.0.0.1", port=0, shutdown_delay=0.0, metrics_address="127.0.0.1:0")


class WebhookError(RuntimeError):
    """The server cannot do what its settings ask; the message says why and what to change."""
