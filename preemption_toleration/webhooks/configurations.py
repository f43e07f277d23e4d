"""The webhook configurations, built as plain objects (pure) for a Service or for a URL.

Failure policies, and why:
- validate PriorityClasses: Fail. PriorityClass writes are rare admin actions; letting a malformed
  annotation through while we are down would silently switch off a class's protection.
- mutate PriorityClasses: Ignore. A missed mutation is repaired by the operator within seconds.
- validate policies: Fail. They are our own objects; nothing else needs to write them while we are down.
- the guard (pod deletions, evictions, status): Ignore with a 3 s timeout, so a guard outage never blocks
  deletions cluster-wide; it skips namespaces labelled `preemption-toleration.dev/guard: disabled` (ours).
"""

from __future__ import annotations

import base64
from typing import Any

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION

NAME = "preemption-toleration"
GUARD_NAME = "preemption-toleration-guard"
TIMEOUT_SECONDS = 5
GUARD_TIMEOUT_SECONDS = 3
GUARD_OPT_OUT_LABEL = "preemption-toleration.dev/guard"

_PRIORITY_CLASS_RULE = {
    "apiGroups": ["scheduling.k8s.io"],
    "apiVersions": ["*"],
    "resources": ["priorityclasses"],
    "scope": "Cluster",
}
_POLICY_RULE = {"apiGroups": [GROUP], "apiVersions": [VERSION], "resources": [PLURAL], "scope": "Cluster"}


def url_client_config(base_url: str, path: str, ca_bundle: bytes) -> dict[str, Any]:
    return {"url": base_url.rstrip("/") + path, "caBundle": base64.b64encode(ca_bundle).decode()}


def service_client_config(namespace: str, service: str, path: str, ca_bundle: bytes | None) -> dict[str, Any]:
    config: dict[str, Any] = {"service": {"namespace": namespace, "name": service, "path": path, "port": 443}}
    if ca_bundle:
        config["caBundle"] = base64.b64encode(ca_bundle).decode()
    return config


def _webhook(name: str, client_config: dict[str, Any], rule: dict[str, Any], failure_policy: str) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": client_config,
        "rules": [{**rule, "operations": ["CREATE", "UPDATE"]}],
        "failurePolicy": failure_policy,
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": TIMEOUT_SECONDS,
        "admissionReviewVersions": ["v1", "v1beta1"],
    }


def validating_configuration(client_config: Any) -> dict[str, Any]:
    """`client_config(path)` gives the clientConfig of one endpoint."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": NAME, "labels": {"app.kubernetes.io/name": NAME}},
        "webhooks": [
            _webhook("priorityclasses.validate.preemption-toleration.dev", client_config("/validate/priorityclasses"),
                     _PRIORITY_CLASS_RULE, "Fail"),
            _webhook("policies.validate.preemption-toleration.dev",
                     client_config("/validate/preemptiontolerationpolicies"), _POLICY_RULE, "Fail"),
        ],
    }


def guard_configuration(client_config: Any) -> dict[str, Any]:
    webhook = {
        "name": "pods.guard.preemption-toleration.dev",
        "clientConfig": client_config("/guard/pods"),
        "rules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["DELETE"],
             "scope": "Namespaced"},
            {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/eviction"], "operations": ["CREATE"],
             "scope": "Namespaced"},
            {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/status"], "operations": ["UPDATE"],
             "scope": "Namespaced"},
        ],
        "namespaceSelector": {
            "matchExpressions": [{"key": GUARD_OPT_OUT_LABEL, "operator": "NotIn", "values": ["disabled"]}]
        },
        "failurePolicy": "Ignore",
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": GUARD_TIMEOUT_SECONDS,
        "admissionReviewVersions": ["v1", "v1beta1"],
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": GUARD_NAME, "labels": {"app.kubernetes.io/name": NAME}},
        "webhooks": [webhook],
    }


def mutating_configuration(client_config: Any) -> dict[str, Any]:
    webhook = _webhook("priorityclasses.mutate.preemption-toleration.dev", client_config("/mutate/priorityclasses"),
                       _PRIORITY_CLASS_RULE, "Ignore")
    webhook["rules"][0]["operations"] = ["CREATE"]
    webhook["reinvocationPolicy"] = "Never"
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": NAME, "labels": {"app.kubernetes.io/name": NAME}},
        "webhooks": [webhook],
    }


DEFAULT_NAMESPACE = "preemption-toleration"
DEFAULT_SERVICE = "preemption-toleration-webhook"


def service_manifests(
    namespace: str = DEFAULT_NAMESPACE, service: str = DEFAULT_SERVICE, ca_bundle: bytes | None = None
) -> list[dict[str, Any]]:
    """Both configurations calling the in-cluster Service; the caBundle is filled in later (by the
    webhook's self-managed TLS, or cert-manager's CA injector)."""

    def client_config(path: str) -> dict[str, Any]:
        return service_client_config(namespace, service, path, ca_bundle)

    return [validating_configuration(client_config), mutating_configuration(client_config),
            guard_configuration(client_config)]
