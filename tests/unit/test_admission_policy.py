"""The ValidatingAdmissionPolicy agrees with the webhook's PriorityClass rules: it refuses what they refuse
with a rule it holds, with the same message, and passes everything else; its integer patterns are Go's
strconv.ParseInt exactly. Evaluated with a CEL runtime as the API server would (matchConditions, then
variables read lazily, then each validation)."""

from __future__ import annotations

import re
from typing import Any

import cel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from preemption_toleration.admission.decisions import validate_priority_class
from preemption_toleration.api.admission import AdmissionReview
from preemption_toleration.core.annotations import LEGACY_PREFIX, POLICY_KEYS, PREFIX
from preemption_toleration.core.intparse import IntParseError, go_int_pattern, parse_go_int
from preemption_toleration.manifests.admission_policy import admission_policy, admission_policy_binding, in_range
from preemption_toleration.validation.findings import Finding
from preemption_toleration.validation.priority_class import check_priority_class
from tests.builders import priority_class
from tests.unit.admission_payloads import review
from tests.unit.test_admission_decisions import CONFIG, EMPTY
from tests.unit.test_priority_class_rules import CLEAN, RULES

MIN, TOL = POLICY_KEYS
# What the policy holds; the rest is the API server's own (names, values, shapes) or the webhook's alone.
POLICY_RULES = {"invalid-integer", "unknown-key", "toleration-overflow"}
SERVER_RULES = {"reserved-name", "value-out-of-range", "invalid-value", "annotation-not-string", "invalid-metadata"}
SPEC = admission_policy()["spec"]


def _context(variables: dict[str, Any]) -> cel.Context:
    context = cel.Context()
    context.update(variables)
    context.add_function("substring", _substring)
    return context


def _substring(text: str, start: int, end: int | None = None) -> str:
    """Kubernetes' strings library's substring, which the runtime here lacks: characters, range-checked."""
    stop = len(text) if end is None else end
    if not 0 <= start <= stop <= len(text):
        raise ValueError(f"index out of range: {start}, {end}")
    return text[start:stop]


def _evaluate(expression: str, variables: dict[str, Any]) -> Any:
    return cel.evaluate(expression, _context(variables))


def policy_messages(klass: dict[str, Any], old: dict[str, Any] | None = None) -> list[str] | None:
    """The messages the policy refuses `klass` with (empty: admitted), or None when no matchCondition holds;
    `old`: the class before an update."""
    scope: dict[str, Any] = {"object": klass, "oldObject": old}
    if not all(_evaluate(c["expression"], scope) for c in SPEC["matchConditions"]):
        return None
    variables: dict[str, Any] = {}
    for variable in SPEC["variables"]:  # lazily evaluated by the API server: one that fails is never read
        try:
            variables[variable["name"]] = _evaluate(variable["expression"], {**scope, "variables": variables})
        except (RuntimeError, KeyError):
            continue
    scope["variables"] = variables
    messages = []
    for validation in SPEC["validations"]:
        verdict = _evaluate(validation["expression"], scope)
        assert isinstance(verdict, bool), validation["expression"]
        if not verdict:
            messages.append(_evaluate(validation["messageExpression"], scope))
    return messages


def webhook_errors(klass: dict[str, Any]) -> list[Finding]:
    return [finding for finding in check_priority_class(klass) if finding.is_error]


REFUSED = [row for row in RULES if row[0] in POLICY_RULES]
OTHERS = [row for row in RULES if row[0] not in POLICY_RULES | SERVER_RULES]


def test_the_table_has_every_rule_of_the_policy() -> None:
    assert {row[0] for row in REFUSED} == POLICY_RULES
    assert all(row[0] in POLICY_RULES | SERVER_RULES for row in RULES if row[2].value == "error")


@pytest.mark.parametrize(
    ("rule", "klass", "severity", "words"), REFUSED, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSED)]
)
def test_the_policy_refuses_each_row_with_the_webhook_s_message(
    rule: str, klass: dict[str, Any], severity: object, words: list[str]
) -> None:
    [finding] = webhook_errors(klass)
    [message] = policy_messages(klass) or ["not refused"]
    if rule == "unknown-key":  # the webhook alone finds the nearest key; the policy names both
        suggestion = finding.message.rsplit("did you mean ", 1)[1]
        assert message == finding.message.replace(suggestion, f"{MIN} or {TOL}?")
        assert all(word in message for word in words if "did you mean" not in word)
    else:
        assert message == finding.message


@pytest.mark.parametrize(("rule", "klass", "severity", "words"), OTHERS, ids=[r[0] for r in OTHERS])
def test_the_policy_admits_what_the_webhook_only_warns_about(
    rule: str, klass: dict[str, Any], severity: object, words: list[str]
) -> None:
    assert webhook_errors(klass) == []
    assert not policy_messages(klass)


@pytest.mark.parametrize(("case", "klass"), CLEAN, ids=[c[0] for c in CLEAN])
def test_the_policy_admits_every_valid_class(case: str, klass: dict[str, Any]) -> None:
    assert not policy_messages(klass)


def test_classes_without_our_annotations_are_not_even_evaluated() -> None:
    for klass in (priority_class("low", 8000), priority_class("low", 8000, **{"example.com/a": "1"})):
        assert policy_messages(klass) is None
    assert policy_messages(priority_class("low", 8000, **{LEGACY_PREFIX + "toleration-seconds": "x"})) is None


MORE = [
    # (case, minimum, toleration): refused or not exactly as the webhook does, with its message
    ("a long value is shown cut to 64 characters", "1" * 80, "-1"),
    ("a value of exactly 64 characters is shown whole", "x" * 64, "-1"),
    ("leading zeros are Go's", "0" * 40 + "10000", "0" * 30 + "9223372036"),
    ("the int32 bounds", "-2147483648", "-9223372036854775808"),
    ("past the int32 bounds", "2147483648", "600"),
    ("past the negative int32 bound", "-2147483649", "600"),
    ("past the negative int64 bound", "10000", "-9223372036854775809"),
    ("int64 fits but wraps", "10000", "9223372036854775807"),
    ("a sign alone", "+", "-"),
    ("a trailing newline", "10000\n", "600"),
    ("unicode digits", "\u0661\u0662", "600"),
    ("both refused", "10k", "1e3"),
    ("long values of zeros before the digits", "-" + "0" * 5000 + "10000", "+" + "0" * 5000 + "9223372036"),
    ("long values past the range", "0" * 100 + "2147483648", "-" + "0" * 100 + "9223372036854775809"),
    ("long values past the digits", "1" * 100, "1" * 100),
    ("long values that wrap", "10000", "0" * 100 + "9223372037"),
    ("long values that are not numbers", "0" * 100 + "x1", "-" * 100),
]


@pytest.mark.parametrize(("case", "minimum", "toleration"), MORE, ids=[c[0] for c in MORE])
def test_the_policy_and_the_webhook_agree(case: str, minimum: str, toleration: str) -> None:
    klass = priority_class("low", 8000, minimum, toleration)
    assert policy_messages(klass) == [finding.message for finding in webhook_errors(klass)]


def test_an_unknown_key_beside_a_bad_value_is_refused_for_both() -> None:
    klass = priority_class("low", 8000, "10k", **{PREFIX + "tolerance": "5"})
    messages = policy_messages(klass) or []
    assert len(messages) == 2 and f'unknown annotation {PREFIX}tolerance="5"' in messages[0]
    assert messages[1] == next(f.message for f in webhook_errors(klass) if f.rule == "invalid-integer")


def webhook_answer(klass: dict[str, Any], old: dict[str, Any] | None = None) -> str | None:
    """The validating webhook's own decision: its message when it refuses, else None."""
    payload = review(klass, old=old, operation="UPDATE" if old else "CREATE")
    decision = validate_priority_class(AdmissionReview.model_validate(payload).request, EMPTY, CONFIG)
    return None if decision.allowed else decision.status.message


TYPO, TYPO2 = PREFIX + "toleration-second", PREFIX + "minimum-priority"
UPDATES = [
    # (case, old, new): an update is refused only for an error it brings, by both
    ("a label on a class already wrong", priority_class("low", 8000, "10k"), None),
    ("a new wrong value", priority_class("low", 8000, "10k"), priority_class("low", 8000, "9k")),
    ("a valid class made wrong", priority_class("low", 8000, "10000"), priority_class("low", 8000, "1e4")),
    ("a wrong value put right", priority_class("low", 8000, "10k"), priority_class("low", 8000, "10000")),
    ("a wrong toleration kept", priority_class("low", 8000, "10000", "9223372037"), None),
    (
        "a wrong toleration changed",
        priority_class("low", 8000, "10000", "9223372037"),
        priority_class("low", 8000, "10000", "9223372038"),
    ),
    (
        "an unknown key kept beside a new value",
        priority_class("low", 8000, **{TYPO: "600"}),
        priority_class("low", 8000, "10000", **{TYPO: "600"}),
    ),
    (
        "an unknown key added beside one kept",
        priority_class("low", 8000, **{TYPO: "600"}),
        priority_class("low", 8000, **{TYPO: "600", TYPO2: "1"}),
    ),
    (
        "an unknown key's value changed",
        priority_class("low", 8000, **{TYPO: "600"}),
        priority_class("low", 8000, **{TYPO: "6"}),
    ),
]


@pytest.mark.parametrize(("case", "old", "new"), UPDATES, ids=[c[0] for c in UPDATES])
def test_an_update_is_judged_as_the_webhook_judges_it(
    case: str, old: dict[str, Any], new: dict[str, Any] | None
) -> None:
    klass = new or {**old, "metadata": {**old["metadata"], "labels": {"team": "a"}}}
    expected = webhook_answer(klass, old)
    messages = policy_messages(klass, old) or []
    assert bool(messages) is (expected is not None)
    if expected is not None:
        assert " ".join(messages) == re.sub(r"did you mean [^ ]+\?", f"did you mean {MIN} or {TOL}?", expected)


# ------------------------------------------------------------------------- the integer patterns


def go_accepts(text: str, bits: int) -> bool:
    try:
        parse_go_int(text, bits)
    except IntParseError:
        return False
    return True


def pattern_accepts(text: str, bits: int) -> bool:
    """CEL's matches(), as the policy calls it: RE2 syntax, `$` only at the very end."""
    return bool(_evaluate("text.matches(pattern)", {"text": text, "pattern": go_int_pattern(bits)}))


def policy_accepts(text: str, bits: int) -> bool:
    """The policy's check, the whole pattern or, on a long value, its two cheap steps."""
    return bool(_evaluate(in_range("text", bits), {"text": text}))


BOUNDS = [str(sign * (2 ** (bits - 1) + delta)) for bits in (32, 64) for sign in (1, -1) for delta in (-2, -1, 0, 1)]
TEXTS = [*BOUNDS, "", "0", "-0", "+0", "+", "-", "+-1", "--1", " 1", "1 ", "1\n", "0x10", "1e3", "1_000", "1.0"]


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("text", TEXTS)
def test_the_pattern_is_go_s_parse_int(text: str, bits: int) -> None:
    assert pattern_accepts(text, bits) is go_accepts(text, bits)
    for padded in (text, text[:1] + "0" * 70 + text[1:], "0" * 70 + text):  # short, and long with zeros
        assert policy_accepts(padded, bits) is go_accepts(padded, bits), padded


@settings(max_examples=300, deadline=None)
@given(
    bits=st.sampled_from([32, 64]),
    sign=st.sampled_from(["", "+", "-"]),
    zeros=st.sampled_from([0, 1, 3, 50, 70, 1000]),
    magnitude=st.one_of(
        st.integers(0, 2**64),
        st.integers(-5, 5).map(lambda delta: 2**31 + delta),
        st.integers(-5, 5).map(lambda delta: 2**63 + delta),
    ),
)
def test_the_pattern_is_go_s_parse_int_near_every_bound(bits: int, sign: str, zeros: int, magnitude: int) -> None:
    text = sign + "0" * zeros + str(magnitude)
    assert pattern_accepts(text, bits) is go_accepts(text, bits), text
    assert policy_accepts(text, bits) is go_accepts(text, bits), text


@settings(max_examples=200, deadline=None)
@given(
    minimum=st.text(alphabet="0123456789+- x", max_size=22),
    toleration=st.text(alphabet="0123456789+- x", max_size=22),
)
def test_any_pair_of_values_is_judged_as_the_webhook_does(minimum: str, toleration: str) -> None:
    klass = priority_class("low", 8000, minimum, toleration)
    assert policy_messages(klass) == [finding.message for finding in webhook_errors(klass)]


# ------------------------------------------------------------------------- the objects


def test_the_policy_reads_only_what_kubernetes_gives_it() -> None:
    expressions = [c["expression"] for c in SPEC["matchConditions"]] + [v["expression"] for v in SPEC["variables"]]
    expressions += [v[key] for v in SPEC["validations"] for key in ("expression", "messageExpression")]
    for expression in expressions:
        assert set(cel.compile(expression).variables()) - {"k"} <= {"object", "oldObject", "variables"}, expression
    for validation in SPEC["validations"]:
        assert validation["message"] and "\n" not in validation["message"]


def test_the_binding_denies_and_is_narrowed_only_when_asked() -> None:
    binding = admission_policy_binding()
    assert binding["spec"] == {"policyName": admission_policy()["metadata"]["name"], "validationActions": ["Deny"]}
    narrowed = admission_policy_binding({"matchLabels": {"test": "x"}})
    assert narrowed["spec"]["matchResources"] == {"objectSelector": {"matchLabels": {"test": "x"}}}
    assert SPEC["failurePolicy"] == "Fail"
    assert SPEC["matchConstraints"]["resourceRules"][0]["operations"] == ["CREATE", "UPDATE"]
