"""The committed CRD is generated from the models, and is a valid structural schema."""

import re
from pathlib import Path
from typing import Any

import cel
import pytest
import yaml

from preemption_toleration.manifests.crd import crd_manifest
from preemption_toleration.validation import Severity, check_policy
from tests.unit.test_policy_rules import RULES as POLICY_RULES
from tests.unit.test_policy_rules import policy

COMMITTED = Path(__file__).resolve().parents[2] / "config" / "crd" / "preemptiontolerationpolicies.yaml"
FORBIDDEN_KEYS = {"$ref", "$defs", "anyOf", "oneOf", "allOf", "title", "const", "uniqueItems"}


def walk(node: Any, path: str = "") -> list[str]:
    """Structural-schema violations below `node`."""
    problems: list[str] = []
    if not isinstance(node, dict):
        return problems
    for key in FORBIDDEN_KEYS & node.keys():
        problems.append(f"{path}: {key}")
    if node.get("additionalProperties") is False:
        problems.append(f"{path}: additionalProperties false")
    if "type" not in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        problems.append(f"{path}: no type")
    if "properties" in node and "additionalProperties" in node:
        problems.append(f"{path}: properties and additionalProperties")
    for name, child in (node.get("properties") or {}).items():
        problems += walk(child, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        problems += walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        problems += walk(node["additionalProperties"], f"{path}{{}}")
    return problems


def test_crds_links_to_the_generated_crd() -> None:
    """The CRD is generated into config/crd (tests/unit/test_manifests.py checks it is current)."""
    link = COMMITTED.parents[2] / "crds" / COMMITTED.name
    assert link.resolve() == COMMITTED.resolve(), "crds/ links to config/crd/"


def test_schema_is_structural() -> None:
    schema = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert walk(schema) == []


def test_crd_identity_and_subresources() -> None:
    crd = yaml.safe_load(COMMITTED.read_text())
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "preemptiontolerationpolicies.preemption-toleration.dev"
    assert not spec["group"].endswith("k8s.io")
    assert spec["scope"] == "Cluster"
    assert spec["names"]["shortNames"] == ["ptp"]
    version = spec["versions"][0]
    assert version["subresources"] == {"status": {}}
    columns = [column["name"] for column in version["additionalPrinterColumns"]]
    assert columns[:4] == ["Target", "Minimum", "Toleration", "Ready"] and "Age" in columns


def test_schema_carries_the_model_ranges() -> None:
    spec = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    fields = spec["properties"]
    assert fields["minimumPreemptablePriority"]["format"] == "int32"
    assert fields["minimumPreemptablePriority"]["maximum"] == 2**31 - 1
    assert fields["tolerationSeconds"]["maximum"] == 9223372036
    assert set(fields) == {
        "priorityClassName",
        "priorityClassSelector",
        "priorityClassKind",
        "minimumPreemptablePriority",
        "tolerationSeconds",
    }
    assert fields["priorityClassKind"]["enum"] == ["PriorityClass", "WorkloadPriorityClass"]
    # unknown spec fields reach the validating webhook, which names the nearest known field
    assert spec["x-kubernetes-preserve-unknown-fields"] is True


# ------------------------------------------------------------------------- x-kubernetes-validations


def stored(schema: dict[str, Any], value: Any) -> Any:
    """`value` as the API server's CEL sees it: null fields read as absent, and unknown fields are pruned
    where the schema does not preserve them."""
    if isinstance(value, dict):
        known = schema.get("properties") or {}
        keep = schema.get("x-kubernetes-preserve-unknown-fields") or not known
        return {
            key: stored(known.get(key, {}), item)
            for key, item in value.items()
            if item is not None and (keep or key in known)
        }
    if isinstance(value, list):
        return [stored(schema.get("items") or {}, item) for item in value]
    return value


def rule_messages(schema: dict[str, Any], value: Any, path: str = "spec") -> list[str]:
    """`path: message` of every x-kubernetes-validations rule `value` breaks, as the API server reports them."""
    found: list[str] = []
    for rule in schema.get("x-kubernetes-validations", []):
        if not cel.evaluate(rule["rule"], {"self": value}):
            message = cel.evaluate(rule["messageExpression"], {"self": value}) if "messageExpression" in rule else None
            found.append(f"{path}: {message or rule['message']}")
    if isinstance(value, dict):
        for name, child in (schema.get("properties") or {}).items():
            if name in value:
                found += rule_messages(child, value[name], f"{path}.{name}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            found += rule_messages(schema["items"], item, f"{path}[{index}]")
    return found


SPEC_SCHEMA = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
CEL_RULES = {"target", "empty-selector", "invalid-selector"}  # the policy rules CEL can express


@pytest.mark.parametrize(
    ("rule", "spec", "severity", "words"),
    POLICY_RULES,
    ids=[f"{r[0]}-{i}" for i, r in enumerate(POLICY_RULES)],
)
def test_the_crd_rules_refuse_what_the_webhook_refuses_with_them(
    rule: str, spec: Any, severity: Severity, words: list[str]
) -> None:
    """Each rule CEL can express refuses what the webhook refuses with it, in the webhook's words: the API
    server's error gives the object's name and the path. The others are the schema's (types, ranges) or the
    webhook's alone."""
    if not isinstance(spec, dict):
        return  # a spec that is not an object: the schema's type refuses it
    assert_same_refusals(spec, must_refuse=rule in CEL_RULES)


def assert_same_refusals(spec: dict[str, Any], must_refuse: bool) -> None:
    seen = stored(SPEC_SCHEMA, spec)
    expected = [f for f in check_policy(policy(seen)) if f.rule in CEL_RULES]
    assert expected or not must_refuse
    messages = rule_messages(SPEC_SCHEMA, seen)
    assert len(messages) == len(expected), (messages, expected)
    for message, finding in zip(messages, expected, strict=True):
        path, text = message.split(": ", 1)
        webhook = re.sub(r" with values \[.*\]\. ", " with values. ", finding.message)  # the CRD lists none
        assert webhook == 'PreemptionTolerationPolicy "batch": ' + (
            text if text.startswith("spec") else f"{path} {text}"
        )


def _expressions(*requirements: dict[str, Any]) -> dict[str, Any]:
    return {"priorityClassSelector": {"matchExpressions": list(requirements)}, "minimumPreemptablePriority": 1}


MORE_REFUSED = [
    ("NotIn without values", _expressions({"key": "a", "operator": "NotIn", "values": []})),
    ("DoesNotExist with values", _expressions({"key": "a", "operator": "DoesNotExist", "values": ["x"]})),
    ("the second requirement", _expressions({"key": "a", "operator": "Exists"}, {"key": "b", "operator": "In"})),
    ("empty labels and expressions", {"priorityClassSelector": {"matchLabels": {}, "matchExpressions": []}}),
    ("both targets, the selector empty", {"priorityClassName": "a", "priorityClassSelector": {}}),
    ("null targets", {"priorityClassName": None, "priorityClassSelector": None, "tolerationSeconds": 1}),
]


@pytest.mark.parametrize(("case", "spec"), MORE_REFUSED, ids=[c[0] for c in MORE_REFUSED])
def test_the_crd_rules_refuse_more_shapes_as_the_webhook_does(case: str, spec: dict[str, Any]) -> None:
    assert_same_refusals(spec, must_refuse=True)


VALID = [
    ("by name", {"priorityClassName": "low", "minimumPreemptablePriority": 10000, "tolerationSeconds": -1}),
    ("by labels", {"priorityClassSelector": {"matchLabels": {"tier": "batch"}}, "tolerationSeconds": 600}),
    (
        "by expressions",
        {"priorityClassSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}},
    ),
    ("a null selector beside a name", {"priorityClassName": "low", "priorityClassSelector": None}),
    (
        "empty values with Exists",
        {"priorityClassSelector": {"matchExpressions": [{"key": "t", "operator": "DoesNotExist", "values": []}]}},
    ),
]


@pytest.mark.parametrize(("case", "spec"), VALID, ids=[c[0] for c in VALID])
def test_the_crd_rules_admit_valid_policies(case: str, spec: dict[str, Any]) -> None:
    assert [f for f in check_policy(policy(spec)) if f.is_error] == []
    assert rule_messages(SPEC_SCHEMA, stored(SPEC_SCHEMA, spec)) == []


def test_the_crd_carries_the_rules_where_they_apply() -> None:
    selector = SPEC_SCHEMA["properties"]["priorityClassSelector"]
    requirement = selector["properties"]["matchExpressions"]["items"]
    counts = [len(node["x-kubernetes-validations"]) for node in (SPEC_SCHEMA, selector, requirement)]
    assert counts == [1, 1, 2]
