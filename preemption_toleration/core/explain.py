"""Plain-words explanations of a pod's or a class's protection (pure), for `ptol explain`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from preemption_toleration.core.annotations import PolicyParseError, name_of, parse_toleration_policy
from preemption_toleration.core.pods import pod_priority, pod_ref, priority_class_name
from preemption_toleration.core.protection import ProtectionKind, protection_of
from preemption_toleration.core.times import rfc3339


def explain_pod(
    pod: Mapping[str, Any], priority_class: Mapping[str, Any] | None, policy: str | None, now: datetime
) -> dict[str, Any]:
    protection = protection_of(pod, priority_class, now)
    priority = pod_priority(pod)
    facts: dict[str, Any] = {
        "kind": "Pod",
        "name": pod_ref(pod),
        "priorityClassName": priority_class_name(pod) or None,
        "priority": priority,
        "policy": policy,
        "protection": protection.kind.value,
        "reason": protection.reason,
    }
    if protection.protected:
        assert protection.refuse_below is not None  # a protection always says below what
        facts["refusedPriorities"] = {"from": priority + 1, "to": protection.refuse_below - 1}
        facts["mayPreemptNow"] = f">= {protection.refuse_below}"
    else:
        facts["mayPreemptNow"] = f"> {priority}"
    if protection.kind is ProtectionKind.UNTIL and protection.until is not None:
        facts["until"] = rfc3339(protection.until)
        facts["secondsLeft"] = protection.seconds_left(now)
    if protection.toleration_seconds is not None:
        facts["tolerationSeconds"] = protection.toleration_seconds
    return facts


_MOMENT = datetime(2000, 1, 1, tzinfo=UTC)  # any moment will do: a class's protection does not depend on it


def explain_class(priority_class: Mapping[str, Any], policy: str | None) -> dict[str, Any]:
    value = int(priority_class.get("value") or 0)
    facts: dict[str, Any] = {"kind": "PriorityClass", "name": name_of(priority_class), "value": value, "policy": policy}
    try:
        parsed = parse_toleration_policy(priority_class)
    except PolicyParseError as error:
        facts.update(valid=False, reason=f"the toleration is ignored: {error}")
        return facts
    facts.update(
        valid=True,
        minimumPreemptablePriority=parsed.minimum_preemptable_priority,
        tolerationSeconds=parsed.toleration_seconds,
    )
    # The class's protection is the one its pods have (core/protection.py, the contract's checks 4 to 8):
    # a pod scheduled at this very moment, and one not scheduled yet (check 7).
    pod = {"spec": {"priorityClassName": facts["name"], "priority": value}}
    scheduled = {
        **pod,
        "status": {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(_MOMENT)}]},
    }
    once_scheduled = protection_of(scheduled, priority_class, _MOMENT)
    before_scheduled = protection_of(pod, priority_class, _MOMENT)
    facts["protection"] = once_scheduled.kind.value
    if before_scheduled.protected:
        facts["refusedPriorities"] = {"from": value + 1, "to": parsed.minimum_preemptable_priority - 1}
        facts["protectedUntilScheduled"] = not once_scheduled.protected
    return facts


def render(facts: Mapping[str, Any]) -> str:
    """The facts in plain words."""
    source = f' (PreemptionTolerationPolicy "{facts["policy"]}")' if facts.get("policy") else ""
    if facts["kind"] == "PriorityClass":
        head = f"PriorityClass {facts['name']} (value {facts['value']}){source}:"
        if not facts["valid"]:
            return f"{head} {facts['reason']}; every higher priority may preempt its pods."
        if facts["protection"] == ProtectionKind.NONE.value and facts.get("protectedUntilScheduled"):
            refused = facts["refusedPriorities"]
            return (
                f"{head} toleration-seconds 0: its pods refuse preemptors of priority {refused['from']} to "
                f"{refused['to']} only until they are scheduled; then every higher priority may preempt them."
            )
        if facts["protection"] == ProtectionKind.NONE.value:
            return f"{head} no toleration; every higher priority may preempt its pods."
        refused = facts["refusedPriorities"]
        when = (
            "forever"
            if facts["protection"] == ProtectionKind.FOREVER.value
            else f"for {facts['tolerationSeconds']} s after each pod is scheduled"
        )
        return (
            f"{head} its pods refuse preemptors of priority {refused['from']} to {refused['to']} {when}; "
            f"priority {facts['minimumPreemptablePriority']} and above may preempt them at once."
        )
    class_name = facts["priorityClassName"] or "-"
    head = f"pod {facts['name']} (PriorityClass {class_name}, priority {facts['priority']}){source}:"
    kind = facts["protection"]
    if kind == ProtectionKind.NONE.value:
        return f"{head} not protected ({facts['reason']}); every priority {facts['mayPreemptNow']} may preempt it now."
    refused = facts["refusedPriorities"]
    span = f"priorities {refused['from']} to {refused['to']}"
    if kind == ProtectionKind.FOREVER.value:
        tail = f"refuses {span} forever"
    elif kind == ProtectionKind.NOT_SCHEDULED.value:
        tail = f"refuses {span}; not scheduled yet, its {facts['tolerationSeconds']} s start when it is"
    else:
        tail = f"refuses {span} until {facts['until']} ({facts['secondsLeft']} s left), then every higher priority may"
    return f"{head} {tail}; priorities {facts['mayPreemptNow']} may preempt it now."
