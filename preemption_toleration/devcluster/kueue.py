"""Kueue in the test bed (`--feature kueue`): its controller manager as a local process, configured as a cluster
runs it except where a process on loopback must differ (pure: text in, text out; `cluster` starts it). Its pace
is its release's: how many objects of each kind it reconciles at once (5 Jobs, 10 Workloads...) and its API
client's rate are those of the configuration its release installs
(config/components/manager/controller_manager_config.yaml), not the binary's default of one at a time.

What differs from Kueue's own manifests, and why:
- its serving certificate is ours (internal certificate management off, as Kueue's own integration tests run
  it), for 127.0.0.1; its webhook configurations call it by URL on loopback with our CA;
- only the webhooks of Kueue's own kinds and of batch/v1 Jobs are registered: the test bed runs the batch/Job
  integration alone, and the others (pods, Deployments...) would fail every such request while Kueue is down;
- leader election is off (one manager, no namespace of its own to elect in);
- its CRDs are applied as its release ships them in config/components/crd/bases, without the conversion
  webhook its kustomize overlay adds to five of them (every client here reads v1beta2, Kueue's stored version);
- its Job webhooks keep `failurePolicy: Fail` without the namespaceSelector that leaves kube-system and
  kueue-system out;
- `VisibilityOnDemand` is off (its API server needs an APIService and certificates of its own), and
  `PriorityBoost` is on: the toleration's hold on Kueue's preemption is a boost of effective priority.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

# The webhooks kept: those of Kueue's own kinds, and of the one integration the test bed runs.
KEPT_WEBHOOK_GROUPS = frozenset({"kueue.x-k8s.io", "batch"})
FEATURE_GATES: Mapping[str, bool] = {"PriorityBoost": True, "VisibilityOnDemand": False}
INTEGRATIONS = ("batch/job",)
NAMESPACE = "kueue-system"  # its own; jobs there are not managed (Kueue's default managedJobsNamespaceSelector)
# Kueue reads the metrics server's certificate from here when its internal certificate management is off;
# the path is fixed in its main.go (v0.17 to v0.19), whether or not metrics are served.
METRICS_CERT_DIR = "/etc/kueue/metrics/certs"
# Kueue's fair sharing preemption strategies, as its documentation sets them, tried in this order
FAIR_SHARING_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
# What of its release's configuration sets Kueue's pace: kept as shipped.
SHIPPED_SECTIONS = ("controller", "clientConnection")
# The names of the webhook configurations, as Kueue's release manifests name them.
WEBHOOK_CONFIGURATION_PREFIX = "kueue-"


def manager_config(
    shipped: str,
    host: str,
    webhook_port: int,
    health_port: int,
    metrics_port: int,
    cert_dir: str,
    feature_gates: Mapping[str, bool] = FEATURE_GATES,
    fair_sharing: bool = False,
) -> str:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2) for a manager on `host`, with `feature_gates`, its
    pace (`SHIPPED_SECTIONS`) as in `shipped` (the text of the configuration its release installs); `fair_sharing`:
    its preemption by fair sharing, with Kueue's two strategies (its `fairSharing` present). ValueError when
    `shipped` is not what Kueue's releases ship."""
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": host, "port": webhook_port, "certDir": cert_dir},
        "metrics": {"bindAddress": f"{host}:{metrics_port}"},
        "health": {"healthProbeBindAddress": f"{host}:{health_port}"},
        "integrations": {"frameworks": list(INTEGRATIONS)},
        "featureGates": dict(feature_gates),
        **shipped_pace(shipped),
    }
    if fair_sharing:
        config["fairSharing"] = {"preemptionStrategies": list(FAIR_SHARING_STRATEGIES)}
    return yaml.safe_dump(config, sort_keys=False)


def shipped_pace(shipped: str) -> dict[str, Any]:
    """The sections of `SHIPPED_SECTIONS` of Kueue's shipped configuration (the text of its
    controller_manager_config.yaml); ValueError when it is not a Configuration that holds them."""
    found = yaml.safe_load(shipped)
    if not isinstance(found, dict) or found.get("kind") != "Configuration":
        raise ValueError("Kueue's shipped manager configuration is not a Configuration")
    missing = [section for section in SHIPPED_SECTIONS if not isinstance(found.get(section), dict)]
    if missing:
        raise ValueError(f"Kueue's shipped manager configuration holds no {', '.join(missing)}")
    return {section: found[section] for section in SHIPPED_SECTIONS}


def webhook_configurations(manifests: str, base_url: str, ca_bundle: str) -> list[dict[str, Any]]:
    """Kueue's webhook configurations (its config/components/webhook/manifests.yaml) as the test bed registers
    them: the webhooks of `KEPT_WEBHOOK_GROUPS` only, each calling `base_url` + its path with `ca_bundle`
    (base64 PEM). ValueError when the manifests are not what Kueue's releases ship."""
    found = [document for document in yaml.safe_load_all(manifests) if document]
    if not found:
        raise ValueError("Kueue's webhook manifests hold no webhook configuration")
    configurations = []
    for document in found:
        kind = document.get("kind")
        if kind not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            raise ValueError(f"Kueue's webhook manifests hold a {kind}, not a webhook configuration")
        webhooks = [_on_loopback(hook, base_url, ca_bundle) for hook in document.get("webhooks") or [] if _kept(hook)]
        name = WEBHOOK_CONFIGURATION_PREFIX + document["metadata"]["name"]
        configurations.append({**document, "metadata": {"name": name}, "webhooks": webhooks})
    return configurations


def with_private_etc(upper: str, work: str, argv: Sequence[str], as_root: bool) -> list[str]:
    """`argv` run with its own view of /etc: `upper` (holding `kueue/metrics/certs/`) laid over it, in a mount
    namespace of its own, so that Kueue finds its metrics certificate where it looks and nothing is written to
    the machine's /etc. Root needs no more; another user gets a user namespace that maps it to root there,
    where the kernel allows one (unprivileged user namespaces, and overlay mounts in them: Linux 5.11 or
    later). The process keeps the caller's PID: `unshare` and `sh` each exec the next."""
    if any(mark in path for path in (upper, work) for mark in ",:"):
        raise ValueError(f"an overlay's directories cannot hold ',' or ':': {upper}, {work}")
    options = shlex.quote(f"lowerdir=/etc,upperdir={upper},workdir={work}")
    mount = f"mount -t overlay overlay -o {options} /etc"
    namespaces = ["--mount"] if as_root else ["--user", "--map-root-user", "--mount"]
    return ["unshare", *namespaces, "sh", "-c", f'{mount} && exec "$0" "$@"', *argv]


def _kept(webhook: Mapping[str, Any]) -> bool:
    groups: Iterable[str] = (group for rule in webhook.get("rules") or [] for group in rule.get("apiGroups") or [])
    return any(group in KEPT_WEBHOOK_GROUPS for group in groups)


def _on_loopback(webhook: Mapping[str, Any], base_url: str, ca_bundle: str) -> dict[str, Any]:
    service = webhook.get("clientConfig", {}).get("service") or {}
    path = service.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError(f"Kueue's webhook {webhook.get('name')} names no path")
    return {**webhook, "clientConfig": {"url": base_url.rstrip("/") + path, "caBundle": ca_bundle}}
