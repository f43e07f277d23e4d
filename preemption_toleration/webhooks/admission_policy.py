"""The PriorityClass annotation rules as a ValidatingAdmissionPolicy, judged by the API server itself, so a
bad value is refused while the webhook is down (config/components/validating-admission-policy). Pure.

It holds the rules that read only the class in the request: unknown keys under our prefix, values Go's
strconv.ParseInt refuses (empty, not base 10, out of the int32/int64 range), and toleration-seconds above
MAX_TOLERATION_SECONDS. The range is checked by RE2 patterns (`in_range`), and `int()` runs only on a value
they accepted, so no step can overflow. As in the webhook, an update is refused only for an error it brings.
Each message is the webhook's own: the rule's message function is called with placeholders, which become
CEL. The webhook alone can name the nearest known key, check managed annotations (which need the policies),
default a new class, and warn (docs/validation-rules.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from preemption_toleration.api.base import MAX_TOLERATION_SECONDS
from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY, POLICY_KEYS, PREFIX, TOLERATION_SECONDS
from preemption_toleration.core.intparse import IntProblem, at_most_pattern, go_int_pattern, int_range
from preemption_toleration.validation.findings import Finding
from preemption_toleration.validation.priority_class import invalid_integer, toleration_overflow, unknown_key
from preemption_toleration.webhooks.configurations import NAME, cel_string

POLICY_NAME = "preemption-toleration-priorityclasses"
API_VERSION = "admissionregistration.k8s.io/v1"

_SHORT = 64  # longer values are read in two steps (in_range); any length above 20 would do
_GO_SYNTAX = "^[+-]?[0-9]+$"  # strconv.ParseInt's syntax; the range is go_int_pattern's
_KEYS = "[" + ", ".join(cel_string(key) for key in POLICY_KEYS) + "]"
_BITS = {MINIMUM_PREEMPTABLE_PRIORITY: 32, TOLERATION_SECONDS: 64}
_VARIABLE_OF = {MINIMUM_PREEMPTABLE_PRIORITY: "minimum", TOLERATION_SECONDS: "seconds"}

# Placeholders for the parts of a message that CEL fills in.
_NAME, _KEY, _VALUE = "\x00name\x00", "\x00key\x00", "\x00value\x00"
_PLACEHOLDER = re.compile("(" + "|".join(map(re.escape, (_NAME, _KEY, _VALUE))) + ")")


def variables() -> list[dict[str, str]]:
    """Named once, read by the validations (the API server evaluates each only when read: `minimum` and
    `seconds` are read only where their key is present)."""
    unknown = (
        f"variables.annotations.filter(k, k.startsWith({cel_string(PREFIX)}) && !(k in {_KEYS})\n"
        "  && !(k in variables.oldAnnotations && variables.oldAnnotations[k] == variables.annotations[k]))"
    )
    return [
        {"name": "annotations", "expression": "object.metadata.annotations"},
        {
            "name": "oldAnnotations",
            "expression": "oldObject != null && has(oldObject.metadata.annotations)"
            " ? oldObject.metadata.annotations : {}",
        },
        {"name": "unknownKeys", "expression": unknown},
        *(
            {"name": variable, "expression": f"variables.annotations[{cel_string(key)}]"}
            for key, variable in _VARIABLE_OF.items()
        ),
        {"name": "secondsInRange", "expression": in_range("variables.seconds", 64)},
    ]


def in_range(value: str, bits: int) -> str:
    """CEL: `value` is what strconv.ParseInt(value, 10, bits) accepts. The whole pattern costs too much on
    a long value (the API server's cost is the string's length times the pattern's), so a long one, which
    can only be zeros before a few digits, is read in two cheap steps: its shape, then its last digits."""
    low, high = int_range(bits)
    width = len(str(high))
    tail = f"{value}.substring({value}.size() - {width})"
    positive, negative = (cel_string(f"^(?:{at_most_pattern(bound)})$") for bound in (high, -low))
    return (
        f"{value}.size() <= {_SHORT}\n? {value}.matches({cel_string(go_int_pattern(bits))})\n"
        f": {value}.matches({cel_string(f'^[+-]?0*[0-9]{{1,{width}}}$')})\n"
        f"  && ({value}.startsWith('-') ? {tail}.matches({negative}) : {tail}.matches({positive}))"
    )


def _exempt(key: str) -> str:
    """CEL: the class has no `key`, or had it with this value before this update: like the webhook, an
    update is refused only for an error it brings, so a class that was already wrong can still be labelled
    or have its other annotations written."""
    value = f"variables.{_VARIABLE_OF[key]}"
    return (
        f"!({cel_string(key)} in variables.annotations)\n"
        f"|| ({cel_string(key)} in variables.oldAnnotations && variables.oldAnnotations[{cel_string(key)}] == {value})"
    )


def shown(text: str) -> str:
    """validation/findings.py's `shown` in CEL: at most 64 characters. (Kubernetes' CEL counts characters.)"""
    return f"({text}.size() <= 64 ? {text} : {text}.substring(0, 63) + '\\u2026')"


def cel_message(finding: Finding, key: str = "", value: str = "") -> str:
    """The finding's message as a CEL string expression: the class name, `key` and `value` (CEL
    expressions) in place of the placeholders the message was made with."""
    filled = {_NAME: "object.metadata.name", _KEY: key, _VALUE: shown(value)}
    parts = _PLACEHOLDER.split(finding.message)
    return " + ".join(filled[part] if part in filled else cel_string(part) for part in parts if part)


def _unknown_key_validation() -> dict[str, Any]:
    either = f"{MINIMUM_PREEMPTABLE_PRIORITY} or {TOLERATION_SECONDS}"
    first = "variables.unknownKeys[0]"
    return {
        "expression": "size(variables.unknownKeys) == 0",
        "messageExpression": cel_message(
            unknown_key(_NAME, _KEY, _VALUE, either), key=first, value=f"variables.annotations[{first}]"
        ),
        "message": f"an annotation under {PREFIX} is not one of {either}.",
        "reason": "Invalid",
    }


def _integer_validation(key: str) -> dict[str, Any]:
    value, bits = f"variables.{_VARIABLE_OF[key]}", _BITS[key]
    accepted = "variables.secondsInRange" if key == TOLERATION_SECONDS else f"({in_range(value, bits)})"

    def message(problem: IntProblem) -> str:
        return cel_message(invalid_integer(_NAME, key, _VALUE, problem), value=value)

    return {
        "expression": f"{_exempt(key)}\n|| {accepted}",
        "messageExpression": (
            f"{value} == ''\n? {message(IntProblem.EMPTY)}\n"
            f": !{value}.matches({cel_string(_GO_SYNTAX)})\n? {message(IntProblem.SYNTAX)}\n"
            f": {message(IntProblem.RANGE)}"
        ),
        "message": f"annotation {key} is not an int{bits} in base 10 (Go's strconv.ParseInt).",
        "reason": "Invalid",
    }


def _overflow_validation() -> dict[str, Any]:
    return {
        # int() reads only a value the int64 pattern accepted: were it evaluated first anyway, CEL's || would
        # still answer true from the term that holds, and a value out of range is the integer rule's.
        "expression": f"{_exempt(TOLERATION_SECONDS)}\n|| !variables.secondsInRange"
        f" || int(variables.seconds) <= {MAX_TOLERATION_SECONDS}",
        "messageExpression": cel_message(toleration_overflow(_NAME, _VALUE), value="variables.seconds"),
        "message": f"annotation {TOLERATION_SECONDS} is above {MAX_TOLERATION_SECONDS}.",
        "reason": "Invalid",
    }


def validations() -> list[dict[str, Any]]:
    return [
        _unknown_key_validation(),
        _integer_validation(MINIMUM_PREEMPTABLE_PRIORITY),
        _integer_validation(TOLERATION_SECONDS),
        _overflow_validation(),
    ]


def match_conditions() -> list[dict[str, str]]:
    """Only a class with an annotation under our prefix is judged: most writes cost one map scan."""
    prefix = cel_string(PREFIX)
    has_ours = f"has(object.metadata.annotations)\n&& object.metadata.annotations.exists(k, k.startsWith({prefix}))"
    return [{"name": "has-toleration-annotations", "expression": has_ours}]


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME}


def admission_policy() -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY_NAME, "labels": _labels()},
        "spec": {
            # An expression that fails (it cannot, short of a cost limit) refuses, as the webhook's Fail does.
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["scheduling.k8s.io"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["priorityclasses"],
                    }
                ]
            },
            "matchConditions": match_conditions(),
            "variables": variables(),
            "validations": validations(),
        },
    }


def admission_policy_binding(object_selector: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The binding that makes the policy refuse; `object_selector` narrows it (tests share one cluster)."""
    spec: dict[str, Any] = {"policyName": POLICY_NAME, "validationActions": ["Deny"]}
    if object_selector is not None:
        spec["matchResources"] = {"objectSelector": dict(object_selector)}
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY_NAME, "labels": _labels()},
        "spec": spec,
    }


def admission_policy_manifests(object_selector: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return [admission_policy(), admission_policy_binding(object_selector)]
