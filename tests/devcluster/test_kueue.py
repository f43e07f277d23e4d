"""Kueue in the test bed: its manager's configuration and its webhook configurations on loopback, from
manifests shaped as Kueue's releases ship them (config/components/webhook/manifests.yaml and
config/components/manager/controller_manager_config.yaml)."""

import pytest
import yaml

from preemption_toleration.devcluster.kueue import (
    FEATURE_GATES,
    manager_config,
    webhook_configurations,
    with_private_etc,
)


def webhook(name: str, group: str, resource: str, path: str) -> dict:
    return {
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": path}},
        "failurePolicy": "Fail",
        "name": name,
        "rules": [{"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": [resource]}],
        "sideEffects": "None",
    }


MANIFESTS = yaml.safe_dump_all(
    [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "mutating-webhook-configuration"},
            "webhooks": [
                webhook("mjob.kb.io", "batch", "jobs", "/mutate-batch-v1-job"),
                webhook("mpod.kb.io", "", "pods", "/mutate--v1-pod"),
                webhook("mworkload.kb.io", "kueue.x-k8s.io", "workloads", "/mutate-kueue-x-k8s-io-v1beta2-workload"),
                webhook("mdeployment.kb.io", "apps", "deployments", "/mutate-apps-v1-deployment"),
            ],
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "validating-webhook-configuration"},
            "webhooks": [webhook("vjob.kb.io", "batch", "jobs", "/validate-batch-v1-job")],
        },
    ]
)
BASE = "https://127.0.0.1:9443"


@pytest.mark.parametrize(
    ("rule", "configuration", "name", "expected"),
    [
        (
            "Kueue's own kinds and batch Jobs are kept; pods' and Deployments' left out",
            0,
            "kueue-mutating-webhook-configuration",
            ["mjob.kb.io", "mworkload.kb.io"],
        ),
        (
            "each configuration is kept, named as Kueue's release names it",
            1,
            "kueue-validating-webhook-configuration",
            ["vjob.kb.io"],
        ),
    ],
)
def test_webhooks_kept(rule: str, configuration: int, name: str, expected: list[str]) -> None:
    found = webhook_configurations(MANIFESTS, BASE, "Q0E=")[configuration]
    assert found["metadata"] == {"name": name}, rule
    assert [hook["name"] for hook in found["webhooks"]] == expected, rule


def test_each_webhook_calls_loopback_with_our_ca() -> None:
    job = webhook_configurations(MANIFESTS, BASE + "/", "Q0E=")[0]["webhooks"][0]
    assert job["clientConfig"] == {"url": "https://127.0.0.1:9443/mutate-batch-v1-job", "caBundle": "Q0E="}
    assert job["failurePolicy"] == "Fail" and job["rules"][0]["resources"] == ["jobs"], "the rest as Kueue ships it"


@pytest.mark.parametrize(
    ("rule", "manifests", "problem"),
    [
        ("no document", "", "hold no webhook configuration"),
        ("another kind", "kind: Service\nmetadata: {name: webhook-service}\n", "hold a Service"),
        (
            "a webhook without a path",
            yaml.safe_dump(
                {
                    "kind": "ValidatingWebhookConfiguration",
                    "metadata": {"name": "v"},
                    "webhooks": [{**webhook("vjob.kb.io", "batch", "jobs", "/x"), "clientConfig": {}}],
                }
            ),
            "webhook vjob.kb.io names no path",
        ),
    ],
)
def test_manifests_kueue_does_not_ship_are_refused(rule: str, manifests: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        webhook_configurations(manifests, BASE, "Q0E=")


# as Kueue v0.19.2 ships it, its commented-out lines left out
SHIPPED = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 10
    LocalQueue.kueue.x-k8s.io: 5
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 5
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 300
  burst: 500
integrations:
  frameworks:
  - "batch/job"
  - "pod"
"""


def config_of(*args: object, **kwargs: object) -> dict:
    return yaml.safe_load(manager_config(SHIPPED, "127.0.0.1", 9443, 8081, 8443, "/tmp/certs", *args, **kwargs))


def test_manager_config_keeps_the_shipped_pace() -> None:
    """How many objects of each kind Kueue reconciles at once and its client's rate, as its release installs it
    (the binary alone reconciles one Job at a time)."""
    config = config_of()
    assert config["controller"]["groupKindConcurrency"]["Job.batch"] == 5
    assert config["controller"]["groupKindConcurrency"]["Workload.kueue.x-k8s.io"] == 10
    assert config["clientConnection"] == {"qps": 300, "burst": 500}


@pytest.mark.parametrize(
    ("rule", "shipped", "problem"),
    [
        ("not YAML of a Configuration", "kind: Deployment\n", "is not a Configuration"),
        ("empty", "", "is not a Configuration"),
        ("no controller section", "kind: Configuration\nclientConnection: {qps: 1}\n", "holds no controller"),
        (
            "neither section",
            "kind: Configuration\nwebhook: {port: 9443}\n",
            "holds no controller, clientConnection",
        ),
    ],
)
def test_a_shipped_configuration_kueue_does_not_ship_is_refused(rule: str, shipped: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        manager_config(shipped, "127.0.0.1", 9443, 8081, 8443, "/tmp/certs")


def test_manager_config_runs_on_loopback_without_leader_election_or_internal_certificates() -> None:
    config = config_of()
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and config["kind"] == "Configuration"
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["internalCertManagement"] == {"enable": False}
    assert config["webhook"] == {"host": "127.0.0.1", "port": 9443, "certDir": "/tmp/certs"}
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:8081"}
    assert config["metrics"] == {"bindAddress": "127.0.0.1:8443"}
    assert config["integrations"] == {"frameworks": ["batch/job"]}
    assert config["featureGates"] == {"PriorityBoost": True, "VisibilityOnDemand": False} == dict(FEATURE_GATES)


def test_manager_config_takes_other_feature_gates() -> None:
    """`LocalCluster.restart_kueue` runs Kueue with its PriorityBoost gate off, as a user's Kueue may be."""
    gates = {"PriorityBoost": False, "VisibilityOnDemand": False}
    config = config_of(gates)
    assert config["featureGates"] == gates


def test_manager_config_turns_fair_sharing_on_by_its_strategies() -> None:
    """Kueue's preemption by fair sharing is on when its configuration has `fairSharing` (v1beta2); off by default."""
    assert "fairSharing" not in config_of()
    config = config_of(fair_sharing=True)
    assert config["fairSharing"] == {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}


@pytest.mark.parametrize(
    ("rule", "as_root", "namespaces"),
    [
        ("root: a mount namespace alone", True, ["--mount"]),
        (
            "another user: mapped to root in a user namespace of its own",
            False,
            ["--user", "--map-root-user", "--mount"],
        ),
    ],
)
def test_kueue_runs_with_its_own_etc_laid_over_the_machines(rule: str, as_root: bool, namespaces: list[str]) -> None:
    argv = with_private_etc("/c/etc/upper", "/c/etc/work", ["/bin/kueue", "--config=/c/config.yaml"], as_root)
    assert argv[: 1 + len(namespaces)] == ["unshare", *namespaces], rule
    rest = argv[1 + len(namespaces) :]
    assert rest[:2] == ["sh", "-c"] and rest[-2:] == ["/bin/kueue", "--config=/c/config.yaml"], rule
    assert rest[2] == (
        'mount -t overlay overlay -o lowerdir=/etc,upperdir=/c/etc/upper,workdir=/c/etc/work /etc && exec "$0" "$@"'
    ), "the manager keeps the PID it was started with"


@pytest.mark.parametrize("upper", ["/a,b/upper", "/a:b/upper"])
def test_an_overlay_directory_the_mount_options_cannot_hold_is_refused(upper: str) -> None:
    with pytest.raises(ValueError, match="cannot hold"):
        with_private_etc(upper, "/c/work", ["/bin/kueue"], as_root=True)
