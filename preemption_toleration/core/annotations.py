"""The two PriorityClass annotations of the upstream PreemptionToleration plugin, parsed as upstream does."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from preemption_toleration.core.intparse import IntParseError, parse_go_int, wrap_int32
from preemption_toleration.core.shapes import as_mapping

PREFIX = "preemption-toleration.scheduling.x-k8s.io/"
# Scheduler-plugins releases before v0.25.7 read this prefix; nothing reads it any more.
LEGACY_PREFIX = "preemption-toleration.scheduling.sigs.k8s.io/"

MINIMUM_PREEMPTABLE_PRIORITY = PREFIX + "minimum-preemptable-priority"
TOLERATION_SECONDS = PREFIX + "toleration-seconds"
POLICY_KEYS = (MINIMUM_PREEMPTABLE_PRIORITY, TOLERATION_SECONDS)
KEY_BITS = {MINIMUM_PREEMPTABLE_PRIORITY: 32, TOLERATION_SECONDS: 64}

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
            return parse_go_int(raw, KEY_BITS[key])
        except IntParseError as error:
            raise PolicyParseError(name, key, raw, error) from error

    return TolerationPolicy(
        minimum_preemptable_priority=(
            parse(MINIMUM_PREEMPTABLE_PRIORITY, minimum) if minimum is not None else default_minimum
        ),
        toleration_seconds=parse(TOLERATION_SECONDS, toleration) if toleration is not None else 0,
    )
