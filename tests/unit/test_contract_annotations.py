"""Each annotation of the contract is declared once (`core.annotations.CONTRACT_ANNOTATIONS`). These tests
catch drift: a part that writes a key, bit size, spec field, bound or CEL variable of its own instead of
reading the table, or a row that the policy's spec, the CRD, the ValidatingAdmissionPolicy or the parser
does not follow."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from preemption_toleration.api.policy import PreemptionTolerationPolicySpec
from preemption_toleration.core.annotations import CONTRACT_ANNOTATIONS, ContractAnnotation, class_toleration
from preemption_toleration.core.intparse import int_range
from preemption_toleration.governance.planner import desired_annotations
from preemption_toleration.manifests.admission_policy import validations, variables
from preemption_toleration.manifests.crd import crd_manifest
from preemption_toleration.validation.priority_class import check_priority_class
from tests import builders

PACKAGE = Path(__file__).resolve().parents[2] / "preemption_toleration"
DECLARED_IN = PACKAGE / "core" / "annotations.py"
ROWS = [pytest.param(row, id=row.name) for row in CONTRACT_ANNOTATIONS]


def spelled(row: ContractAnnotation) -> set[str]:
    return {row.name, row.key, row.spec_field}


def copies() -> list[str]:
    """String literals outside the table that spell a row's name, key or spec field as a word of code (no
    space: a key, a field, a path), not as prose in a message."""
    words = set().union(*(spelled(row) for row in CONTRACT_ANNOTATIONS))
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == DECLARED_IN:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and " " not in node.value:
                if any(word in node.value for word in words):
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value!r}")
    return found


def test_no_module_spells_an_annotation_of_its_own() -> None:
    assert copies() == []


@pytest.mark.parametrize("row", ROWS)
def test_the_policy_spec_has_the_field_the_operator_writes_the_annotation_from(row: ContractAnnotation) -> None:
    field = PreemptionTolerationPolicySpec.model_fields[row.attribute]
    assert field.alias == row.spec_field
    spec = PreemptionTolerationPolicySpec.model_validate({"priorityClassName": "batch", row.spec_field: 7})
    assert desired_annotations(spec) == {row.key: "7"}


@pytest.mark.parametrize("row", ROWS)
def test_the_crd_serves_the_field_and_prints_it(row: ContractAnnotation) -> None:
    version = crd_manifest()["spec"]["versions"][0]
    assert row.spec_field in version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert f".spec.{row.spec_field}" in [column["jsonPath"] for column in version["additionalPrinterColumns"]]


@pytest.mark.parametrize("row", ROWS)
def test_the_admission_policy_reads_the_annotation_into_its_variable(row: ContractAnnotation) -> None:
    declared = {variable["name"]: variable["expression"] for variable in variables()}
    assert row.key in declared[row.variable]
    rules = [rule for rule in validations() if f"variables.{row.variable}" in rule["messageExpression"]]
    assert any(f"int{row.bits}" in rule["message"] for rule in rules)
    if row.maximum is not None:
        assert any(f"<= {row.maximum}" in rule["expression"] for rule in rules)


def annotated(row: ContractAnnotation, value: str) -> dict:
    """A class with a minimum (a toleration alone is warned about) that sets `row` to `value`."""
    body = builders.priority_class("c", 100, minimum="10000")
    body["metadata"]["annotations"][row.key] = value
    return body


@pytest.mark.parametrize("row", ROWS)
def test_the_parser_and_the_webhook_take_the_rows_bits(row: ContractAnnotation) -> None:
    low, high = int_range(row.bits)
    top = high if row.maximum is None else row.maximum
    assert class_toleration(annotated(row, str(top))).policy is not None
    assert class_toleration(annotated(row, str(high + 1))).invalid_key == row.key
    codes = [finding.rule for finding in check_priority_class(annotated(row, str(high + 1)))]
    assert "invalid-integer" in codes
