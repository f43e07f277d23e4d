"""The cluster manifests under config/: they render, pass a server-side dry run, and grant no more than
the components need (checked by asking the API server what each service account may do)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from preemption_toleration.cli.main import build_parser
from preemption_toleration.cli.webhook_cmd import tls_problem
from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.manifests.webhook_configurations import GUARD_NAME, KUEUE_NAME
from tests.integration.components import INSTALL_NAMESPACE, OPERATOR_USER, ROOT, WEBHOOK_USER, rbac_installed
from tests.integration.conftest import Kubectl
from tests.integration.helpers import by_kind_and_name, with_local_tls_files

pytestmark = pytest.mark.integration

NAMESPACE, OPERATOR, WEBHOOK = INSTALL_NAMESPACE, OPERATOR_USER, WEBHOOK_USER
WEBHOOK_DEPLOYMENT = "preemption-toleration-webhook"


@pytest.fixture(scope="module")
def installed(cluster: LocalCluster) -> Iterator[None]:
    with rbac_installed(cluster):
        yield


# cert-manager's own kinds: its CRDs are not installed on the local control plane.
CERT_MANAGER_KINDS = {"Issuer", "ClusterIssuer", "Certificate"}
VARIANTS = [
    "crd",
    "rbac",
    "manager",
    "webhook",
    "default",
    "certmanager",
    "steering",
    "steering-audit",
    "kueue",
    "samples",
    "components/validating-admission-policy",
]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_renders_and_passes_a_server_side_dry_run(
    installed: None, kubectl: Kubectl, cluster: LocalCluster, variant: str
) -> None:
    rendered = kubectl("kustomize", str(ROOT / "config" / variant)).stdout
    documents = [d for d in yaml.safe_load_all(rendered) if d]
    kept = [d for d in documents if d["kind"] not in CERT_MANAGER_KINDS]
    # cert-manager's: a self-signed Issuer, the CA Certificate, the CA's Issuer, the serving Certificate
    assert kept and len(documents) - len(kept) == (4 if variant == "certmanager" else 0)
    result = kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(kept))
    assert result.stdout.count("(server dry run)") == len(kept), (cluster.kubernetes_version, result.stdout)


def test_the_admission_policy_component_adds_to_default(
    installed: None, kubectl: Kubectl, tmp_path: Path, cluster: LocalCluster
) -> None:
    """What a user writes: config/default plus the component, rendered by kubectl's own kustomize."""
    config = os.path.relpath(ROOT / "config", tmp_path)
    kustomization = {
        "resources": [f"{config}/default"],
        "components": [f"{config}/components/validating-admission-policy"],
    }
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    documents = [d for d in yaml.safe_load_all(kubectl("kustomize", str(tmp_path)).stdout) if d]
    default = [d for d in yaml.safe_load_all(kubectl("kustomize", str(ROOT / "config" / "default")).stdout) if d]
    added = [d["kind"] for d in documents if d not in default]
    assert sorted(added) == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    result = kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(documents))
    assert result.stdout.count("(server dry run)") == len(documents), (cluster.kubernetes_version, result.stdout)


def test_default_holds_the_deployments_the_service_and_a_policy_v1_budget(kubectl: Kubectl) -> None:
    rendered = kubectl("kustomize", str(ROOT / "config" / "default")).stdout
    documents = [d for d in yaml.safe_load_all(rendered) if d]
    kinds = sorted(d["kind"] for d in documents)
    assert kinds.count("Deployment") == 2 and "Service" in kinds
    [budget] = [d for d in documents if d["kind"] == "PodDisruptionBudget"]
    assert budget["apiVersion"] == "policy/v1"


def can(kubectl: Kubectl, user: str, verb: str, resource: str, *extra: str) -> bool:
    result = kubectl("auth", "can-i", verb, resource, f"--as={user}", *extra, check=False)
    return result.stdout.strip() == "yes"


ALLOWED = [
    (OPERATOR, "patch", "priorityclasses.scheduling.k8s.io"),
    (OPERATOR, "patch", "preemptiontolerationpolicies.preemption-toleration.dev/status"),
    (OPERATOR, "watch", "preemptiontolerationpolicies.preemption-toleration.dev"),
    (OPERATOR, "create", "events", "-n", "default"),
    (WEBHOOK, "watch", "pods", "--all-namespaces"),
    (WEBHOOK, "create", "events", "-n", "team-a"),
    (WEBHOOK, "update", "secrets/webhook-tls", "-n", NAMESPACE),
    (WEBHOOK, "patch", "validatingwebhookconfigurations.admissionregistration.k8s.io/preemption-toleration-guard"),
    (WEBHOOK, "create", "mutatingwebhookconfigurations.admissionregistration.k8s.io/preemption-toleration"),
    (WEBHOOK, "get", "clusterroles.rbac.authorization.k8s.io/preemption-toleration-webhook"),
    (WEBHOOK, "patch", "pods", "--subresource=status", "-n", "team-a"),
]
DENIED = [
    (OPERATOR, "delete", "priorityclasses.scheduling.k8s.io"),
    (OPERATOR, "create", "priorityclasses.scheduling.k8s.io"),
    (OPERATOR, "delete", "preemptiontolerationpolicies.preemption-toleration.dev"),
    (OPERATOR, "get", "secrets", "-n", NAMESPACE),
    (OPERATOR, "delete", "pods", "-n", "default"),
    (WEBHOOK, "patch", "priorityclasses.scheduling.k8s.io"),
    (WEBHOOK, "patch", "pods", "-n", "team-a"),
    (WEBHOOK, "delete", "pods", "-n", "default"),
    (WEBHOOK, "get", "secrets/other", "-n", NAMESPACE),
    (WEBHOOK, "get", "secrets", "-n", "kube-system"),
    (WEBHOOK, "patch", "validatingwebhookconfigurations.admissionregistration.k8s.io/someone-else"),
    (WEBHOOK, "create", "validatingwebhookconfigurations.admissionregistration.k8s.io"),
    (WEBHOOK, "get", "clusterroles.rbac.authorization.k8s.io/cluster-admin"),
]


@pytest.mark.parametrize("case", ALLOWED, ids=[" ".join(c[1:3]) + " " + c[0].rsplit(":", 1)[1] for c in ALLOWED])
def test_service_accounts_may_do_their_job(installed: None, kubectl: Kubectl, case: tuple[str, ...]) -> None:
    assert can(kubectl, *case)


@pytest.mark.parametrize("case", DENIED, ids=[" ".join(c[1:3]) + " " + c[0].rsplit(":", 1)[1] for c in DENIED])
def test_service_accounts_may_do_nothing_else(installed: None, kubectl: Kubectl, case: tuple[str, ...]) -> None:
    assert not can(kubectl, *case)


def test_certmanager_variant_renders_with_files_and_its_ca(kubectl: Kubectl) -> None:
    rendered = kubectl("kustomize", str(ROOT / "config" / "certmanager")).stdout
    assert "- --cert-file" in rendered and "secretName: webhook-cert-manager-tls" in rendered
    assert "- --ca-file\n        - /tls/ca.crt" in rendered  # the CA the server registers
    assert "kind: Certificate" in rendered and "isCA: true" in rendered


@pytest.mark.parametrize("variant", ["default", "certmanager", "steering", "steering-audit", "kueue"])
def test_no_variant_applies_a_webhook_configuration(kubectl: Kubectl, variant: str) -> None:
    """The server registers them once ready: an install whose server never starts leaves writes working."""
    objects = by_kind_and_name(kubectl("kustomize", str(ROOT / "config" / variant)).stdout)
    assert not [kind for kind, _ in objects if kind.endswith("WebhookConfiguration")]
    [deployment] = [d for (kind, name), d in objects.items() if (kind, name) == ("Deployment", WEBHOOK_DEPLOYMENT)]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--register-service") + 1] == f"{NAMESPACE}/{WEBHOOK_DEPLOYMENT}"
    assert args[args.index("--register-owner") + 1] == WEBHOOK_DEPLOYMENT


def test_steering_in_audit_has_no_right_to_write(kubectl: Kubectl) -> None:
    """config/steering-audit runs `--steering audit`, which writes nothing but Events: no right to delete pods,
    patch their status or keep Leases (switching config/steering's argument would keep them)."""
    objects = by_kind_and_name(kubectl("kustomize", str(ROOT / "config" / "steering-audit")).stdout)
    deployment = objects[("Deployment", WEBHOOK_DEPLOYMENT)]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--steering") + 1] == "audit"
    assert not [name for kind, name in objects if kind in ("Role", "RoleBinding") and "steering" in name]
    rules = objects[("ClusterRole", "preemption-toleration-webhook")]["rules"]
    pod_rules = [rule for rule in rules if "" in rule["apiGroups"] and {"pods", "pods/status"} & set(rule["resources"])]
    assert {verb for rule in pod_rules for verb in rule["verbs"]} <= {"list", "watch"}, pod_rules


def test_the_kueue_variant_turns_kueue_on_in_both_components_with_its_rights(kubectl: Kubectl) -> None:
    objects = by_kind_and_name(kubectl("kustomize", str(ROOT / "config" / "kueue")).stdout)
    for component in ("webhook", "operator"):
        deployment = objects[("Deployment", f"preemption-toleration-{component}")]
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--kueue") + 1] == "on", component
        rules = objects[("ClusterRole", f"preemption-toleration-{component}")]["rules"]
        kueue = {resource for rule in rules if "kueue.x-k8s.io" in rule["apiGroups"] for resource in rule["resources"]}
        assert kueue == (
            {"workloads", "workloadpriorityclasses", "clusterqueues"}
            if component == "webhook"
            else {"workloadpriorityclasses"}
        )


@pytest.mark.parametrize("variant", ["default", "certmanager", "kueue"])
def test_container_arguments_are_ones_ptol_accepts(kubectl: Kubectl, variant: str) -> None:
    """A flag renamed in the code but not in the manifests would crash-loop the pods of a real install."""
    rendered = kubectl("kustomize", str(ROOT / "config" / variant)).stdout
    deployments = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "Deployment"]
    commands = {}
    for deployment in deployments:
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "preemption-toleration:0.1.0"  # what config/default's `images:` sets
        # exits 2 on a flag or value ptol refuses (the certificate files the pod mounts: local ones here)
        args = build_parser().parse_args(with_local_tls_files(container["args"]))
        commands[deployment["metadata"]["name"]] = args.command
        if args.command == "webhook":
            assert tls_problem(args) is None
    assert commands == {"preemption-toleration-operator": "operator", "preemption-toleration-webhook": "webhook"}


DEPRECATED_KUSTOMIZE_FIELDS = ("bases", "patchesStrategicMerge", "patchesJson6902", "vars", "commonLabels")


def test_no_kustomization_uses_a_deprecated_field() -> None:
    for kustomization in ROOT.glob("config/**/kustomization.yaml"):
        used = set(yaml.safe_load(kustomization.read_text())) & set(DEPRECATED_KUSTOMIZE_FIELDS)
        assert not used, (kustomization, used)


@pytest.mark.parametrize("variant", ["default", "certmanager"])
def test_what_a_security_reviewer_checks_in_the_rendered_install(kubectl: Kubectl, variant: str) -> None:
    """The points of a production review, read from what `kubectl apply -k` would create."""
    objects = by_kind_and_name(kubectl("kustomize", str(ROOT / "config" / variant)).stdout)
    deployments = {name: d["spec"]["template"]["spec"] for (kind, name), d in objects.items() if kind == "Deployment"}
    [priority_class] = [name for kind, name in objects if kind == "PriorityClass"]
    for name, pod in deployments.items():
        # a fail-closed webhook is not the first pod preempted; replicas may roll on one node
        assert pod["priorityClassName"] == priority_class, name
        assert "requiredDuringSchedulingIgnoredDuringExecution" not in str(pod.get("affinity", {})), name
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        [container] = pod["containers"]
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        }, name
    # every component's pods behind a NetworkPolicy; the webhook server's metrics on a port of their own
    selected = {
        policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
        for (kind, _), policy in objects.items()
        if kind == "NetworkPolicy"
    }
    assert selected == {"operator", "webhook"}
    # open: the HTTPS port (webhooks, guard, extender; their callers' addresses cannot be named); closed: the
    # metrics port, unless peers are listed (none are by default), and everything of the operator
    policies = {name: d["spec"] for (kind, name), d in objects.items() if kind == "NetworkPolicy"}
    assert policies["preemption-toleration-webhook"]["ingress"] == [{"ports": [{"port": "https", "protocol": "TCP"}]}]
    assert policies["preemption-toleration-operator"]["ingress"] == []
    webhook_args = deployments["preemption-toleration-webhook"]["containers"][0]["args"]
    assert "--metrics-address" in webhook_args
    # rights: on webhook configurations, only the server's own, by name; with cert-manager, none on Secrets
    rules = objects[("ClusterRole", "preemption-toleration-webhook")]["rules"]
    on_configurations = [rule for rule in rules if "admissionregistration.k8s.io" in rule["apiGroups"]]
    assert [rule["resourceNames"] for rule in on_configurations] == [["preemption-toleration", GUARD_NAME, KUEUE_NAME]]
    assert (("Role", "preemption-toleration-webhook-tls") in objects) is (variant == "default")
