"""The webhook configurations, built as plain objects (pure) for a Service or for a URL.

Failure policies, and why:
- validate PriorityClasses: Fail. PriorityClass writes are rare admin actions; letting a malformed
  annotation through while we are down would silently switch off a class's protection. Its matchConditions
  leave out writes of classes with none of our annotations and no labels, before and after.
- mutate PriorityClasses: Ignore. A missed mutation is repaired by the operator within seconds.
- validate policies: Fail. They are our own objects; nothing else needs to write them while we are down.
- the guard (pod deletions, evictions, status): Ignore with a 3 s timeout, so a guard outage never blocks
  deletions cluster-wide; it skips namespaces labelled `preemption-toleration.dev/guard: disabled` (ours).
  Its matchConditions (GA since Kubernetes 1.30) send it only the requests that may be preemptions.
- Kueue's Workloads' creation (with `--kueue on`): Ignore with a 10 s timeout. It only holds a creation while the
  boosts it needs are written (at most 5 s), never refuses one; while it is down, Jobs are queued as without it.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Collection
from typing import Any

from preemption_toleration.api.paths import (
    GUARD_PATH,
    KUEUE_WORKLOADS_PATH,
    MUTATE_PRIORITY_CLASSES_PATH,
    VALIDATE_POLICIES_PATH,
    VALIDATE_PRIORITY_CLASSES_PATH,
)
from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.api.resources import KUEUE_GROUP, PRIORITY_CLASS_GROUP, PRIORITY_CLASS_PLURAL, WORKLOADS
from preemption_toleration.core.annotations import LEGACY_PREFIX, PREFIX
from preemption_toleration.core.pods import PREEMPTION_MARK
from preemption_toleration.guard.prefilter import PREEMPTOR_ANNOTATIONS
from preemption_toleration.guard.verdicts import DEFAULT_PREEMPTOR_IDENTITIES
from preemption_toleration.manifests.cel import cel_string
from preemption_toleration.manifests.yaml_text import dump_manifests

NAME = "preemption-toleration"
GUARD_NAME = "preemption-toleration-guard"
GUARD_WEBHOOK = "pods.guard.preemption-toleration.dev"  # the webhook's name, in kubectl's "denied the request"
TIMEOUT_SECONDS = 5
GUARD_TIMEOUT_SECONDS = 3
KUEUE_NAME = "preemption-toleration-kueue"
KUEUE_WEBHOOK = "workloads.kueue.preemption-toleration.dev"
KUEUE_TIMEOUT_SECONDS = 10  # above the longest hold of a creation (kueue.adapter.booster.HOLD_SECONDS)
GUARD_OPT_OUT_LABEL = "preemption-toleration.dev/guard"
# Set by the API server on every namespace (1.21+): a namespace's name, for a selector.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

_PRIORITY_CLASS_RULE = {
    "apiGroups": [PRIORITY_CLASS_GROUP],
    "apiVersions": ["*"],
    "resources": [PRIORITY_CLASS_PLURAL],
    "scope": "Cluster",
}
_POLICY_RULE = {"apiGroups": [GROUP], "apiVersions": [VERSION], "resources": [PLURAL], "scope": "Cluster"}

# The clientConfig of one endpoint, by its path: a Service's or a URL's.
ClientConfig = Callable[[str], dict[str, Any]]


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


def _has_our_annotation(obj: str) -> str:
    prefixes = " || ".join(f"k.startsWith({cel_string(prefix)})" for prefix in (PREFIX, LEGACY_PREFIX))
    return f"(has({obj}.metadata.annotations) && {obj}.metadata.annotations.exists(k, {prefixes}))"


def _labelled(obj: str) -> str:
    return f"(has({obj}.metadata.labels) && size({obj}.metadata.labels) > 0)"


def priority_class_match_expression() -> str:
    """CEL: a PriorityClass write the validating webhook must see. It judges our annotations (added, changed
    or removed) and, through labels, which policies select the class; a class with neither, before and after,
    is none of its business, so it is admitted even while the webhook is down (failurePolicy Fail)."""
    return (
        f"{_has_our_annotation('object')}\n"
        f"|| (oldObject != null && {_has_our_annotation('oldObject')})\n"
        # labels set, changed or removed (maps compared whole; an empty map is no labels)
        f"|| ({_labelled('object')} && (oldObject == null || !has(oldObject.metadata.labels)\n"
        "  || object.metadata.labels != oldObject.metadata.labels))\n"
        f"|| (oldObject != null && {_labelled('oldObject')} && (!has(object.metadata.labels)\n"
        "  || object.metadata.labels != oldObject.metadata.labels))"
    )


def priority_class_match_conditions() -> list[dict[str, str]]:
    return [{"name": "ours-or-labelled", "expression": priority_class_match_expression()}]


def validating_configuration(client_config: ClientConfig) -> dict[str, Any]:
    """`client_config(path)` gives the clientConfig of one endpoint. The PriorityClass webhook sees only the
    writes its matchConditions select (see `priority_class_match_expression`)."""
    priority_classes = _webhook(
        "priorityclasses.validate.preemption-toleration.dev",
        client_config(VALIDATE_PRIORITY_CLASSES_PATH),
        _PRIORITY_CLASS_RULE,
        "Fail",
    )
    priority_classes["matchConditions"] = priority_class_match_conditions()
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": NAME, "labels": {"app.kubernetes.io/name": NAME}},
        "webhooks": [
            priority_classes,
            _webhook(
                "policies.validate.preemption-toleration.dev",
                client_config(VALIDATE_POLICIES_PATH),
                _POLICY_RULE,
                "Fail",
            ),
        ],
    }


def _cel_marked(pod: str) -> str:
    """`pod` (object or oldObject) has the scheduler's preemption mark."""
    kind, status, reason = (cel_string(value) for value in PREEMPTION_MARK)
    return (
        f"({pod} != null && has({pod}.status) && has({pod}.status.conditions)\n"
        f"      && {pod}.status.conditions.exists(c, has(c.type) && c.type == {kind}\n"
        f"        && has(c.status) && c.status == {status} && has(c.reason) && c.reason == {reason}))"
    )


def guard_match_expression(preemptor_identities: Collection[str], every_eviction: bool = False) -> str:
    """CEL: the request may be a preemption, by guard/prefilter.py's rule, for the requests an API server
    sends. `request` is the AdmissionRequest as JSON, so an empty subResource is absent, not ''; every
    step is guarded (has(), != null) because an error would skip the guard, or with failurePolicy Fail
    refuse the request. `every_eviction` (the guard's --eviction-preemptor-priority is set): every
    Eviction, not only those that name a preemptor."""
    annotations = "object.metadata.annotations"
    named = "\n    || ".join(f"{cel_string(key)} in {annotations}" for key in PREEMPTOR_ANNOTATIONS)
    eviction = (
        "(request.operation == 'CREATE' && has(request.subResource) && request.subResource == 'eviction')"
        if every_eviction
        else (
            "(request.operation == 'CREATE' && has(request.subResource) && request.subResource == 'eviction'\n"
            f"  && object != null && has(object.metadata) && has({annotations})\n"
            f"  && ({named}))"
        )
    )
    if not preemptor_identities:
        return eviction
    identities = "[" + ", ".join(cel_string(identity) for identity in preemptor_identities) + "]"
    by_preemptor = (
        f"(has(request.userInfo.username) && request.userInfo.username in {identities} && (\n"
        "  (request.operation == 'DELETE' && (!has(request.subResource) || request.subResource == ''))\n"
        "  || (request.operation == 'UPDATE' && has(request.subResource) && request.subResource == 'status'\n"
        f"    && {_cel_marked('object')}\n"
        f"    && !{_cel_marked('oldObject')})))"
    )
    return f"{eviction}\n|| {by_preemptor}"


def guard_match_conditions(preemptor_identities: Collection[str], every_eviction: bool = False) -> list[dict[str, str]]:
    """The guard's matchConditions (all must hold for the API server to call it): one, the whole rule."""
    return [{"name": "may-be-preemption", "expression": guard_match_expression(preemptor_identities, every_eviction)}]


def guard_configuration(
    client_config: ClientConfig,
    preemptor_identities: Collection[str] = DEFAULT_PREEMPTOR_IDENTITIES,
    every_eviction: bool = False,
    failure_policy: str = "Ignore",
    skipped_namespaces: Collection[str] = (),
) -> dict[str, Any]:
    """The guard's configuration, with the matchConditions built from the preemptor identities (the guard's
    own `--preemptor-identity` list): the API server calls it only for requests that may be preemptions
    (GA since Kubernetes 1.30, so on every supported release). `every_eviction`: the guard judges every
    Eviction (its `--eviction-preemptor-priority` is set), so every Eviction is sent to it. `failure_policy`:
    Ignore by default (see the module's docstring); Fail where an admin chose it (`--guard-failure-policy`).
    `skipped_namespaces`: namespaces the API server never sends it, by name (the server's own, kube-system),
    besides those labelled to opt out."""
    skipped = [{"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": sorted(set(skipped_namespaces))}]
    webhook: dict[str, Any] = {
        "name": GUARD_WEBHOOK,
        "clientConfig": client_config(GUARD_PATH),
        "rules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "operations": ["DELETE"],
                "scope": "Namespaced",
            },
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods/eviction"],
                "operations": ["CREATE"],
                "scope": "Namespaced",
            },
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods/status"],
                "operations": ["UPDATE"],
                "scope": "Namespaced",
            },
        ],
        "namespaceSelector": {
            "matchExpressions": [
                {"key": GUARD_OPT_OUT_LABEL, "operator": "NotIn", "values": ["disabled"]},
                *(skipped if skipped_namespaces else []),
            ]
        },
        "failurePolicy": failure_policy,
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": GUARD_TIMEOUT_SECONDS,
        "admissionReviewVersions": ["v1", "v1beta1"],
        "matchConditions": guard_match_conditions(preemptor_identities, every_eviction),
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": GUARD_NAME, "labels": {"app.kubernetes.io/name": NAME}},
        "webhooks": [webhook],
    }


def kueue_configuration(client_config: ClientConfig) -> dict[str, Any]:
    """The webhook on Kueue's Workloads' creation (`kueue.adapter.hold`): it writes the boosts a new Workload
    needs before allowing it, so its side effects are skipped on a dry run."""
    webhook = {
        "name": KUEUE_WEBHOOK,
        "clientConfig": client_config(KUEUE_WORKLOADS_PATH),
        "rules": [
            {
                "apiGroups": [KUEUE_GROUP],
                "apiVersions": ["*"],
                "resources": [WORKLOADS],
                "operations": ["CREATE"],
                "scope": "Namespaced",
            }
        ],
        "failurePolicy": "Ignore",
        "matchPolicy": "Equivalent",
        "sideEffects": "NoneOnDryRun",
        "timeoutSeconds": KUEUE_TIMEOUT_SECONDS,
        "admissionReviewVersions": ["v1", "v1beta1"],
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": KUEUE_NAME, "labels": {"app.kubernetes.io/name": NAME}},
        "webhooks": [webhook],
    }


def mutating_configuration(client_config: ClientConfig) -> dict[str, Any]:
    webhook = _webhook(
        "priorityclasses.mutate.preemption-toleration.dev",
        client_config(MUTATE_PRIORITY_CLASSES_PATH),
        _PRIORITY_CLASS_RULE,
        "Ignore",
    )
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


HEADER = (
    "# Generated by `ptol webhook-config`; do not edit. Failure policies are explained in the README; the\n"
    "# guard's matchConditions send it only requests that may be preemptions (GA since Kubernetes 1.30).\n"
)


def service_manifests(
    namespace: str = DEFAULT_NAMESPACE,
    service: str = DEFAULT_SERVICE,
    ca_bundle: bytes | None = None,
    preemptor_identities: Collection[str] = DEFAULT_PREEMPTOR_IDENTITIES,
    every_eviction: bool = False,
) -> list[dict[str, Any]]:
    """The configurations calling the in-cluster Service, as the server registers them there
    (`--register-service`, which adds its CA as the caBundle): the guard skips the Service's namespace and
    kube-system. `preemptor_identities`, `every_eviction`: see `guard_configuration`."""

    def client_config(path: str) -> dict[str, Any]:
        return service_client_config(namespace, service, path, ca_bundle)

    return [
        validating_configuration(client_config),
        mutating_configuration(client_config),
        guard_configuration(
            client_config, preemptor_identities, every_eviction, skipped_namespaces=(namespace, "kube-system")
        ),
    ]


def service_manifests_yaml(
    namespace: str = DEFAULT_NAMESPACE,
    service: str = DEFAULT_SERVICE,
    preemptor_identities: Collection[str] = DEFAULT_PREEMPTOR_IDENTITIES,
    every_eviction: bool = False,
) -> str:
    """`service_manifests` as `ptol webhook-config` prints them (config/webhook/webhooks.yaml)."""
    manifests = service_manifests(
        namespace, service, preemptor_identities=preemptor_identities, every_eviction=every_eviction
    )
    return HEADER + dump_manifests(manifests)
