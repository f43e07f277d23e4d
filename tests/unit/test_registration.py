"""What the webhook server registers, from its settings: which configurations, calling what, owned by whom."""

from __future__ import annotations

import base64
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from preemption_toleration.cli.main import build_parser
from preemption_toleration.cli.webhook_options import settings_from
from preemption_toleration.kueue.adapter.booster import HOLD_SECONDS
from preemption_toleration.manifests.webhook_configurations import GUARD_NAME, KUEUE_NAME, KUEUE_TIMEOUT_SECONDS, NAME
from preemption_toleration.webhooks.registration import Registration, owner_reference, wanted_configurations
from preemption_toleration.webhooks.self_registration import registration_of
from preemption_toleration.webhooks.settings import WebhookSettings

CA = b"-----BEGIN CERTIFICATE-----\nthe server's CA\n-----END CERTIFICATE-----\n"
IN_CLUSTER = Registration(service=("preemption-toleration", "preemption-toleration-webhook"))
VALIDATING, MUTATING = "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"


def names(configurations: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(c["kind"], c["metadata"]["name"]) for c in configurations]


CASES = [
    (
        "by default: both admission webhooks and the guard, and Kueue's deleted",
        IN_CLUSTER,
        [(VALIDATING, NAME), (MUTATING, NAME), (VALIDATING, GUARD_NAME)],
        [(VALIDATING, KUEUE_NAME)],
    ),
    (
        "admission webhooks off: only the guard, and theirs deleted",
        replace(IN_CLUSTER, admission=False),
        [(VALIDATING, GUARD_NAME)],
        [(VALIDATING, NAME), (MUTATING, NAME), (VALIDATING, KUEUE_NAME)],
    ),
    (
        "guard off: no guard, and its configuration deleted",
        replace(IN_CLUSTER, guard=False),
        [(VALIDATING, NAME), (MUTATING, NAME)],
        [(VALIDATING, GUARD_NAME), (VALIDATING, KUEUE_NAME)],
    ),
    (
        "Kueue on: the webhook on Workloads' creation too",
        replace(IN_CLUSTER, kueue=True),
        [(VALIDATING, NAME), (MUTATING, NAME), (VALIDATING, GUARD_NAME), (VALIDATING, KUEUE_NAME)],
        [],
    ),
]


@pytest.mark.parametrize(("registration", "wanted", "unwanted"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_which_configurations_are_applied_and_which_deleted(
    registration: Registration, wanted: list[tuple[str, str]], unwanted: list[tuple[str, str]]
) -> None:
    applied, deleted = wanted_configurations(registration, CA)
    assert (names(applied), deleted) == (wanted, unwanted)


def test_in_a_cluster_every_webhook_calls_the_service_with_the_ca() -> None:
    applied, _ = wanted_configurations(IN_CLUSTER, CA)
    for configuration in applied:
        for webhook in configuration["webhooks"]:
            config = webhook["clientConfig"]
            assert config["caBundle"] == base64.b64encode(CA).decode()
            assert (config["service"]["namespace"], config["service"]["name"], config["service"]["port"]) == (
                "preemption-toleration",
                "preemption-toleration-webhook",
                443,
            )


def test_locally_every_webhook_calls_the_url() -> None:
    applied, _ = wanted_configurations(Registration(url="https://127.0.0.1:8443"), CA)
    urls = {w["clientConfig"]["url"] for c in applied for w in c["webhooks"]}
    assert all(url.startswith("https://127.0.0.1:8443/") for url in urls) and len(urls) == 4


def test_the_owner_is_set_on_every_configuration() -> None:
    role = SimpleNamespace(metadata=SimpleNamespace(name="preemption-toleration-webhook", uid="1234"))
    applied, _ = wanted_configurations(IN_CLUSTER, CA, owner_reference(role))
    assert {str(c["metadata"]["ownerReferences"]) for c in applied} == {
        str(
            [
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "name": role.metadata.name,
                    "uid": "1234",
                }
            ]
        )
    }


def test_the_guard_is_registered_with_the_failure_policy_and_identities_asked_for() -> None:
    registration = replace(IN_CLUSTER, guard_failure_policy="Fail", preemptor_identities=["my-scheduler"])
    applied, _ = wanted_configurations(registration, CA)
    [guard] = [c for c in applied if c["metadata"]["name"] == GUARD_NAME]
    assert guard["webhooks"][0]["failurePolicy"] == "Fail"
    assert "'my-scheduler'" in guard["webhooks"][0]["matchConditions"][0]["expression"]


FLAGS = [
    ("no registration flag: nothing registered", [], None),
    (
        "a Service, its owner, the guard fail-closed, judging every Eviction",
        ["--register-service", "ns/svc", "--register-owner", "role", "--guard-failure-policy", "Fail"]
        + ["--eviction-preemptor-priority", "0"],
        Registration(
            service=("ns", "svc"),
            owner_cluster_role="role",
            guard_failure_policy="Fail",
            every_eviction=True,
            guard_skipped_namespaces=("kube-system", "ns"),
        ),
    ),
    (
        "admission webhooks off, guard off",
        ["--register-service", "ns/svc", "--admission-webhooks", "off", "--guard", "off"],
        Registration(
            service=("ns", "svc"), admission=False, guard=False, guard_skipped_namespaces=("kube-system", "ns")
        ),
    ),
    ("a URL (ptol run)", ["--register-url", "https://127.0.0.1:9443"], Registration(url="https://127.0.0.1:9443")),
    (
        "namespaces the guard skips, given: in place of kube-system",
        ["--register-url", "https://127.0.0.1:9443", "--guard-skip-namespace", "batch", "--guard-skip-namespace", "ml"],
        Registration(url="https://127.0.0.1:9443", guard_skipped_namespaces=("batch", "ml")),
    ),
]


@pytest.mark.parametrize(("argv", "expected"), [c[1:] for c in FLAGS], ids=[c[0] for c in FLAGS])
def test_the_flags_say_what_is_registered(argv: list[str], expected: Registration | None) -> None:
    settings = settings_from(build_parser().parse_args(["webhook", *argv]))
    assert registration_of(settings) == expected


def test_a_url_asking_for_port_0_is_registered_with_the_port_given() -> None:
    registration = registration_of(WebhookSettings(register_url="https://127.0.0.1:0"), bound_port=40123)
    assert registration is not None and registration.url == "https://127.0.0.1:40123"


def test_the_guard_never_judges_the_namespaces_skipped_by_name() -> None:
    applied, _ = wanted_configurations(replace(IN_CLUSTER, guard_skipped_namespaces=("kube-system", "ptol")), CA)
    [guard] = [c for c in applied if c["metadata"]["name"] == GUARD_NAME]
    assert guard["webhooks"][0]["namespaceSelector"]["matchExpressions"] == [
        {"key": "preemption-toleration.dev/guard", "operator": "NotIn", "values": ["disabled"]},
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "ptol"]},
    ]


def test_kueues_webhook_holds_a_creation_never_longer_than_the_api_server_waits_nor_on_a_dry_run() -> None:
    applied, _ = wanted_configurations(replace(IN_CLUSTER, kueue=True), CA)
    (webhook,) = next(c for c in applied if c["metadata"]["name"] == KUEUE_NAME)["webhooks"]
    assert webhook["timeoutSeconds"] == KUEUE_TIMEOUT_SECONDS > HOLD_SECONDS
    assert (webhook["failurePolicy"], webhook["sideEffects"]) == ("Ignore", "NoneOnDryRun")
    assert webhook["rules"][0]["operations"] == ["CREATE"] and webhook["rules"][0]["resources"] == ["workloads"]


def test_kueues_webhook_is_registered_where_the_boost_runs() -> None:
    settings = WebhookSettings(register_url="https://127.0.0.1:8443", kueue=True)
    registration = registration_of(settings)
    assert registration is not None and registration.kueue
    off = registration_of(replace(settings, guard_mode="off"))
    assert off is not None and not off.kueue, "Kueue's boost runs beside the guard's caches"
