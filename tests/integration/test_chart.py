"""The Helm chart (charts/preemption-toleration), with the real helm of the test bed: lint, the renderings of
each meaningful combination of values, the schema's refusals, its agreement with config/, and (in
test_chart_install.py) an install, upgrade and uninstall on the local control plane."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preemption_toleration.cli import dev_manifests
from preemption_toleration.cli.main import build_parser
from preemption_toleration.cli.webhook_options import settings_from
from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.guard.verdicts import DEFAULT_PREEMPTOR_IDENTITIES
from preemption_toleration.manifests.webhook_configurations import guard_match_expression
from preemption_toleration.webhooks.registration import wanted_configurations
from preemption_toleration.webhooks.self_registration import registration_of
from tests.integration.components import INSTALL_NAMESPACE, ROOT, rbac_installed
from tests.integration.conftest import Kubectl
from tests.integration.helpers import SLOW_SECONDS, by_kind_and_name, with_local_tls_files

pytestmark = pytest.mark.integration

CHART = ROOT / "charts" / "preemption-toleration"
IMAGE = ("--set", "image.repository=preemption-toleration")  # required: no image is published
KUBE_VERSION = "1.37.2"
# Kinds of other projects' CRDs, not installed on the local control plane.
FOREIGN_KINDS = {"Issuer", "ClusterIssuer", "Certificate", "ServiceMonitor"}
RELEASE_LABELS = ("app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "helm.sh/chart")

Objects = dict[tuple[str, str], dict[str, Any]]


@pytest.fixture(scope="module")
def helm(cluster: LocalCluster) -> Path:
    return cluster.toolchain.helm


def run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=SLOW_SECONDS, check=False)


def template(helm: Path, *args: str) -> Objects:
    """What an install of the chart amounts to: the objects helm renders, and the webhook configurations
    the webhook server registers once ready, run with the rendered Deployment's arguments."""
    objects = rendered(helm, *args)
    return {**objects, **registered_by(objects)}


def rendered(helm: Path, *args: str) -> Objects:
    """The objects helm renders: never a webhook configuration (the server registers its own)."""
    result = run_helm(
        helm,
        "template",
        "preemption-toleration",
        str(CHART),
        "--namespace",
        INSTALL_NAMESPACE,
        "--kube-version",
        KUBE_VERSION,
        *IMAGE,
        *args,
    )
    assert result.returncode == 0, result.stderr
    objects = by_kind_and_name(result.stdout)
    assert not [kind for kind, _ in objects if kind.endswith("WebhookConfiguration")], "the server registers them"
    return objects


def registered_by(objects: Objects) -> Objects:
    """The configurations the webhook server, given the rendered Deployment's arguments, registers."""
    args = container(objects, WEBHOOK)["args"]
    settings = settings_from(build_parser().parse_args(with_local_tls_files(args)))
    registration = registration_of(settings)
    assert registration is not None and registration.service == (INSTALL_NAMESPACE, WEBHOOK), args
    assert registration.owner_cluster_role == WEBHOOK and ("ClusterRole", WEBHOOK) in objects
    wanted, _ = wanted_configurations(registration, b"the server's CA")
    return {(d["kind"], d["metadata"]["name"]): d for d in wanted}


def container(objects: Objects, deployment: str) -> dict[str, Any]:
    [only] = objects[("Deployment", deployment)]["spec"]["template"]["spec"]["containers"]
    return dict(only)


def pod_spec(objects: Objects, deployment: str) -> dict[str, Any]:
    return dict(objects[("Deployment", deployment)]["spec"]["template"]["spec"])


def guard(objects: Objects) -> dict[str, Any]:
    return dict(objects[("ValidatingWebhookConfiguration", "preemption-toleration-guard")]["webhooks"][0])


WEBHOOK, OPERATOR = "preemption-toleration-webhook", "preemption-toleration-operator"
ADMISSION = {
    ("ValidatingWebhookConfiguration", "preemption-toleration"),
    ("MutatingWebhookConfiguration", "preemption-toleration"),
}
GUARD = ("ValidatingWebhookConfiguration", "preemption-toleration-guard")


def _defaults(objects: Objects) -> None:
    for component in (WEBHOOK, OPERATOR):
        opted_in = "--kueue" in container(objects, component)["args"] or _kueue_rights(objects, component)
        assert not opted_in, f"Kueue's is opt-in: {component}"
    assert ADMISSION <= set(objects) and GUARD in objects
    _drains_allowed(objects)
    args = container(objects, WEBHOOK)["args"]
    assert args[:5] == ["webhook", "--tls-secret", f"{INSTALL_NAMESPACE}/webhook-tls", "--service", WEBHOOK]
    assert args[-2:] == ["--guard", "enforce"] and guard(objects)["failurePolicy"] == "Ignore"
    assert ("Role", "preemption-toleration-webhook-tls") in objects
    # the guard's one decision per victim group, shared by the replicas through Leases of its namespace
    [rule] = objects[GROUP_DECISIONS_ROLE]["rules"]
    assert rule["resources"] == ["leases"] and set(rule["verbs"]) == {"create", "get", "list", "update", "delete"}
    assert args[args.index("--lease-namespace") + 1] == INSTALL_NAMESPACE
    # the rights to register its own configurations, by name, and to read its owner
    assert _configuration_rights(objects) == {
        f"{resource}/{name}:{verb}"
        for resource in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")
        for name in ("preemption-toleration", "preemption-toleration-guard", "preemption-toleration-kueue")
        for verb in ("create", "patch", "delete")
    }
    assert ("PodDisruptionBudget", WEBHOOK) in objects and ("ClusterKopfPeering", "preemption-toleration") in objects
    assert container(objects, WEBHOOK)["image"] == "preemption-toleration:0.1.0"  # the appVersion
    # a fail-closed webhook is not the first pod preempted: both components run in a class of the chart's
    assert objects[("PriorityClass", "preemption-toleration-critical")]["value"] == 1_000_000_000
    for deployment in (WEBHOOK, OPERATOR):
        assert pod_spec(objects, deployment)["priorityClassName"] == "preemption-toleration-critical"
    # a spread that lets two replicas roll on one node, not a required anti-affinity
    webhook_pods = pod_spec(objects, WEBHOOK)
    assert "affinity" not in webhook_pods
    spread = webhook_pods["topologySpreadConstraints"]
    assert [c["topologyKey"] for c in spread] == ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]
    assert {c["whenUnsatisfiable"] for c in spread} == {"ScheduleAnyway"}
    # /metrics on a port of its own, closed by the NetworkPolicy; the HTTPS port open (the API server's
    # and kube-scheduler's addresses cannot be named)
    args = container(objects, WEBHOOK)["args"]
    assert args[args.index("--metrics-address") + 1] == "0.0.0.0:8081"
    https_only = [{"ports": [{"port": "https", "protocol": "TCP"}]}]
    assert objects[("NetworkPolicy", WEBHOOK)]["spec"]["ingress"] == https_only
    assert objects[("NetworkPolicy", OPERATOR)]["spec"]["ingress"] == []
    assert not {kind for kind, _ in objects} & FOREIGN_KINDS


def _cert_manager(objects: Objects) -> None:
    args = container(objects, WEBHOOK)["args"]
    assert "--cert-file" in args and "--tls-secret" not in args
    # the server registers the CA of the Secret cert-manager writes: a CA of its own, so a renewal of the
    # serving certificate keeps the caBundle registered valid
    assert args[args.index("--ca-file") + 1] == "/tls/ca.crt"
    assert objects[("Issuer", "preemption-toleration-selfsigned")]["spec"] == {"selfSigned": {}}
    ca = objects[("Certificate", "preemption-toleration-webhook-ca")]["spec"]
    assert ca["isCA"] is True and ca["issuerRef"] == {"name": "preemption-toleration-selfsigned", "kind": "Issuer"}
    assert objects[("Issuer", "preemption-toleration-ca")]["spec"] == {"ca": {"secretName": ca["secretName"]}}
    serving = objects[("Certificate", WEBHOOK)]["spec"]
    assert serving["issuerRef"] == {"name": "preemption-toleration-ca", "kind": "Issuer"}
    assert serving["dnsNames"][0] == f"{WEBHOOK}.{INSTALL_NAMESPACE}.svc"
    # the rights self-managed TLS needs are gone: its Secret
    assert ("Role", "preemption-toleration-webhook-tls") not in objects


def _configuration_rights(objects: Objects) -> set[str]:
    """The webhook server's rights on webhook configurations, as "resource/name:verb"."""
    return {
        f"{resource}/{name}:{verb}"
        for rule in objects[("ClusterRole", WEBHOOK)]["rules"]
        if "admissionregistration.k8s.io" in rule["apiGroups"]
        for resource in rule["resources"]
        for name in rule.get("resourceNames", ["*"])
        for verb in rule["verbs"]
    }


def _cluster_issuer(objects: Objects) -> None:
    assert ("Issuer", "preemption-toleration-selfsigned") not in objects
    assert ("Certificate", "preemption-toleration-webhook-ca") not in objects
    assert objects[("Certificate", WEBHOOK)]["spec"]["issuerRef"] == {"name": "corp-ca", "kind": "ClusterIssuer"}


def _audit_fail_closed(objects: Objects) -> None:
    assert container(objects, WEBHOOK)["args"][-2:] == ["--guard", "audit"]
    assert "--guard-failure-policy" in container(objects, WEBHOOK)["args"]
    assert guard(objects)["failurePolicy"] == "Fail"


def _drains_judged(objects: Objects) -> None:
    assert container(objects, WEBHOOK)["args"][-2:] == ["--eviction-preemptor-priority", "0"]
    [condition] = guard(objects)["matchConditions"]
    assert condition["expression"] == guard_match_expression(DEFAULT_PREEMPTOR_IDENTITIES, every_eviction=True)


def _drains_allowed(objects: Objects) -> None:
    assert "--eviction-preemptor-priority" not in container(objects, WEBHOOK)["args"]
    [condition] = guard(objects)["matchConditions"]
    assert condition["expression"] == guard_match_expression(DEFAULT_PREEMPTOR_IDENTITIES)


IDENTITIES = ("system:kube-scheduler", "system:serviceaccount:kube-system:batch-scheduler", "o'brien \\ x")


def _preemptor_identities(objects: Objects) -> None:
    args = container(objects, WEBHOOK)["args"]
    assert [args[i + 1] for i, arg in enumerate(args) if arg == "--preemptor-identity"] == list(IDENTITIES)
    [condition] = guard(objects)["matchConditions"]
    assert condition["expression"] == guard_match_expression(IDENTITIES)


GROUP_DECISIONS_ROLE = ("Role", "preemption-toleration-webhook-group-decisions")


def _guard_off(objects: Objects) -> None:
    assert GUARD not in objects and ADMISSION <= set(objects) and GROUP_DECISIONS_ROLE not in objects
    assert container(objects, WEBHOOK)["args"][-2:] == ["--guard", "off"]


def _extender_off(objects: Objects) -> None:
    assert container(objects, WEBHOOK)["args"][-4:] == ["--guard", "enforce", "--extender", "off"]
    assert GUARD in objects
    # no expiry nudge, so no write on pods
    rules = objects[("ClusterRole", WEBHOOK)]["rules"]
    assert not [rule for rule in rules if "pods/status" in rule["resources"]]


def _pod_rights(objects: Objects) -> set[str]:
    """The webhook server's verbs on pods and pods/status, as "resource:verb"."""
    return {
        f"{resource}:{verb}"
        for rule in objects[("ClusterRole", WEBHOOK)]["rules"]
        for resource in rule["resources"]
        if resource in ("pods", "pods/status")
        for verb in rule["verbs"]
    }


STEERING_ROLE = ("Role", "preemption-toleration-webhook-steering")


def _steering_on(objects: Objects) -> None:
    args = container(objects, WEBHOOK)["args"]
    assert args[-4:] == ["--extender", "off", "--steering", "on"]
    assert args[args.index("--lease-namespace") + 1] == "preemption-toleration"
    assert _pod_rights(objects) == {"pods:list", "pods:watch", "pods:get", "pods:delete", "pods/status:patch"}
    [rule] = objects[STEERING_ROLE]["rules"]
    assert (
        rule["resources"] == ["leases"] and objects[STEERING_ROLE]["metadata"]["namespace"] == "preemption-toleration"
    )


def _steering_audit(objects: Objects) -> None:
    """Audit writes nothing but Events: none of steering's rights."""
    assert container(objects, WEBHOOK)["args"][-2:] == ["--steering", "audit"]
    assert _pod_rights(objects) == {"pods:list", "pods:watch"}
    assert STEERING_ROLE not in objects


def _kueue_rights(objects: Objects, component: str) -> list[tuple[list[str], list[str]]]:
    rules = objects[("ClusterRole", component)]["rules"]
    return [(rule["resources"], rule["verbs"]) for rule in rules if "kueue.x-k8s.io" in rule["apiGroups"]]


def _kueue_on(objects: Objects) -> None:
    """Kueue's boost: the server asked for it, with the rights to watch and patch Workloads and to watch
    WorkloadPriorityClasses and ClusterQueues, and no others; the operator asked to govern WorkloadPriorityClasses,
    with the rights to patch them."""
    assert container(objects, WEBHOOK)["args"][-2:] == ["--kueue", "on"]
    assert _kueue_rights(objects, WEBHOOK) == [
        (["workloads"], ["list", "watch", "patch"]),
        (["workloadpriorityclasses"], ["list", "watch"]),
        (["clusterqueues"], ["list", "watch"]),
    ]
    args = container(objects, OPERATOR)["args"]
    assert args[args.index("--kueue") + 1] == "on"
    assert _kueue_rights(objects, OPERATOR) == [(["workloadpriorityclasses"], ["get", "list", "watch", "patch"])]


def _admission_off(objects: Objects) -> None:
    assert not ADMISSION & set(objects) and GUARD in objects


def _operator_off(objects: Objects) -> None:
    assert not [
        key
        for key, d in objects.items()
        if d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "operator"
    ]
    assert ("ClusterKopfPeering", "preemption-toleration") not in objects and ("Deployment", WEBHOOK) in objects


def _admission_policy(objects: Objects) -> None:
    assert ("ValidatingAdmissionPolicy", "preemption-toleration-priorityclasses") in objects
    assert ("ValidatingAdmissionPolicyBinding", "preemption-toleration-priorityclasses") in objects


def _service_monitors(objects: Objects) -> None:
    monitors = {name for kind, name in objects if kind == "ServiceMonitor"}
    assert monitors == {WEBHOOK, OPERATOR}
    endpoint = objects[("ServiceMonitor", WEBHOOK)]["spec"]["endpoints"][0]
    assert endpoint["port"] == "metrics" and "scheme" not in endpoint  # /metrics on its own port, plain HTTP
    webhook_policy = objects[("NetworkPolicy", WEBHOOK)]["spec"]["ingress"]
    assert webhook_policy[1] == {"from": [MONITORING], "ports": [{"port": "metrics", "protocol": "TCP"}]}
    assert objects[("NetworkPolicy", OPERATOR)]["spec"]["ingress"] == [webhook_policy[1]]
    assert objects[("ServiceMonitor", WEBHOOK)]["metadata"]["labels"]["release"] == "prometheus"
    assert ("Service", "preemption-toleration-operator-metrics") in objects


def _no_service_monitor_without_its_crd(objects: Objects) -> None:
    assert not [key for key in objects if key[0] == "ServiceMonitor"]


SPREAD = {
    "maxSkew": 1,
    "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "webhook"}},
}


def _scheduling(objects: Objects) -> None:
    for deployment in (WEBHOOK, OPERATOR):
        spec = pod_spec(objects, deployment)
        assert spec["nodeSelector"] == {"node-role.example/system": "true"}
        assert spec["tolerations"] == [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
        assert spec["priorityClassName"] == "system-cluster-critical"

        assert spec["imagePullSecrets"] == [{"name": "registry"}]
        assert container(objects, deployment)["image"] == "registry.example/ptol:0.2.0"
    assert ("PodDisruptionBudget", WEBHOOK) not in objects
    assert not [key for key in objects if key[0] == "PriorityClass"]  # Kubernetes' own class: named, not made
    assert pod_spec(objects, WEBHOOK)["topologySpreadConstraints"] == [SPREAD]
    assert objects[("Deployment", WEBHOOK)]["spec"]["replicas"] == 3
    assert container(objects, WEBHOOK)["args"][-2:] == ["--retry-hold-seconds", "0.5"]
    # Helm merges maps: the limits stay unless set to null
    assert container(objects, WEBHOOK)["resources"] == {
        "requests": {"cpu": "1", "memory": "384Mi"},
        "limits": {"memory": "512Mi"},
    }


MONITORING = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
CertManager = ("--set", "certificates.mode=cert-manager")
Steering = ("--set", "guard.steering=on", "--set", "extender.enabled=false")
SteeringAudit = ("--set", "guard.steering=audit", "--set", "extender.enabled=false")
Kueue = ("--set", "kueue.enabled=true")
COMBINATIONS: dict[str, tuple[tuple[str, ...], Callable[[Objects], None]]] = {
    "defaults": ((), _defaults),
    "cert-manager with its own Issuer": (CertManager, _cert_manager),
    "cert-manager with a ClusterIssuer": (
        (*CertManager, "--set", "certificates.certManager.issuerRef.name=corp-ca")
        + ("--set", "certificates.certManager.issuerRef.kind=ClusterIssuer"),
        _cluster_issuer,
    ),
    "guard audit, fail closed": (
        ("--set", "guard.mode=audit", "--set", "guard.failurePolicy=Fail"),
        _audit_fail_closed,
    ),
    # 0 is a priority: the chart must not take it for "not set"
    "drains judged as preemptions by priority 0": (("--set", "guard.evictionPreemptorPriority=0"), _drains_judged),
    "guard off": (("--set", "guard.enabled=false"), _guard_off),
    "a second scheduler's identity, quotes and backslashes escaped in the CEL": (
        ("--set-json", f"guard.preemptorIdentities={json.dumps(list(IDENTITIES))}"),
        _preemptor_identities,
    ),
    "extender endpoint off": (("--set", "extender.enabled=false"), _extender_off),
    "steering on, a managed cluster's install": (Steering, _steering_on),
    "steering in audit": (("--set", "guard.steering=audit", "--set", "extender.enabled=false"), _steering_audit),
    "Kueue's boost": (Kueue, _kueue_on),
    "admission webhooks off": (("--set", "admissionWebhooks.enabled=false"), _admission_off),
    "operator off": (("--set", "operator.enabled=false"), _operator_off),
    "ValidatingAdmissionPolicy": (("--set", "admissionPolicy.enabled=true"), _admission_policy),
    "ServiceMonitors": (
        ("--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.labels.release=prometheus")
        + ("--set-json", f"networkPolicy.metricsFrom={json.dumps([MONITORING])}")
        + ("--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"),
        _service_monitors,
    ),
    "ServiceMonitors asked for where their CRD is not served": (
        ("--set", "serviceMonitor.enabled=true"),
        _no_service_monitor_without_its_crd,
    ),
    "scheduling, image, replicas, resources, extra arguments": (
        ("--set-json", 'nodeSelector={"node-role.example/system": "true"}')
        + ("--set-json", 'tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]')
        + ("--set", "priorityClassName=system-cluster-critical", "--set", "imagePullSecrets[0].name=registry")
        + ("--set", "image.repository=registry.example/ptol", "--set", "image.tag=0.2.0")
        + ("--set", "webhook.podDisruptionBudget.enabled=false", "--set", "webhook.replicas=3")
        + ("--set-json", 'webhook.resources={"requests": {"cpu": "1", "memory": "384Mi"}}')
        + ("--set-json", 'webhook.extraArgs=["--retry-hold-seconds", "0.5"]')
        + ("--set-json", f"webhook.topologySpreadConstraints={json.dumps([SPREAD])}"),
        _scheduling,
    ),
}


@pytest.mark.parametrize("combination", list(COMBINATIONS))
def test_helm_lint_passes(helm: Path, combination: str) -> None:
    args = [arg for arg in COMBINATIONS[combination][0] if not arg.startswith("monitoring.coreos.com")]
    if "--api-versions" in args:
        args.remove("--api-versions")
    result = run_helm(helm, "lint", "--strict", str(CHART), "--kube-version", KUBE_VERSION, *IMAGE, *args)
    assert result.returncode == 0 and "0 chart(s) failed" in result.stdout, result.stdout + result.stderr


@pytest.fixture(scope="module")
def installed(cluster: LocalCluster) -> Iterator[None]:
    with rbac_installed(cluster):  # the CRDs and the namespace the dry runs need
        yield


@pytest.mark.parametrize("combination", list(COMBINATIONS))
def test_each_combination_renders_what_it_says_and_the_api_server_accepts_it(
    helm: Path, installed: None, kubectl: Kubectl, combination: str
) -> None:
    args, check = COMBINATIONS[combination]
    objects = template(helm, "--include-crds", *args)
    check(objects)
    ours = [d for (kind, _), d in objects.items() if kind not in FOREIGN_KINDS]
    result = kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(ours), check=False)
    assert result.returncode == 0 and result.stdout.count("(server dry run)") == len(ours), result.stderr


SCHEMA_REFUSALS = [
    ("guard.failurePolicy=Sometimes", "at '/guard/failurePolicy': value must be one of 'Ignore', 'Fail'"),
    ("webhook.replicas=two", "at '/webhook/replicas': got string, want integer"),
    ("gaurd.enabled=false", "additional properties 'gaurd' not allowed"),
    ("certificates.mode=certmanager", "at '/certificates/mode': value must be one of 'self-managed', 'cert-manager'"),
    (
        "certificates.certManager.issuerRef.kind=ClusterIssuer",
        "at '/certificates/certManager/issuerRef': missing property 'name'",
    ),
    ("guard.mode=dry-run", "at '/guard/mode': value must be one of 'enforce', 'audit'"),
    ("operator.replicas=-1", "at '/operator/replicas': minimum: got -1, want 0"),
    ("webhook.extraArgs=--verbose", "at '/webhook/extraArgs': got string, want array"),
    ("guard.preemptorIdentities[0]=a\tb", "at '/guard/preemptorIdentities/0': 'a\\tb' does not match pattern"),
    (
        "webhook.extraArgs[0]=--preemptor-identity=x",
        "--preemptor-identity=x must agree with the guard's matchConditions: set guard.preemptorIdentities",
    ),
    ("webhook.metricsPort=0", "at '/webhook/metricsPort': minimum: got 0, want 1"),
    ("guard.evictionPreemptorPriority=3000000000", "at '/guard/evictionPreemptorPriority': maximum:"),
    ("guard.steering=yes", "at '/guard/steering': value must be one of 'off', 'audit', 'on'"),
    (
        "webhook.extraArgs[0]=--steering=on",
        "--steering=on must agree with the webhook server's rights: set guard.steering instead",
    ),
    ("guard.steering=on,guard.enabled=false", "guard.steering acts on the guard's refusals: it needs guard.enabled"),
    ("kueue.enabled=true,guard.enabled=false", "kueue.enabled reads the guard's cache of pods: it needs guard.enabled"),
    ("webhook.extraArgs[0]=--kueue=on", "--kueue=on must agree with the webhook server's rights: set kueue.enabled"),
    (
        "guard.steering=on,guard.mode=audit",
        "guard.steering acts on the guard's refusals: it needs guard.mode=enforce, not audit",
    ),
    # values that render an install that breaks
    (
        "webhook.replicas=1",
        "minAvailable: 1 with webhook.replicas=1 allows no disruption, so node drains would hang",
    ),
    (
        "webhook.podDisruptionBudget.minAvailable=2",
        "minAvailable: 2 with webhook.replicas=2 allows no disruption, so node drains would hang",
    ),
    (
        "webhook.podDisruptionBudget.minAvailable=100%",
        "minAvailable: 100% of 2 replicas allows no disruption, so node drains would hang",
    ),
    ("webhook.podDisruptionBudget.minAvailable=150%", "minAvailable: 150% is more than every replica"),
    ("webhook.metricsPort=8443", "webhook.metricsPort: 8443 is the webhook server's HTTPS port"),
]


@pytest.mark.parametrize(("value", "message"), SCHEMA_REFUSALS, ids=[value for value, _ in SCHEMA_REFUSALS])
def test_the_schema_refuses_a_mistyped_value_with_its_path(helm: Path, value: str, message: str) -> None:
    result = run_helm(helm, "template", "x", str(CHART), "--kube-version", KUBE_VERSION, *IMAGE, "--set", value)
    assert result.returncode != 0 and message in result.stderr, result.stderr


def test_the_chart_refuses_an_image_left_unnamed(helm: Path) -> None:
    """No image is published: an install that names none would never run, so it is refused, saying what to set."""
    result = run_helm(helm, "template", "x", str(CHART), "--kube-version", KUBE_VERSION)
    assert result.returncode != 0, result.stdout
    assert "image.repository: name the image you built from the Dockerfile and pushed" in result.stderr, result.stderr


def test_the_chart_refuses_a_kubernetes_older_than_the_oldest_supported_minor(helm: Path) -> None:
    result = run_helm(helm, "template", "x", str(CHART), "--kube-version", "1.34.3", *IMAGE)
    assert result.returncode != 0 and "chart requires kubeVersion: >=1.35.0-0" in result.stderr, result.stderr


def test_the_generated_files_of_config_and_the_chart_are_current(helm: Path) -> None:
    """One source: what `ptol dev manifests` would write is what is committed, and each variant's
    kustomization.yaml lists its delete patches."""
    expected = dev_manifests.all_files(helm, ROOT)
    assert dev_manifests.stale(expected, ROOT) == [], "run `ptol dev manifests`"
    assert dev_manifests.unlisted(expected, ROOT) == []


def without_release_marks(objects: Objects) -> Objects:
    for document in objects.values():
        labels = document["metadata"].get("labels", {})
        for label in RELEASE_LABELS:
            labels.pop(label, None)
        annotations = document["metadata"].get("annotations", {})
        annotations.pop("helm.sh/resource-policy", None)
        if not annotations:
            document["metadata"].pop("annotations", None)
    return objects


AGREEMENT = [
    ("default", ()),
    ("certmanager", CertManager),
    ("steering", Steering),
    ("steering-audit", SteeringAudit),
    ("kueue", Kueue),
]


@pytest.mark.parametrize(("variant", "values"), AGREEMENT, ids=[variant for variant, _ in AGREEMENT])
def test_kustomize_and_helm_install_the_same_objects(
    helm: Path, kubectl: Kubectl, variant: str, values: tuple[str, ...]
) -> None:
    """config/'s variant and the chart with the matching values: the same objects, but for the Namespace
    (Helm's is the release's, made by `--create-namespace`) and the marks of a Helm release."""
    kustomized = by_kind_and_name(kubectl("kustomize", str(ROOT / "config" / variant)).stdout)
    assert kustomized.pop(("Namespace", INSTALL_NAMESPACE))
    charted = without_release_marks(rendered(helm, "--include-crds", *values))
    assert sorted(kustomized) == sorted(charted)
    for key, document in kustomized.items():
        assert document == charted[key], key


def test_the_admission_policy_component_is_the_charts_admission_policy(helm: Path, kubectl: Kubectl) -> None:
    component = by_kind_and_name(
        (ROOT / "config/components/validating-admission-policy/admission-policy.yaml").read_text()
    )
    charted = without_release_marks(
        rendered(helm, "--set", "admissionPolicy.enabled=true", "--show-only", "templates/admission-policy.yaml")
    )
    assert component == charted
