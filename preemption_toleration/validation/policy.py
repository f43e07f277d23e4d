"""Rules for PreemptionTolerationPolicy objects: the shape (from the pydantic model) and the semantics
the CRD schema does not express (exactly one target, a non-empty selector)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from preemption_toleration.api.base import ObjectMeta
from preemption_toleration.api.policy import (
    API_VERSION,
    LabelSelector,
    LabelSelectorRequirement,
    PreemptionTolerationPolicy,
    PreemptionTolerationPolicySpec,
)
from preemption_toleration.core.annotations import MAX_TOLERATION_SECONDS, MINIMUM, TOLERATION
from preemption_toleration.core.shapes import is_mapping
from preemption_toleration.validation.findings import Finding, described, error, kind_of_value, nearest, warning
from preemption_toleration.validation.toleration_rules import POLICY_SPEC, overflow_problem, toleration_warnings

_FIELD_FIXES = {
    TOLERATION.spec_field: f"use whole seconds between -1 (forever) and {MAX_TOLERATION_SECONDS}, e.g. 600",
    MINIMUM.spec_field: "use an integer priority, e.g. 10000",
    "priorityClassName": "use the name of a PriorityClass: lowercase letters, digits, '-' and '.', starting and ending "
    "with a letter or digit, e.g. batch-low",
    "operator": "use one of In, NotIn, Exists, DoesNotExist",
}


def subject(name: str) -> str:
    return f'PreemptionTolerationPolicy "{name}"'


def _model_at(location: tuple[str | int, ...]) -> type[BaseModel]:
    """The model whose fields live at `location` inside the spec."""
    names = [part for part in location if isinstance(part, str)]
    if names[:1] == ["priorityClassSelector"]:
        return LabelSelectorRequirement if "matchExpressions" in names else LabelSelector
    return PreemptionTolerationPolicySpec


def _aliases(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _path(location: tuple[str | int, ...]) -> str:
    path = "spec"
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _shape_finding(name: str, detail: Mapping[str, Any]) -> Finding:
    location = tuple(detail["loc"])
    path = _path(location)
    field = ("spec", *location)
    value = detail.get("input")
    kind = detail["type"]
    leaf = next((part for part in reversed(location) if isinstance(part, str)), "")
    if kind == "extra_forbidden":
        suggestion = nearest(str(leaf), _aliases(_model_at(location[:-1])))
        return error(
            "unknown-field",
            f"{subject(name)}: unknown field {path} (value {described(value)}). "
            f"Fix: did you mean {_path(location[:-1] + (suggestion,))}?",
            field,
        )
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return error(
            "invalid-field",
            f"{subject(name)}: {path} is {described(value)}, not an integer. Fix: {_integer_fix(leaf, value)}.",
            field,
        )
    if kind == "missing":
        return error("invalid-field", f"{subject(name)}: {path} is missing. Fix: set {leaf}.", field[:-1])
    fix = _FIELD_FIXES.get(str(leaf), "see the policy reference in docs/policy.md")
    if leaf == TOLERATION.spec_field and kind == "less_than_equal":
        return error(
            "toleration-overflow",
            overflow_problem(f"{subject(name)}: {path} is {described(value)},", fix),
            field,
        )
    return error(
        "invalid-field",
        f"{subject(name)}: {path} is {described(value)}: {_problem_text(kind, detail, value)}. Fix: {fix}.",
        field,
    )


def _integer_fix(leaf: str | int, value: Any) -> str:
    """Write the number without quotes when it is one; otherwise the field's own example."""
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return f"write it without quotes: {leaf}: {int(value.strip())}"
    if isinstance(value, float) and value.is_integer():
        return f"write it in plain digits: {leaf}: {int(value)}"
    return _FIELD_FIXES.get(str(leaf), "use an integer")


# What each pydantic error type means for a field of a manifest (pydantic's own words name Python types and
# show regular expressions).
_PROBLEMS = {
    "string_type": "not a string",
    "dict_type": "not a map",
    "model_type": "not a map",
    "model_attributes_type": "not a map",
    "list_type": "not a list",
    "bool_type": "not true or false",
    "string_pattern_mismatch": "not a valid name",
    "literal_error": "not one of the allowed values",
    "enum": "not one of the allowed values",
}


def _problem_text(kind: str, detail: Mapping[str, Any], value: Any) -> str:
    context = detail.get("ctx") or {}
    if kind in ("literal_error", "enum") and context.get("expected"):
        return f"{_PROBLEMS[kind]}: {context['expected']}"
    if kind in _PROBLEMS:
        return f"{_PROBLEMS[kind]} (it is {kind_of_value(value)})" if kind.endswith("_type") else _PROBLEMS[kind]
    if kind == "string_too_short":
        return "empty" if context.get("min_length") == 1 else f"shorter than {context.get('min_length')} characters"
    if kind == "string_too_long":
        return f"longer than {context.get('max_length')} characters"
    for bound, words in (("le", "above"), ("lt", "not below"), ("ge", "below"), ("gt", "not above")):
        if bound in context:
            return f"{words} {context[bound]}"
    return "not valid here"


def _selector_findings(name: str, selector: LabelSelector) -> list[Finding]:
    if not selector.match_labels and not selector.match_expressions:
        return [
            error(
                "empty-selector",
                f"{subject(name)}: spec.priorityClassSelector is empty, which would govern every PriorityClass, "
                "system classes included. Fix: add matchLabels, e.g. {tier: batch}, or use priorityClassName.",
                ("spec", "priorityClassSelector"),
            )
        ]
    findings: list[Finding] = []
    for index, requirement in enumerate(selector.match_expressions or []):
        path = f"spec.priorityClassSelector.matchExpressions[{index}]"
        field = ("spec", "priorityClassSelector", "matchExpressions", index)
        needs_values = requirement.operator in ("In", "NotIn")
        if needs_values and not requirement.values:
            findings.append(
                error(
                    "invalid-selector",
                    f"{subject(name)}: {path} uses {requirement.operator} without values. Fix: list the values.",
                    field,
                )
            )
        if not needs_values and requirement.values:
            findings.append(
                error(
                    "invalid-selector",
                    f"{subject(name)}: {path} uses {requirement.operator} with values {described(requirement.values)}. "
                    "Fix: remove values.",
                    field,
                )
            )
    return findings


def _semantic_findings(name: str, spec: PreemptionTolerationPolicySpec) -> list[Finding]:
    findings: list[Finding] = []
    by_name = spec.priority_class_name is not None
    by_selector = spec.priority_class_selector is not None
    if by_name == by_selector:
        problem = "sets both" if by_name else "sets neither of"
        findings.append(
            error(
                "target",
                f"{subject(name)}: spec {problem} priorityClassName and priorityClassSelector. "
                "Fix: set exactly one of them.",
                ("spec",),
            )
        )
    if spec.priority_class_selector is not None:
        findings += _selector_findings(name, spec.priority_class_selector)
    minimum = spec.minimum_preemptable_priority
    seconds = spec.toleration_seconds
    if minimum is None and seconds is None:
        findings.append(
            warning(
                "no-effect",
                f"{subject(name)}: spec sets neither minimumPreemptablePriority nor tolerationSeconds, so its "
                "classes get no toleration. Fix: set minimumPreemptablePriority, e.g. 10000.",
                ("spec",),
            )
        )
    findings += toleration_warnings(subject(name), minimum, seconds, minimum is not None, POLICY_SPEC)
    return findings


def policy_name(metadata: Any) -> str:
    """The name a message calls a policy by: its metadata.name, "<unnamed>" without one."""
    name = metadata.get("name") if is_mapping(metadata) else None
    return name if isinstance(name, str) and name else ("<unnamed>" if not name else described(name))


def _api_version_text(api_version: Any) -> str:
    return "(missing)" if api_version is None else described(api_version)


class PolicyParts(NamedTuple):
    """A policy's name, its metadata and spec models (both None when any error was found; the metadata also
    when it was not read), and every finding."""

    name: str
    metadata: ObjectMeta | None
    spec: PreemptionTolerationPolicySpec | None
    findings: list[Finding]


def read_policy(obj: Mapping[str, Any], *, served: bool = False) -> PolicyParts:
    """`parse_policy` without the model around the parts. `served`: the object of an admission review, which
    the API server has decoded and validated as an object with ObjectMeta before it calls a webhook, so its
    labels and annotations are strings already; its metadata is not read again (the webhook needs only the
    spec)."""
    metadata = obj.get("metadata")
    name = policy_name(metadata)
    findings: list[Finding] = []
    if obj.get("apiVersion") != API_VERSION:
        findings.append(
            error(
                "api-version",
                f"{subject(name)}: apiVersion {_api_version_text(obj.get('apiVersion'))} is not served. "
                f"Fix: use {API_VERSION}.",
                ("apiVersion",),
            )
        )
    if name == "<unnamed>":
        findings.append(
            error("name", f"{subject(name)}: metadata.name is missing. Fix: name the policy.", ("metadata",))
        )
    spec = obj.get("spec")
    if not is_mapping(spec):
        findings.append(
            error(
                "spec",
                f"{subject(name)}: spec is {'missing' if spec is None else described(spec)}, not a map. "
                "Fix: add a spec with a target, e.g. spec: {priorityClassName: batch, minimumPreemptablePriority: "
                "10000}.",
                ("spec",),
            )
        )
        return PolicyParts(name, None, None, findings)
    try:
        spec_model = PreemptionTolerationPolicySpec.model_validate(spec)
    except ValidationError as invalid:
        findings += [_shape_finding(name, detail) for detail in invalid.errors()]
        return PolicyParts(name, None, None, findings)
    findings += _semantic_findings(name, spec_model)
    if any(finding.is_error for finding in findings):
        return PolicyParts(name, None, None, findings)
    if served:
        return PolicyParts(name, None, spec_model, findings)
    try:
        metadata_model = ObjectMeta.model_validate(metadata or {})
    except ValidationError as invalid:
        findings += [
            error(
                "invalid-field",
                f"{subject(name)}: metadata.{'.'.join(map(str, d['loc']))} is {described(d.get('input'))}: "
                f'{_problem_text(d["type"], d, d.get("input"))}. Fix: write labels and annotations as key: "value" '
                "pairs of strings.",
                ("metadata", *d["loc"]),
            )
            for d in invalid.errors()
        ]
        return PolicyParts(name, None, None, findings)
    return PolicyParts(name, metadata_model, spec_model, findings)


def parse_policy(obj: Mapping[str, Any]) -> tuple[PreemptionTolerationPolicy | None, list[Finding]]:
    """The policy model and every finding; the model is None when any error was found."""
    parts = read_policy(obj)
    if parts.metadata is None or parts.spec is None:
        return None, parts.findings
    return PreemptionTolerationPolicy(metadata=parts.metadata, spec=parts.spec), parts.findings


def check_policy(obj: Mapping[str, Any]) -> list[Finding]:
    """Errors and warnings for one PreemptionTolerationPolicy (Kubernetes JSON)."""
    return parse_policy(obj)[1]
