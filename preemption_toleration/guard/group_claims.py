"""One decision per victim group of `disruptionMode: all` and preemption, whichever replica of the guard is
asked (docs/contract.md, "Pod groups"): the scheduler deletes a group's members in parallel, spread over the
replicas behind the Service, and stops at the first refusal without restoring what it deleted, so every
member must get the answer the first one got.

A decision is a claim written once to the cluster: a Lease named after the group's UID in the server's
namespace, created (a second create fails with 409) or replaced at the resourceVersion read, so that of two
replicas deciding at once, one decision wins and the other adopts it. It stands until `valid_until`: at
least FRESH_SECONDS after it was made, and for as long as the requests for the group's members follow each
other (a replica asked near its end renews it, BURST_GAP_SECONDS more); a refusal LONGEST_SECONDS at most,
so a toleration that ends during a chain that never pauses ends for the group then; an allowance as long as
the chain, since a decision made afresh in the middle of a deletion would leave the group in part. A replica
answers from its own copy until MARGIN_SECONDS before the end, through the Lease around the end, and decides
afresh only MARGIN_SECONDS after it: two replicas whose clocks agree within MARGIN_SECONDS never answer two
decisions in one preemption.

What a Lease says is a claim: anyone who may write Leases there may have written it. A refusal is adopted
as it is (refusing deletes nothing); an allowance only where the adopting replica's own facts bear it out
(`guard.decisions`). A claim dated in the future, or not readable, is no decision: it is replaced.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from preemption_toleration.core.pods import PodJson
from preemption_toleration.core.protection import Protection, ProtectionKind
from preemption_toleration.core.shapes import as_mapping
from preemption_toleration.guard.verdicts import GroupDecision, PreemptorSource
from preemption_toleration.records.pod import PodRecord

FRESH_SECONDS = 2.0
BURST_GAP_SECONDS = 0.5
LONGEST_SECONDS = 30.0
MARGIN_SECONDS = 0.2
LEASE_PREFIX = "ptol-group-"
LABEL = "preemption-toleration.dev/group-decision"
DECISION = "preemption-toleration.dev/decision"  # the annotation that carries it, as JSON
SWEEP_AFTER_SECONDS = 600  # a claim is kept this long after its end (for `kubectl get lease`), then deleted

_FRESH, _GAP, _LONGEST, _MARGIN = (
    timedelta(seconds=s) for s in (FRESH_SECONDS, BURST_GAP_SECONDS, LONGEST_SECONDS, MARGIN_SECONDS)
)


@dataclass(frozen=True)
class GroupClaim:
    """A group's decision as the replicas share it: who made it, when, and its last renewal."""

    decision: GroupDecision
    decided_at: datetime
    renewed_at: datetime
    holder: str  # the replica that made it (renewals keep it)
    version: str = ""  # the Lease's resourceVersion, when read from one

    @property
    def valid_until(self) -> datetime:
        end = max(self.decided_at + _FRESH, self.renewed_at + _GAP)
        return min(end, self.decided_at + _LONGEST) if self.decision.exempt else end

    def trusted(self, now: datetime) -> bool:
        """Whether a replica may answer from its copy without reading the Lease."""
        return now < self.valid_until - _MARGIN

    def expired(self, now: datetime) -> bool:
        """Whether a replica may replace it with a decision of its own."""
        return now > self.valid_until + _MARGIN

    def renewed(self, now: datetime) -> GroupClaim:
        return replace(self, renewed_at=now)

    def as_adopted_by(self, holder: str) -> GroupDecision:
        """The decision as replica `holder` keeps it: adopted when another replica made it."""
        return self.decision._replace(adopted=self.holder != holder)


def lease_name(group_uid: str) -> str:
    return LEASE_PREFIX + group_uid


def _micro(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def claim_body(group_uid: str, claim: GroupClaim, namespace: str) -> dict[str, Any]:
    """The Lease of a claim (with its resourceVersion, when it replaces one)."""
    metadata: dict[str, Any] = {
        "name": lease_name(group_uid),
        "namespace": namespace,
        "labels": {LABEL: "true", "app.kubernetes.io/managed-by": "preemption-toleration"},
        "annotations": {DECISION: json.dumps(_decision_json(claim.decision), separators=(",", ":"))},
    }
    if claim.version:
        metadata["resourceVersion"] = claim.version
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": {
            "holderIdentity": claim.holder,
            "leaseDurationSeconds": max(1, round((claim.valid_until - claim.renewed_at).total_seconds())),
            "acquireTime": _micro(claim.decided_at),
            "renewTime": _micro(claim.renewed_at),
        },
    }


def _decision_json(decision: GroupDecision) -> dict[str, Any]:
    preemptor = decision.preemptor
    found = decision.found
    return {
        "refused": decision.exempt,
        "preemptor": None
        if preemptor is None
        else {
            "namespace": preemptor.namespace,
            "name": preemptor.name,
            "uid": preemptor.uid,
            "priority": preemptor.priority,
        },
        "source": decision.source.value if decision.source is not None else None,
        "protection": None
        if found is None
        else {
            "kind": found.kind.value,
            "reason": found.reason,
            "victimPriority": found.victim_priority,
            "refuseBelow": found.refuse_below,
            "until": _micro(found.until) if found.until is not None else None,
            "seconds": found.toleration_seconds,
        },
    }


class Unreadable(ValueError):
    """A Lease's claim that is not one this guard wrote."""


def read_claim(raw: Mapping[str, Any], now: datetime) -> tuple[GroupClaim | None, str]:
    """A Lease as the API server sends it: (its claim, None when it holds none that may be trusted; its
    resourceVersion, on which it is replaced)."""
    metadata, spec = as_mapping(raw.get("metadata")), as_mapping(raw.get("spec"))
    version = str(metadata.get("resourceVersion") or "")
    try:
        decided, renewed = _time(spec.get("acquireTime")), _time(spec.get("renewTime"))
        holder = spec.get("holderIdentity")
        if not isinstance(holder, str) or not holder:
            raise Unreadable("no holderIdentity")
        if max(decided, renewed) > now + _MARGIN or renewed < decided:
            raise Unreadable("dated in the future")
        text = as_mapping(metadata.get("annotations")).get(DECISION)
        decision = _decision(json.loads(text) if isinstance(text, str) else None)
    except (Unreadable, ValueError, TypeError):
        return None, version
    return GroupClaim(decision, decided, renewed, holder, version), version


def _time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise Unreadable("no time")
    found = datetime.fromisoformat(value)
    if found.tzinfo is None:
        raise Unreadable("a time without its zone")
    return found


def _decision(found: Any) -> GroupDecision:
    if not isinstance(found, dict) or not isinstance(found.get("refused"), bool):
        raise Unreadable("no decision")
    preemptor = _preemptor(found.get("preemptor"))
    source = PreemptorSource(found["source"]) if found.get("source") is not None else None
    if (preemptor is None) != (source is None):
        raise Unreadable("a preemptor without its source")
    protection = _protection(found.get("protection"))
    if found["refused"] and (preemptor is None or protection is None):
        raise Unreadable("a refusal names its preemptor and the protection")
    return GroupDecision(preemptor, source, found["refused"], protection)


def _integer(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise Unreadable("not an integer")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise Unreadable("not a string")
    return value


def _preemptor(found: Any) -> PodRecord | None:
    """The preemptor as the claim names it: a stand-in, which the adopting replica looks up in its caches."""
    if found is None:
        return None
    if not isinstance(found, dict):
        raise Unreadable("no preemptor")
    metadata = {key: _text(found.get(key)) for key in ("namespace", "name", "uid")}
    return PodJson({"metadata": metadata, "spec": {"priority": _integer(found.get("priority"))}})


def _protection(found: Any) -> Protection | None:
    if found is None:
        return None
    if not isinstance(found, dict):
        raise Unreadable("no protection")
    refuse_below, seconds = found.get("refuseBelow"), found.get("seconds")
    until = found.get("until")
    return Protection(
        ProtectionKind(found.get("kind")),
        _text(found.get("reason")),
        _integer(found.get("victimPriority")),
        _integer(refuse_below) if refuse_below is not None else None,
        _time(until) if until is not None else None,
        _integer(seconds) if seconds is not None else None,
    )


def swept(raw: Mapping[str, Any], now: datetime) -> bool:
    """Whether a claim's Lease is past keeping: SWEEP_AFTER_SECONDS after its end, or after its last write
    when it holds no claim."""
    claim, _ = read_claim(raw, now)
    if claim is not None:
        return claim.valid_until + timedelta(seconds=SWEEP_AFTER_SECONDS) < now
    try:
        renewed = _time(as_mapping(raw.get("spec")).get("renewTime"))
    except (Unreadable, ValueError):
        return True
    return renewed + timedelta(seconds=SWEEP_AFTER_SECONDS) < now
