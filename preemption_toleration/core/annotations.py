"""The two PriorityClass annotations of the upstream PreemptionToleration plugin, parsed as upstream does."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from preemption_toleration.core.intparse import INT64_MAX, IntParseError, parse_go_int, wrap_int32
from preemption_toleration.core.shapes import as_mapping
from preemption_toleration.core.times import NANOSECONDS_PER_SECOND

PREFIX = "preemption-toleration.scheduling.x-k8s.io/"
# Scheduler-plugins releases before v0.25.7 read this prefix; nothing reads it any more.
LEGACY_PREFIX = "preemption-toleration.scheduling.sigs.k8s.io/"

# Upstream multiplies toleration-seconds by 10^9 in an int64; anything larger wraps into "no toleration".
MAX_TOLERATION_SECONDS = INT64_MAX // NANOSECONDS_PER_SECOND


@dataclass(frozen=True, slots=True)
class ContractAnnotation:
    """One annotation of upstream's contract on a PriorityClass, declared once: the parser, the admission
    rules (webhook and ValidatingAdmissionPolicy), the operator's plan and `ptol validate` all read this
    record (tests/unit/test_contract_annotations.py checks that they agree)."""

    name: str  # the key after PREFIX
    bits: int  # strconv.ParseInt's bit size upstream parses it with
    spec_field: str  # the policy's spec field the operator writes it from
    variable: str  # its variable in the ValidatingAdmissionPolicy's CEL
    default: str  # what its absence means
    unit: str  # what its value counts, for a refusal's fix
    sample: str  # a value as a fix suggests it
    forever: str | None = None  # the one negative value written on purpose, if any
    maximum: int | None = None  # a bound tighter than `bits`, checked after the parse

    key: str = field(init=False)  # PREFIX + name
    attribute: str = field(init=False)  # the spec field's name in Python (the API models' snake_case)

    def __post_init__(self) -> None:
        # read on the request path (the PriorityClass rules, the plan): computed once
        object.__setattr__(self, "key", PREFIX + self.name)
        snake = "".join(f"_{letter.lower()}" if letter.isupper() else letter for letter in self.spec_field)
        object.__setattr__(self, "attribute", snake)

    @property
    def fix(self) -> str:
        """How to write it, for a refusal."""
        forever = f', or "{self.forever}" for forever' if self.forever is not None else ""
        return f'write {self.unit} in plain digits, e.g. "{self.sample}"{forever}'

    @property
    def example(self) -> str:
        """A value as a manifest writes it, quoted."""
        forever = f' (or "{self.forever}" for forever)' if self.forever is not None else ""
        return f'"{self.sample}"{forever}'


# The rows, as a table: the facts upstream's plugin fixes, then the words of a refusal's fix and the bounds.
# fmt: off
MINIMUM = ContractAnnotation("minimum-preemptable-priority", 32, "minimumPreemptablePriority", "minimum",
                             default="the class value + 1", unit="a priority", sample="10000")
TOLERATION = ContractAnnotation("toleration-seconds", 64, "tolerationSeconds", "seconds",
                                default="0, no toleration", unit="whole seconds", sample="600",
                                forever="-1", maximum=MAX_TOLERATION_SECONDS)
# fmt: on
CONTRACT_ANNOTATIONS = (MINIMUM, TOLERATION)
BY_KEY = {annotation.key: annotation for annotation in CONTRACT_ANNOTATIONS}
POLICY_KEYS = tuple(BY_KEY)
MINIMUM_PREEMPTABLE_PRIORITY = MINIMUM.key
TOLERATION_SECONDS = TOLERATION.key

# Set on an Eviction by a preemptor that wants the guard to judge it exactly (architecture §5).
PREEMPTOR_PRIORITY = PREFIX + "preemptor-priority"
PREEMPTOR = PREFIX + "preemptor"


@dataclass(frozen=True, slots=True)
class TolerationPolicy:
    """The effective policy of one PriorityClass, defaults filled in."""

    minimum_preemptable_priority: int
    toleration_seconds: int


@dataclass(frozen=True, slots=True)
class ClassToleration:
    """A PriorityClass's toleration as upstream reads it, parsed once (when the class enters a cache) and
    then read by every decision: its policy, or the annotation that makes upstream ignore the whole policy."""

    class_name: str
    policy: TolerationPolicy | None  # None: an annotation does not parse (`invalid_key`, `invalid_value`)
    invalid_key: str | None = None
    invalid_value: str | None = None


class PolicyParseError(ValueError):
    """An annotation upstream cannot parse; upstream then ignores the class's whole policy."""

    def __init__(self, class_name: str, key: str, value: str, cause: IntParseError) -> None:
        self.class_name = class_name
        self.key = key
        self.value = value
        self.cause = cause
        super().__init__(f'PriorityClass "{class_name}": {key}="{value}": {cause}')


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_mapping(obj.get("metadata"))  # malformed manifests: read as absent


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_mapping(_metadata(obj).get("annotations"))


def name_of(obj: Mapping[str, Any]) -> str:
    return str(_metadata(obj).get("name") or "")


def parse_toleration_policy(priority_class: Mapping[str, Any]) -> TolerationPolicy:
    """parsePreemptionTolerationPolicy of upstream: defaults value+1 (int32 arithmetic) and 0."""
    name = name_of(priority_class)
    return _parsed(name, *_policy_inputs(priority_class.get("value"), annotations_of(priority_class)))


def _policy_inputs(value: Any, annotations: Mapping[str, Any]) -> tuple[str | None, str | None, int]:
    """The two annotations' raw values (None when absent) and the minimum's default."""
    minimum = str(annotations[MINIMUM_PREEMPTABLE_PRIORITY]) if MINIMUM_PREEMPTABLE_PRIORITY in annotations else None
    default = wrap_int32(int(value or 0) + 1) if minimum is None else 0
    toleration = str(annotations[TOLERATION_SECONDS]) if TOLERATION_SECONDS in annotations else None
    return minimum, toleration, default


def class_toleration(priority_class: Mapping[str, Any]) -> ClassToleration:
    """The toleration of `priority_class` (Kubernetes JSON), its parse error included: never raises."""
    return toleration_of(name_of(priority_class), priority_class.get("value"), annotations_of(priority_class))


def toleration_of(name: str, value: Any, annotations: Mapping[str, Any]) -> ClassToleration:
    """`class_toleration` of a class given by its name, value and annotations."""
    try:
        return ClassToleration(name, _parsed(name, *_policy_inputs(value, annotations)))
    except PolicyParseError as error:
        return ClassToleration(name, None, error.key, error.value)


@lru_cache(maxsize=4096)
def _parsed(name: str, minimum: str | None, toleration: str | None, default_minimum: int) -> TolerationPolicy:
    """The policy of these annotation values. A cluster has a few distinct ones, and the checks that take a
    class as JSON (the extender, `ptol explain`) read one per pod: each is parsed once (a value that does not
    parse raises every time). The caches parse each class once, into its `ClassToleration`."""

    def parse(key: str, raw: str) -> int:
        try:
            return parse_go_int(raw, BY_KEY[key].bits)
        except IntParseError as error:
            raise PolicyParseError(name, key, raw, error) from error

    return TolerationPolicy(
        minimum_preemptable_priority=(
            parse(MINIMUM_PREEMPTABLE_PRIORITY, minimum) if minimum is not None else default_minimum
        ),
        toleration_seconds=parse(TOLERATION_SECONDS, toleration) if toleration is not None else 0,
    )
