"""Admission rules for the toleration annotations of a PriorityClass (architecture §4)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from preemption_toleration.core.annotations import (
    BY_KEY,
    CONTRACT_ANNOTATIONS,
    LEGACY_PREFIX,
    MINIMUM,
    POLICY_KEYS,
    PREFIX,
    TOLERATION,
    ContractAnnotation,
    annotations_of,
    name_of,
)
from preemption_toleration.core.intparse import (
    IntParseError,
    IntProblem,
    describe_problem,
    int_range,
    is_canonical,
    parse_go_int,
)
from preemption_toleration.core.protection import holds_back_no_preemptor
from preemption_toleration.core.shapes import is_mapping
from preemption_toleration.validation.findings import (
    Field,
    Finding,
    described,
    error,
    kind_of_value,
    nearest,
    shown,
    warning,
)
from preemption_toleration.validation.toleration_rules import (
    ANNOTATIONS,
    SYSTEM_CLASSES,
    ClassValue,
    minimum_without_effect,
    overflow_problem,
    toleration_warnings,
)

# Kubernetes' own classes; user-defined classes may not start with "system-" nor exceed 10^9.
HIGHEST_USER_PRIORITY = 1_000_000_000


def subject(name: str) -> str:
    return f'PriorityClass "{name}"'


def annotation(key: str) -> Field:
    return ("metadata", "annotations", key)


def invalid_integer(name: str, key: str, value: str, problem: IntProblem) -> Finding:
    """The refusal of an annotation value Go's strconv.ParseInt refuses (the admission policy's too)."""
    contract = BY_KEY[key]
    bits = contract.bits
    if problem is IntProblem.EMPTY:
        fix = f"remove the annotation (default: {contract.default}) or {contract.fix}"
    elif problem is IntProblem.RANGE and contract.maximum is not None:
        fix = f"use at most {contract.maximum} (what fits the scheduler's int{bits} nanoseconds)"
        fix += f', or "{contract.forever}" for forever' if contract.forever is not None else ""
    elif problem is IntProblem.RANGE:
        low, high = int_range(bits)
        fix = f"use a value between {low} and {high}"
    else:
        fix = contract.fix
    return error(
        "invalid-integer",
        f'{subject(name)}: annotation {key}="{shown(value)}" is {describe_problem(problem, bits)}; '
        f"the scheduler would ignore this class's whole toleration policy. Fix: {fix}.",
        annotation(key),
    )


def unknown_key(name: str, key: str, value: Any, suggestion: str) -> Finding:
    return error(
        "unknown-key",
        f"{subject(name)}: unknown annotation {key}={_value_text(value)}. Fix: did you mean {suggestion}?",
        annotation(key),
    )


def _value_text(value: Any) -> str:
    """An annotation's value in a message: a string quoted as written (the admission policy's CEL message
    writes it the same way), anything else as YAML writes it."""
    return f'"{shown(value)}"' if isinstance(value, str) else described(value)


def toleration_overflow(name: str, value: str) -> Finding:
    return error(
        "toleration-overflow",
        overflow_problem(
            f'{subject(name)}: {TOLERATION.name} "{shown(value)}" is',
            f'use at most {TOLERATION.maximum}, or "{TOLERATION.forever}" for forever',
        ),
        annotation(TOLERATION.key),
    )


def _parse_all(name: str, annotations: Mapping[str, Any]) -> tuple[dict[str, int], list[Finding]]:
    parsed: dict[str, int] = {}
    findings: list[Finding] = []
    for key in POLICY_KEYS:
        if key not in annotations:
            continue
        value = annotations[key]
        if not isinstance(value, str):
            findings.append(
                error(
                    "annotation-not-string",
                    f"{subject(name)}: annotation {key} is {_what(value)}, not a string; Kubernetes "
                    f"annotation values are strings. Fix: {_quote_fix(key, value)}.",
                    annotation(key),
                )
            )
            continue
        try:
            parsed[key] = parse_go_int(value, BY_KEY[key].bits)
        except IntParseError as problem:
            findings.append(invalid_integer(name, key, value, problem.problem))
            continue
        if not is_canonical(value):
            findings.append(
                warning(
                    "non-canonical-integer",
                    f'{subject(name)}: {key}="{shown(value)}" is read as {parsed[key]}. Fix: write "{parsed[key]}".',
                    annotation(key),
                )
            )
    return parsed, findings


def _what(value: Any) -> str:
    """A value that is not a string, as the manifest wrote it: "the number 10000", "true", "null", "a list"."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"the number {described(value)}"
    if isinstance(value, list | tuple) or is_mapping(value):
        return f"{kind_of_value(value)} ({described(value)})"
    return kind_of_value(value)


def _quote_fix(key: str, value: Any) -> str:
    """Quote the number the author meant: the number itself when it is one (YAML read 10000 or 1e4), an
    example when YAML read something else (`true`, `null`, a list)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f'quote it: "{value}"'
    if isinstance(value, float) and value.is_integer():
        return f'write it in plain digits and quote it: "{int(value)}"'
    return f"write the intended number in quotes, e.g. {BY_KEY[key].example}"


def _unknown_and_legacy_keys(name: str, annotations: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for key, value in annotations.items():
        if not isinstance(key, str):
            continue  # reported by _metadata_shape
        if key.startswith(PREFIX) and key not in POLICY_KEYS:
            findings.append(unknown_key(name, key, value, nearest(key, POLICY_KEYS)))
        elif key.startswith(LEGACY_PREFIX):
            renamed = PREFIX + key[len(LEGACY_PREFIX) :]
            findings.append(
                warning(
                    "legacy-prefix",
                    f"{subject(name)}: {key}={_value_text(value)} is ignored (legacy prefix, read by nothing). "
                    f"Fix: rename it to {renamed}.",
                    annotation(key),
                )
            )
    return findings


def _effect_warnings(
    name: str, class_value: Any, annotations: Mapping[str, Any], parsed: Mapping[str, int]
) -> list[Finding]:
    findings: list[Finding] = []
    minimum = parsed.get(MINIMUM.key)
    seconds = parsed.get(TOLERATION.key)
    if minimum is not None and isinstance(class_value, int) and holds_back_no_preemptor(class_value, minimum):
        findings.append(minimum_without_effect(subject(name), minimum, [ClassValue(None, class_value)], ANNOTATIONS))
    findings += toleration_warnings(subject(name), minimum, seconds, MINIMUM.key in annotations, ANNOTATIONS)
    return findings


def _class_value_text(value: Any) -> str:
    return "missing" if value is None else described(value)


def _class_value_fix(value: Any) -> str:
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return f"write it without quotes: value: {value.strip()}"
    if isinstance(value, float) and value.is_integer():
        return f"write it in plain digits: value: {int(value)}"
    return "set value to an integer, e.g. value: 8000"


def _server_rules(name: str, class_value: int | None) -> list[Finding]:
    """What the API server itself would refuse, caught before a pipeline applies it."""
    if name.startswith("system-"):
        if SYSTEM_CLASSES.get(name) == class_value:
            return []
        return [
            error(
                "reserved-name",
                f"{subject(name)}: names starting with 'system-' are reserved for Kubernetes' own classes "
                f"({', '.join(SYSTEM_CLASSES)}); the API server refuses it. Fix: rename the class.",
                ("metadata", "name"),
            )
        ]
    if class_value is not None and class_value > HIGHEST_USER_PRIORITY:
        return [
            error(
                "value-out-of-range",
                f"{subject(name)}: value {class_value} is above {HIGHEST_USER_PRIORITY}, the highest priority a "
                f"user-defined class may have; the API server refuses it. Fix: use at most {HIGHEST_USER_PRIORITY}.",
                ("value",),
            )
        ]
    return []


def _metadata_text(metadata: Any) -> str:
    if metadata is None:
        return "missing"
    if is_mapping(metadata):
        return "without a name" if "name" not in metadata else f"with the name {described(metadata.get('name'))}"
    return described(metadata)


def _metadata_shape(name: str, metadata: Any) -> list[Finding]:
    """A manifest whose metadata, labels or annotations are not maps: the API server refuses it, and the
    annotations in it would otherwise be silently read as none."""
    if not is_mapping(metadata) or not metadata.get("name"):
        return [
            error(
                "invalid-metadata",
                f"{subject(name)}: metadata is {_metadata_text(metadata)}; a PriorityClass "
                "needs metadata with a name. Fix: write metadata: {name: ...}.",
                ("metadata",),
            )
        ]
    findings = [
        error(
            "invalid-metadata",
            f"{subject(name)}: metadata.{part} is {described(metadata[part])}, not a map. "
            f"Fix: write {part} as key: value pairs.",
            ("metadata", part),
        )
        for part in ("labels", "annotations")
        if metadata.get(part) is not None and not is_mapping(metadata[part])
    ]
    for part in ("labels", "annotations"):
        entries = metadata.get(part)
        if not is_mapping(entries):
            continue
        for key, value in entries.items():
            if not isinstance(key, str):
                findings.append(
                    error(
                        "invalid-metadata",
                        f"{subject(name)}: metadata.{part} has the key "
                        f"{described(key)}, which is not a string. Fix: quote it: {_quoted(key)}.",
                        ("metadata", part, str(key)),
                    )
                )
            elif part == "labels" and not isinstance(value, str):
                findings.append(
                    error(
                        "invalid-metadata",
                        f"{subject(name)}: label {shown(key)} is {described(value)}, "
                        f"not a string. Fix: quote it: {_quoted(value)}.",
                        ("metadata", part, key),
                    )
                )
    return findings


def _quoted(value: Any) -> str:
    """`value` (a key or a label YAML read as another type) as the string the author most likely meant."""
    if value is None:
        return '"null" (or remove it)'
    return json.dumps(described(value).strip('"'), ensure_ascii=False)


_OUR_PREFIXES = (PREFIX, LEGACY_PREFIX)


def _plain_count(text: Any) -> bool:
    """Nine digits at most, written as Go's strconv.Itoa would: a number every rule accepts as it is."""
    return type(text) is str and 0 < len(text) <= 9 and text.isascii() and text.isdigit() and is_canonical(text)


def plainly_valid(priority_class: Mapping[str, Any]) -> bool:
    """True only for a class on which every rule of `every_rule` is silent, decided in one pass that builds
    nothing. Most writes are such classes; the rules, and the words of their messages, run for the others.

    It may say False for a class the rules pass (an unusual but valid spelling, a negative minimum): it only
    has to be right when it says True, which a property test holds it to. It exists for speed: every
    PriorityClass write is judged, and the rules cost several times more (architecture §4).
    """
    value = priority_class.get("value")
    metadata = priority_class.get("metadata")
    if type(value) is not int or value > HIGHEST_USER_PRIORITY or type(metadata) is not dict:
        return False
    name = metadata.get("name")
    if type(name) is not str or not name or name.startswith("system-"):
        return False
    labels = metadata.get("labels")
    if labels is not None:
        if type(labels) is not dict:
            return False
        for key, label in labels.items():
            if type(key) is not str or type(label) is not str:
                return False
    annotations = metadata.get("annotations")
    if annotations is None:
        return True
    if type(annotations) is not dict:
        return False
    for key in annotations:
        if type(key) is not str or (key.startswith(_OUR_PREFIXES) and key not in POLICY_KEYS):
            return False
    # nine digits: below every bound of the contract (int32, MAX_TOLERATION_SECONDS, every system class)
    for contract in CONTRACT_ANNOTATIONS:
        if contract.key in annotations and not _plainly_written(annotations[contract.key], contract):
            return False
    if MINIMUM.key not in annotations:
        return TOLERATION.key not in annotations  # a toleration without a minimum is warned about
    return not holds_back_no_preemptor(value, int(annotations[MINIMUM.key]))


def _plainly_written(raw: Any, contract: ContractAnnotation) -> bool:
    return _plain_count(raw) or (contract.forever is not None and raw == contract.forever)


def check_priority_class(priority_class: Mapping[str, Any]) -> list[Finding]:
    """Errors and warnings for the toleration annotations of one PriorityClass (Kubernetes JSON)."""
    return [] if plainly_valid(priority_class) else every_rule(priority_class)


def every_rule(priority_class: Mapping[str, Any]) -> list[Finding]:
    """What each rule finds in one PriorityClass; `check_priority_class` asks it when the class is not
    plainly valid."""
    name = name_of(priority_class) or "<unnamed>"
    annotations = annotations_of(priority_class)
    findings: list[Finding] = []
    class_value = priority_class.get("value")
    if not isinstance(class_value, int) or isinstance(class_value, bool):
        findings.append(
            error(
                "invalid-value",
                f"{subject(name)}: value is {_class_value_text(class_value)}; a PriorityClass needs an integer "
                f"value. Fix: {_class_value_fix(class_value)}.",
                ("value",),
            )
        )
        class_value = None
    findings += _metadata_shape(name, priority_class.get("metadata"))
    findings += _server_rules(name, class_value)
    findings += _unknown_and_legacy_keys(name, annotations)
    parsed, parse_findings = _parse_all(name, annotations)
    findings += parse_findings
    seconds = parsed.get(TOLERATION.key)
    if seconds is not None and TOLERATION.maximum is not None and seconds > TOLERATION.maximum:
        findings.append(toleration_overflow(name, annotations[TOLERATION.key]))
    findings += _effect_warnings(name, class_value, annotations, parsed)
    return findings


@dataclass(frozen=True)
class ManagedAnnotations:
    """The annotations a policy sets on a class it governs; keys it leaves unset must stay absent."""

    policy_name: str
    values: Mapping[str, str] = field(default_factory=dict)


def check_managed_annotation_change(
    class_name: str,
    old_annotations: Mapping[str, str],
    new_annotations: Mapping[str, str],
    managed: ManagedAnnotations | None,
) -> list[Finding]:
    """Refuse a hand-made change to annotations a policy manages (the caller exempts the operator).

    A request may keep what is there or write what the policy wants; anything else is refused.
    """
    if managed is None:
        return []
    findings: list[Finding] = []
    for key in POLICY_KEYS:
        wanted = managed.values.get(key)
        before = old_annotations.get(key)
        after = new_annotations.get(key)
        if after == before or after == wanted:
            continue
        change = f"removes {key}" if after is None else f'sets {key}="{after}"'
        findings.append(
            error(
                "managed-annotation-changed",
                f"{subject(class_name)}: this change {change}, but PreemptionTolerationPolicy "
                f'"{managed.policy_name}" manages it. Fix: edit the policy instead '
                f"(kubectl edit ptp {managed.policy_name}).",
            )
        )
    return findings
