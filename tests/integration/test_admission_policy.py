"""The ValidatingAdmissionPolicy component and the CRD's rules in the real API server: each row of the
PriorityClass rule table is refused by the policy alone (no webhook registered) and by the webhook alone,
with the same message; every valid class passes both; bad policies are refused by the CRD's rules with the
webhook down.

The policy is the committed one; its binding here matches only classes labelled for this module, so the
other tests sharing the API server never meet it. The tests that need the webhook down come first, and say
so if the webhook is up. Classes are renamed per run and deleted at the end.
"""

from __future__ import annotations

import copy
import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.manifests.admission_policy import POLICY_NAME, admission_policy_binding
from preemption_toleration.manifests.webhook_configurations import NAME as WEBHOOK_CONFIGURATION
from preemption_toleration.validation.priority_class import check_priority_class
from tests.integration.components import ROOT, RunProcess, install_crd, ptol_run_fixture
from tests.integration.conftest import Kubectl
from tests.integration.helpers import denied, unique_name
from tests.integration.objects import MIN, TOL, apply, policy_manifest
from tests.unit.test_admission_policy import POLICY_RULES, SERVER_RULES
from tests.unit.test_priority_class_rules import CLEAN, RULES

pytestmark = pytest.mark.integration

COMPONENT = ROOT / "config" / "components" / "validating-admission-policy" / "admission-policy.yaml"
LABEL = "preemption-toleration.dev/admission-policy-test"
POLICY_DENIED = f"ValidatingAdmissionPolicy '{POLICY_NAME}' with binding '{POLICY_NAME}' denied request: "
WEBHOOK = "priorityclasses.validate.preemption-toleration.dev"
EITHER = f"did you mean {MIN} or {TOL}?"  # the policy cannot find the nearest key; it names both


@pytest.fixture(scope="module")
def created(kubectl: Kubectl) -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        kubectl("delete", "priorityclass", name, "--ignore-not-found", "--wait=false", check=False)


def _probe(kubectl: Kubectl) -> subprocess.CompletedProcess[str]:
    klass = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": unique_name("probe"), "labels": {LABEL: "policy"}, "annotations": {MIN: "10k"}},
        "value": 1,
    }
    return kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(klass), check=False)


@pytest.fixture(scope="module")
def admission_policy(cluster: LocalCluster, kubectl: Kubectl) -> Iterator[None]:
    """The committed policy, bound to this module's labelled classes; enforced (which takes a moment after
    creation) before the first test, removed after the last."""
    install_crd(cluster)
    policy, _ = yaml.safe_load_all(COMPONENT.read_text())
    binding = admission_policy_binding({"matchLabels": {LABEL: "policy"}})
    apply(kubectl, yaml.safe_dump_all([policy, binding]))
    try:
        deadline = time.monotonic() + 60
        while POLICY_DENIED not in (probe := _probe(kubectl)).stderr:
            assert time.monotonic() < deadline, f"the policy is not enforced: {probe.stdout}{probe.stderr}"
            time.sleep(0.5)
        yield
    finally:
        kubectl("delete", "validatingadmissionpolicybinding", POLICY_NAME, "--ignore-not-found", check=False)
        kubectl("delete", "validatingadmissionpolicy", POLICY_NAME, "--ignore-not-found", check=False)


@pytest.fixture
def webhook_down(admission_policy: None, kubectl: Kubectl) -> None:
    found = kubectl("get", "validatingwebhookconfiguration", WEBHOOK_CONFIGURATION, "--ignore-not-found", "-o", "name")
    assert not found.stdout.strip(), "the webhook is registered: run this module's tests in file order"


components = ptol_run_fixture("--resync-seconds", "3")


# ------------------------------------------------------------------------- the table, live


def _renamed(klass: dict[str, Any], path: str) -> dict[str, Any]:
    """The row's class under a fresh name (labelled for the policy's binding on the policy's path)."""
    live = copy.deepcopy(klass)
    live.setdefault("apiVersion", "scheduling.k8s.io/v1")
    live.setdefault("kind", "PriorityClass")
    metadata = live.get("metadata")
    if isinstance(metadata, dict):
        metadata["name"] = unique_name(str(metadata.get("name") or "class"))
        if path == "policy" and isinstance(metadata.get("labels", {}), dict):
            metadata["labels"] = {**metadata.get("labels", {}), LABEL: "policy"}
    return live


def _name(klass: dict[str, Any]) -> str:
    metadata = klass.get("metadata")
    return str(metadata.get("name")) if isinstance(metadata, dict) else ""


def _words(words: list[str], original: dict[str, Any], live: dict[str, Any]) -> list[str]:
    return [word.replace(f'"{_name(original)}"', f'"{_name(live)}"') for word in words]


def _create(kubectl: Kubectl, created: list[str], klass: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    if _name(klass):
        created.append(_name(klass))
    return kubectl("create", "-f", "-", input=json.dumps(klass), check=False)


def policy_refusal(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stdout
    assert POLICY_DENIED in result.stderr, result.stderr
    return result.stderr.split(POLICY_DENIED, 1)[1].strip()


def expected_message(klass: dict[str, Any], path: str) -> str:
    """The rules' message for the class under its live name; the policy names both keys for a typo."""
    message = " ".join(f.message for f in check_priority_class(klass) if f.is_error)
    if path == "policy" and "did you mean" in message:
        return message.rsplit("did you mean ", 1)[0] + EITHER
    return message


LONG = [
    # beyond the table: what the policy must get exactly right on long values, and a cost it must stay under
    ("a long non-ASCII value is cut at 64 characters", "é" * 70),
    ("a long value past the range", "1" * 100_000),
]
ADMITTED_LONG = "0" * 100_000 + "10000"  # Go reads it as 10000; the webhook only warns


TABLE = [pytest.param(row, id=f"{row[0]}-{i}") for i, row in enumerate(RULES)]


@pytest.mark.parametrize("row", TABLE)
def test_the_policy_alone_refuses_each_row_and_passes_the_rest(
    webhook_down: None, kubectl: Kubectl, created: list[str], row: tuple[str, dict[str, Any], Any, list[str]]
) -> None:
    rule, klass, severity, words = row
    live = _renamed(klass, "policy")
    result = _create(kubectl, created, live)
    if rule in POLICY_RULES:
        message = policy_refusal(result)
        assert message == expected_message(live, "policy")
        assert all(word in message for word in _words(words, klass, live) if "did you mean" not in word)
    elif rule in SERVER_RULES:  # the API server's own checks refuse it before any admission plugin
        assert result.returncode != 0 and POLICY_DENIED not in result.stderr, result.stderr
    else:  # warnings: the webhook's alone
        assert result.returncode == 0 and "Warning" not in result.stderr, result.stderr


def valid_class_passes(kubectl: Kubectl, created: list[str], path: str, klass: dict[str, Any]) -> None:
    if _name(klass).startswith("system-"):  # Kubernetes' own class: judged as an update, not written
        live = copy.deepcopy(klass)
        if path == "policy":
            live["metadata"]["labels"] = {LABEL: "policy"}
        result = kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(live), check=False)
    else:
        result = _create(kubectl, created, _renamed(klass, path))
    assert result.returncode == 0, result.stderr


def long_values_are_judged_alike(kubectl: Kubectl, created: list[str], path: str) -> None:
    for case, value in LONG:
        live = _renamed({"metadata": {"name": "long", "annotations": {MIN: value}}, "value": 8000}, path)
        result = _create(kubectl, created, live)
        message = policy_refusal(result) if path == "policy" else denied(result, WEBHOOK).strip()
        assert message == expected_message(live, path), case
    live = _renamed({"metadata": {"name": "padded", "annotations": {MIN: ADMITTED_LONG}}, "value": 8000}, path)
    assert _create(kubectl, created, live).returncode == 0


@pytest.mark.parametrize(("case", "klass"), CLEAN, ids=[c[0] for c in CLEAN])
def test_the_policy_passes_every_valid_class(
    webhook_down: None, kubectl: Kubectl, created: list[str], case: str, klass: dict[str, Any]
) -> None:
    valid_class_passes(kubectl, created, "policy", klass)


def test_the_policy_judges_long_values_as_the_webhook(webhook_down: None, kubectl: Kubectl, created: list[str]) -> None:
    long_values_are_judged_alike(kubectl, created, "policy")


# ------------------------------------------------------------------------- updates and policies, webhook down


def test_an_update_is_refused_only_for_an_error_it_brings(
    webhook_down: None, kubectl: Kubectl, created: list[str]
) -> None:
    """A class that was wrong before the policy (here: before it was labelled) can still be updated."""
    name = unique_name("already-wrong")
    klass = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": 1}
    klass["metadata"]["annotations"] = {MIN: "10k"}
    assert _create(kubectl, created, klass).returncode == 0  # unlabelled, and no webhook: nothing judges it
    kubectl("label", "priorityclass", name, f"{LABEL}=policy")
    kubectl("annotate", "priorityclass", name, "team=a")
    result = kubectl("annotate", "--overwrite", "priorityclass", name, f"{MIN}=9k", check=False)
    assert policy_refusal(result).startswith(f'PriorityClass "{name}": annotation {MIN}="9k" is not a base-10')
    kubectl("annotate", "--overwrite", "priorityclass", name, f"{MIN}=10000")


POLICIES = [
    # (case, spec, what the API server says)
    (
        "both targets",
        {"priorityClassName": "x", "priorityClassSelector": {"matchLabels": {"a": "b"}}, "tolerationSeconds": 1},
        ["spec: Invalid value", "spec sets both priorityClassName and priorityClassSelector.", "exactly one"],
    ),
    (
        "no target",
        {"minimumPreemptablePriority": 1},
        ["spec sets neither of priorityClassName and priorityClassSelector. Fix: set exactly one of them."],
    ),
    (
        "an empty selector",
        {"priorityClassSelector": {}, "minimumPreemptablePriority": 1},
        ["spec.priorityClassSelector: Invalid value", "is empty, which would govern every PriorityClass"],
    ),
    (
        "In without values",
        {"priorityClassSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
        ["spec.priorityClassSelector.matchExpressions[0]: Invalid value", "uses In without values. Fix: list"],
    ),
    (
        "Exists with values",
        {"priorityClassSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}},
        ["spec.priorityClassSelector.matchExpressions[0]: Invalid value", "uses Exists with values. Fix: remove"],
    ),
]


@pytest.mark.parametrize(("case", "spec", "words"), POLICIES, ids=[c[0] for c in POLICIES])
def test_the_crd_rules_refuse_bad_policies_with_the_webhook_down(
    webhook_down: None, kubectl: Kubectl, case: str, spec: dict[str, Any], words: list[str]
) -> None:
    name = unique_name("bad-policy")
    result = kubectl("create", "-f", "-", input=policy_manifest(name, spec), check=False)
    assert result.returncode != 0 and "admission webhook" not in result.stderr, result.stdout
    assert f'PreemptionTolerationPolicy "{name}" is invalid' in result.stderr
    assert all(word in result.stderr for word in words), result.stderr


def test_valid_policies_pass_the_crd_rules(webhook_down: None, kubectl: Kubectl) -> None:
    specs = [
        {"priorityClassName": "low", "minimumPreemptablePriority": 10000, "tolerationSeconds": -1},
        {"priorityClassSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["batch"]}]}},
        {"priorityClassName": "low", "priorityClassSelector": None, "minimumPreemptablePriority": 1},
    ]
    for spec in specs:
        manifest = policy_manifest(unique_name("good-policy"), spec)
        assert kubectl("create", "--dry-run=server", "-f", "-", input=manifest).returncode == 0


# ------------------------------------------------------------------------- the webhook alone (registered last)


@pytest.mark.parametrize("row", TABLE)
def test_the_webhook_alone_refuses_each_row_and_passes_the_rest(
    components: RunProcess, kubectl: Kubectl, created: list[str], row: tuple[str, dict[str, Any], Any, list[str]]
) -> None:
    rule, klass, severity, words = row
    live = _renamed(klass, "webhook")  # not labelled: the policy's binding does not match it
    result = _create(kubectl, created, live)
    if rule in POLICY_RULES:
        message = denied(result, WEBHOOK).strip()
        assert message == expected_message(live, "webhook") and POLICY_DENIED not in result.stderr
        assert all(word in message for word in _words(words, klass, live))
    elif rule in SERVER_RULES:
        assert result.returncode != 0 and "admission webhook" not in result.stderr, result.stderr
    else:
        assert result.returncode == 0, result.stderr
        assert all(word in result.stderr for word in _words(words, klass, live))  # the webhook's warning


@pytest.mark.parametrize(("case", "klass"), CLEAN, ids=[c[0] for c in CLEAN])
def test_the_webhook_passes_every_valid_class(
    components: RunProcess, kubectl: Kubectl, created: list[str], case: str, klass: dict[str, Any]
) -> None:
    valid_class_passes(kubectl, created, "webhook", klass)


def test_the_webhook_judges_long_values_as_the_policy(
    components: RunProcess, kubectl: Kubectl, created: list[str]
) -> None:
    long_values_are_judged_alike(kubectl, created, "webhook")
