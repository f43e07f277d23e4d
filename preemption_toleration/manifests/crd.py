"""Builds the PreemptionTolerationPolicy CRD from the pydantic models (pure: returns dicts).

pydantic's JSON schema is not a Kubernetes structural schema: `to_structural` inlines `$ref`s, turns
`anyOf [X, null]` into `X` with `nullable: true`, and drops what apiextensions refuses or ignores.
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel

from preemption_toleration.api import policy
from preemption_toleration.core.annotations import MINIMUM, TOLERATION
from preemption_toleration.core.intparse import INT64_MAX, INT64_MIN

_DROPPED_KEYS = {"title", "uniqueItems", "$defs"}

PRINTER_COLUMNS: list[dict[str, Any]] = [
    {
        "name": "Target",
        "type": "string",
        "jsonPath": ".status.target",
        "description": "The PriorityClass (or selector) this policy governs",
    },
    {
        "name": "Minimum",
        "type": "integer",
        "jsonPath": f".spec.{MINIMUM.spec_field}",
        "description": "Lowest priority that may preempt at once",
    },
    {
        "name": "Toleration",
        "type": "integer",
        "jsonPath": f".spec.{TOLERATION.spec_field}",
        "description": "Seconds tolerated below the minimum (-1 = forever)",
    },
    {
        "name": "Ready",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
    },
    {
        "name": "Reason",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].reason',
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {
        "name": "Class",
        "type": "string",
        "priority": 1,
        "jsonPath": ".spec.priorityClassName",
        "description": "spec.priorityClassName",
    },
]


def _resolve(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_resolve(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = definitions[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _resolve(merged, definitions)
    if "anyOf" in node:
        branches = [branch for branch in node["anyOf"] if branch != {"type": "null"}]
        if len(branches) != 1:
            raise ValueError(f"cannot express anyOf {node['anyOf']} in a structural schema")
        outer = {k: v for k, v in node.items() if k != "anyOf"}
        merged = {**_resolve(branches[0], definitions), **outer}
        if len(branches) < len(node["anyOf"]):
            merged["nullable"] = True
        return _resolve(merged, definitions)
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS:
            continue
        if key == "default" and value is None:
            continue
        if key == "additionalProperties" and value is False:
            continue
        if key in ("minimum", "maximum") and value in (INT64_MIN, INT64_MAX):
            continue  # `format: int64` already says it
        if key == "const":
            result["enum"] = [value]
            continue
        if key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            result["minimum" if key == "exclusiveMinimum" else "maximum"] = value
            result[key] = True
            continue
        if key in ("properties",):
            result[key] = {name: _resolve(schema, definitions) for name, schema in value.items()}
            continue
        result[key] = _resolve(value, definitions)
    return result


def to_structural(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="serialization")
    resolved: dict[str, Any] = _resolve(schema, schema.get("$defs", {}))
    return resolved


def crd_manifest() -> dict[str, Any]:
    spec_schema = to_structural(policy.PreemptionTolerationPolicySpec)
    # Keep unknown spec fields so the validating webhook can refuse a typo with a suggestion
    # instead of the API server silently pruning it.
    spec_schema["x-kubernetes-preserve-unknown-fields"] = True
    status_schema = to_structural(policy.PreemptionTolerationPolicyStatus)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{policy.PLURAL}.{policy.GROUP}",
            "labels": {"app.kubernetes.io/name": "preemption-toleration"},
        },
        "spec": {
            "group": policy.GROUP,
            "scope": "Cluster",
            "names": {
                "kind": policy.KIND,
                "listKind": f"{policy.KIND}List",
                "plural": policy.PLURAL,
                "singular": policy.SINGULAR,
                "shortNames": list(policy.SHORT_NAMES),
                "categories": ["scheduling"],
            },
            "versions": [
                {
                    "name": policy.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": PRINTER_COLUMNS,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "Who may preempt the pods of a PriorityClass, and when "
                            "(the victim-side PreemptionToleration policy).",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec_schema,
                                "status": status_schema,
                            },
                        }
                    },
                }
            ],
        },
    }


def crd_yaml() -> str:
    header = "# Generated from preemption_toleration/api/policy.py by `ptol crd`; do not edit.\n"
    return header + str(yaml.safe_dump(crd_manifest(), sort_keys=False, width=100))
