"""The committed CRD is generated from the models, and is a valid structural schema."""

from pathlib import Path
from typing import Any

import yaml

from preemption_toleration.api.crd import crd_manifest, crd_yaml

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


def test_committed_crd_matches_the_models() -> None:
    assert COMMITTED.read_text() == crd_yaml(), "regenerate: ptol crd > config/crd/preemptiontolerationpolicies.yaml"
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
        "minimumPreemptablePriority",
        "tolerationSeconds",
    }
    # unknown spec fields reach the validating webhook, which names the nearest known field
    assert spec["x-kubernetes-preserve-unknown-fields"] is True
