"""Plain-words explanations of a pod's or a class's protection (pure), for `ptol explain`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from preemption_toleration.core.annotations import (
    MINIMUM,
    POLICY_KEYS,
    TOLERATION,
    PolicyParseError,
    annotations_of,
    class_toleration,
    name_of,
    parse_toleration_policy,
)
from preemption_toleration.core.exemption import PriorityClassNotFound, exemption
from preemption_toleration.core.pods import (
    PodFacts,
    PodJson,
    pod_priority,
    pod_ref,
    preempts_never,
    priority_class_name,
)
from preemption_toleration.core.protection import Protection, ProtectionKind, protection_of, protection_under
from preemption_toleration.core.times import rfc3339

# Shown in text; `-o json` lists them all.
LISTED_IN_TEXT = 20


@dataclass(frozen=True)
class Member:
    """A pod judged as a member of its PodGroup: the group ("namespace/name"), its disruption mode, and the
    facts the contract reads (`core.groups.as_victim`)."""

    group: str
    disruption: str
    judged: PodFacts


def has_toleration(priority_class: Mapping[str, Any]) -> bool:
    """Whether the class has either annotation of a toleration. Without both, upstream still reads a policy
    (minimum value + 1, 0 seconds) that refuses no preemptor: the class has no preemption toleration."""
    return any(key in annotations_of(priority_class) for key in POLICY_KEYS)


def explain_pod(
    pod: Mapping[str, Any],
    priority_class: Mapping[str, Any] | None,
    policy: str | None,
    now: datetime,
    member: Member | None = None,
) -> dict[str, Any]:
    """The facts of `pod`'s protection; of a member of a PodGroup (`member`), as its group's (docs/contract.md,
    "Pod groups"): `priority_class` is then the group's class."""
    judged = member.judged if member is not None else PodJson(pod)
    toleration = class_toleration(priority_class) if priority_class is not None else None
    protection = protection_under(judged, toleration, now)
    priority = judged.priority
    facts: dict[str, Any] = {
        "kind": "Pod",
        "name": pod_ref(pod),
        "priorityClassName": judged.priority_class or None,
        "priority": priority,
        **({"podGroup": member.group, "disruptionMode": member.disruption} if member is not None else {}),
        "policy": policy,
        "protection": protection.kind.value,
        "reason": protection.reason,
        "toleration": priority_class is not None and has_toleration(priority_class),
    }
    if not facts["toleration"]:  # no value of upstream's defaults is shown: nobody set one
        if facts["priorityClassName"]:
            facts["reason"] = f"PriorityClass {facts['priorityClassName']} has no preemption toleration"
        facts["mayPreemptNow"] = f"> {priority}"
        return facts
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
        facts[TOLERATION.spec_field] = protection.toleration_seconds
    return facts


def explain_group(
    group: str,
    disruption: str,
    members: Sequence[tuple[Mapping[str, Any], Member]],
    priority_class: Mapping[str, Any] | None,
    policy: str | None,
    now: datetime,
    judged: Member,
) -> dict[str, Any]:
    """The facts of a PodGroup's protection (docs/contract.md, "Pod groups"): with `disruptionMode: all` one
    protection, its members' (`judged`: the group's facts, as any member is judged; the group's time runs
    from when its last member was scheduled); with `single`, each member's, at the group's priority."""
    whole = explain_pod({"metadata": {}}, priority_class, policy, now, judged)
    for key in ("podGroup", "disruptionMode", "name", "kind"):
        whole.pop(key, None)
    facts: dict[str, Any] = {"kind": "PodGroup", "name": group, "disruptionMode": disruption, "members": len(members)}
    if disruption == "all":
        return {**facts, **whole}
    each = [explain_pod(pod, priority_class, policy, now, member) for pod, member in members]
    keep = ("priorityClassName", "priority", "policy", "toleration")
    return {**facts, **{key: whole[key] for key in keep}, "memberProtections": sorted(each, key=lambda f: f["name"])}


_MOMENT = datetime(2000, 1, 1, tzinfo=UTC)  # any moment will do: a class's protection does not depend on it


def explain_class(priority_class: Mapping[str, Any], policy: str | None) -> dict[str, Any]:
    value = int(priority_class.get("value") or 0)
    facts: dict[str, Any] = {"kind": "PriorityClass", "name": name_of(priority_class), "value": value, "policy": policy}
    facts["toleration"] = has_toleration(priority_class)
    if not facts["toleration"]:  # no value of upstream's defaults is shown: nobody set one
        facts.update(valid=True, protection=ProtectionKind.NONE.value)
        return facts
    try:
        parsed = parse_toleration_policy(priority_class)
    except PolicyParseError as error:
        facts.update(valid=False, reason=f"the toleration is ignored: {error}")
        return facts
    facts["valid"] = True
    facts[MINIMUM.spec_field] = parsed.minimum_preemptable_priority
    facts[TOLERATION.spec_field] = parsed.toleration_seconds
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
        if facts.get("toleration") is False:
            return f"{head} no preemption toleration (neither of its annotations); {_ANY_HIGHER} may preempt its pods."
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
            else f"for {facts[TOLERATION.spec_field]} s after each pod is scheduled"
        )
        return (
            f"{head} its pods refuse preemptors of priority {refused['from']} to {refused['to']} {when}; "
            f"priority {facts[MINIMUM.spec_field]} and above may preempt them at once."
        )
    if facts["kind"] == "PodGroup":
        return _render_group(facts, source)
    return _render_pod(facts, source) + _render_preemptor(facts)


def _render_group(facts: Mapping[str, Any], source: str) -> str:
    count = facts["members"]
    head = (
        f"PodGroup {facts['name']} (PriorityClass {facts['priorityClassName'] or '-'}, priority {facts['priority']}, "
        f"disruptionMode {facts['disruptionMode']}, {count} member{'s' if count != 1 else ''}){source}:"
    )
    if facts["disruptionMode"] == "all":
        since = "from when its last member was scheduled"
        return f"{head} {_protection_words(facts, since)} The group is preempted whole or not at all."
    members = facts["memberProtections"]
    lines = [f"{head} each member is judged on its own, at the group's priority:"]
    for member in members[:LISTED_IN_TEXT]:
        lines.append(f"  pod {member['name']}: {_protection_words(member)}")
    if len(members) > LISTED_IN_TEXT:
        lines.append(f"  ... and {len(members) - LISTED_IN_TEXT} more (-o json lists them all)")
    return "\n".join(lines)


_ANY_HIGHER = "any higher priority with preemptionPolicy PreemptLowerPriority"


def _render_pod(facts: Mapping[str, Any], source: str) -> str:
    class_name = facts["priorityClassName"] or "-"
    member = f" of PodGroup {facts['podGroup']}" if facts.get("podGroup") else ""
    head = f"pod {facts['name']}{member} (PriorityClass {class_name}, priority {facts['priority']}){source}:"
    return f"{head} {_protection_words(facts)}"


def _protection_words(facts: Mapping[str, Any], since: str = "") -> str:
    """Who may preempt it now, and until when the others are refused (`since`: from when its time runs)."""
    kind = facts["protection"]
    if facts.get("toleration") is False and facts["priorityClassName"]:
        return f"not protected: {facts['reason']}; {_ANY_HIGHER} may preempt it now."
    if kind == ProtectionKind.NONE.value:
        return f"not protected ({facts['reason']}); every priority {facts['mayPreemptNow']} may preempt it now."
    refused = facts["refusedPriorities"]
    span = f"priorities {refused['from']} to {refused['to']}"
    if kind == ProtectionKind.FOREVER.value:
        tail = f"refuses {span} forever"
    elif kind == ProtectionKind.NOT_SCHEDULED.value:
        tail = f"refuses {span}; not scheduled yet, its {facts[TOLERATION.spec_field]} s start when it is"
    else:
        left = f"{facts['secondsLeft']} s left{', ' + since if since else ''}"
        tail = f"refuses {span} until {facts['until']} ({left}), then every higher priority may"
    return f"{tail}; priorities {facts['mayPreemptNow']} may preempt it now."


def is_pending(pod: Mapping[str, Any]) -> bool:
    """Not on a node yet, and not finished: a pod the scheduler may preempt others for."""
    return (
        not (pod.get("spec") or {}).get("nodeName") and (pod.get("status") or {}).get("phase", "Pending") == "Pending"
    )


def _a_possible_victim(pod: Mapping[str, Any]) -> bool:
    """On a node, not finished and not being deleted: a pod preemption may choose."""
    phase = (pod.get("status") or {}).get("phase")
    return (
        bool((pod.get("spec") or {}).get("nodeName"))
        and phase not in ("Succeeded", "Failed")
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
    )


def _victim_facts(victim: Mapping[str, Any], protection: Protection, now: datetime) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "name": pod_ref(victim),
        "priorityClassName": priority_class_name(victim),
        "priority": pod_priority(victim),
        "protection": protection.kind.value,
    }
    if protection.kind is ProtectionKind.UNTIL and protection.until is not None:
        facts["until"] = rfc3339(protection.until)
        facts["secondsLeft"] = protection.seconds_left(now)
    return facts


def tolerating_pods(
    preemptor: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    priority_classes: Mapping[str, Mapping[str, Any]],
    now: datetime,
) -> list[dict[str, Any]]:
    """The pods of lower priority, on nodes, whose toleration refuses `preemptor` now (the exemption check
    of upstream's plugin), with until when; by namespace and name. A pod whose class does not exist is
    left out, as upstream skips its node."""
    priority = pod_priority(preemptor)
    tolerations = {name: class_toleration(body) for name, body in priority_classes.items()}
    found = []
    for victim in pods:
        if not _a_possible_victim(victim) or pod_priority(victim) >= priority:
            continue
        try:
            toleration = tolerations.get(priority_class_name(victim))
            exempt, protection = exemption(PodJson(victim), PodJson(preemptor), toleration, now)
        except PriorityClassNotFound:
            continue
        if exempt and protection is not None:
            found.append(_victim_facts(victim, protection, now))
    return sorted(found, key=lambda facts: str(facts["name"]))


def explain_preemptor(
    preemptor: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    priority_classes: Mapping[str, Mapping[str, Any]],
    now: datetime,
) -> dict[str, Any]:
    """What a pending pod finds as a preemptor: the pods whose toleration protects them against it."""
    if preempts_never(preemptor):
        return {"pending": True, "preemptionPolicy": "Never"}
    return {"pending": True, "toleratedBy": tolerating_pods(preemptor, pods, priority_classes, now)}


def _render_preemptor(facts: Mapping[str, Any]) -> str:
    if not facts.get("pending"):
        return ""
    if facts.get("preemptionPolicy") == "Never":
        return "\nIt is pending, with preemptionPolicy Never: it preempts no pod."
    if "toleratedBy" not in facts:
        return f"\nIt is pending; which pods tolerate it is not known: {facts.get('toleratedByUnknown')}."
    tolerating = facts["toleratedBy"]
    if not tolerating:
        return "\nIt is pending; no pod of lower priority tolerates preemption by it."
    lines = [
        f"\nIt is pending; {len(tolerating)} pod{'s' if len(tolerating) > 1 else ''} of lower priority "
        f"tolerate{'' if len(tolerating) > 1 else 's'} preemption by it, so the scheduler may not preempt "
        f"{'them' if len(tolerating) > 1 else 'it'} for it:"
    ]
    for victim in tolerating[:LISTED_IN_TEXT]:
        if victim["protection"] == ProtectionKind.UNTIL.value:
            span = f"until {victim['until']} ({victim['secondsLeft']} s left)"
        elif victim["protection"] == ProtectionKind.FOREVER.value:
            span = "forever"
        else:
            span = "until it is scheduled, then for its toleration-seconds"
        lines.append(
            f"  {victim['name']} (PriorityClass {victim['priorityClassName']}, priority {victim['priority']}): {span}"
        )
    if len(tolerating) > LISTED_IN_TEXT:
        lines.append(f"  ... and {len(tolerating) - LISTED_IN_TEXT} more (-o json lists them all)")
    return "\n".join(lines)
