"""One decision per victim group of `disruptionMode: all` and preemption, whichever replica is asked
(`guard.group_claims`, `guard.adapter.group_leases`): how long a claim stands, what a Lease is read as, and two
replicas of the guard's endpoint with facts of their own settling through one store."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from preemption_toleration.core.pods import PodJson
from preemption_toleration.core.protection import Protection, ProtectionKind
from preemption_toleration.guard.adapter.group_leases import Conflict, GroupClaims, MemoryStore
from preemption_toleration.guard.group_claims import (
    BURST_GAP_SECONDS,
    DECISION,
    FRESH_SECONDS,
    LONGEST_SECONDS,
    MARGIN_SECONDS,
    GroupClaim,
    claim_body,
    lease_name,
    read_claim,
)
from preemption_toleration.guard.verdicts import GroupDecision, GuardConfig, PreemptorSource
from preemption_toleration.inventory.group_verdicts import KEPT_GROUPS, GroupVerdicts
from preemption_toleration.telemetry.declared import GroupDecisionOutcome
from tests.unit.guard_replicas import Replica
from tests.unit.test_guard import NOW
from tests.unit.test_guard_groups import PREEMPTOR, PROTECTED_ALL, TEN_MINUTES, group, member, view

FRESH, GAP, LONGEST, MARGIN = FRESH_SECONDS, BURST_GAP_SECONDS, LONGEST_SECONDS, MARGIN_SECONDS
PROTECTION = Protection(ProtectionKind.FOREVER, "toleration", 8000, refuse_below=10000, toleration_seconds=-1)
STAND_IN = PodJson(
    {"metadata": {"namespace": "team", "name": "high-1", "uid": "uid-high-1"}, "spec": {"priority": 9000}}
)
REFUSAL = GroupDecision(STAND_IN, PreemptorSource.INFERRED, True, PROTECTION)
ALLOWANCE = GroupDecision(STAND_IN, PreemptorSource.INFERRED, False, None)


def at(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


VALIDITY = [
    # (rule, decision, renewed at, asked at, trusted, expired)
    ("a fresh decision is answered from the copy", REFUSAL, 0, FRESH - MARGIN - 0.01, True, False),
    ("near its end the Lease is read", REFUSAL, 0, FRESH - MARGIN / 2, False, False),
    ("no replica decides afresh until MARGIN after its end", REFUSAL, 0, FRESH + MARGIN / 2, False, False),
    ("then one may", REFUSAL, 0, FRESH + MARGIN + 0.01, False, True),
    ("a renewal stands BURST_GAP more", ALLOWANCE, 10, 10 + GAP - MARGIN - 0.01, True, False),
    ("an allowance renewed stands past LONGEST", ALLOWANCE, 100, 100 + GAP / 2, True, False),
    ("a refusal renewed stands LONGEST at most", REFUSAL, LONGEST - 0.1, LONGEST + MARGIN + 0.01, False, True),
]


@pytest.mark.parametrize(
    ("rule", "decision", "renewed", "asked", "trusted", "expired"), VALIDITY, ids=[v[0] for v in VALIDITY]
)
def test_a_claim_stands_while_the_requests_follow_each_other(
    rule: str, decision: GroupDecision, renewed: float, asked: float, trusted: bool, expired: bool
) -> None:
    claim = GroupClaim(decision, at(0), at(renewed), "replica-0")
    assert (claim.trusted(at(asked)), claim.expired(at(asked))) == (trusted, expired)


@pytest.mark.parametrize(
    "decision", [REFUSAL, ALLOWANCE, GroupDecision(None, None)], ids=["refusal", "allowance", "no preemptor"]
)
def test_a_claim_reads_back_as_it_was_written(decision: GroupDecision) -> None:
    claim = GroupClaim(decision, at(0), at(0.5), "replica-0")
    body = claim_body("uid-g", claim, "ptol")
    body["metadata"]["resourceVersion"] = "7"
    found, version = read_claim(body, at(1))
    assert version == "7" and found is not None
    assert (found.decided_at, found.renewed_at, found.holder) == (at(0), at(0.5), "replica-0")
    assert found.decision.exempt == decision.exempt and found.decision.found == decision.found
    assert found.decision.source == decision.source
    if decision.preemptor is not None:
        assert found.decision.preemptor is not None
        assert (found.decision.preemptor.key, found.decision.preemptor.uid) == (STAND_IN.key, STAND_IN.uid)
        assert found.decision.preemptor.priority == 9000


def _forged(change: Any) -> dict[str, Any]:
    body = claim_body("uid-g", GroupClaim(REFUSAL, at(0), at(0), "replica-0"), "ptol")
    change(body)
    return body


def _decision(**fields: Any) -> Any:
    def change(body: dict[str, Any]) -> None:
        body["metadata"]["annotations"][DECISION] = __import__("json").dumps(fields)

    return change


UNREADABLE = [
    ("dated in the future", lambda body: body["spec"].update(acquireTime="2030-01-01T00:00:00.000000Z")),
    ("renewed before it was made", lambda body: body["spec"].update(renewTime="2026-11-22T11:00:00.000000Z")),
    ("without a holder", lambda body: body["spec"].pop("holderIdentity")),
    ("without its decision", lambda body: body["metadata"].pop("annotations")),
    ("not JSON", lambda body: body["metadata"]["annotations"].update({DECISION: "{"})),
    ("a refusal without its protection", _decision(refused=True, preemptor=None, source=None, protection=None)),
    ("a preemptor's priority of the wrong type", _decision(refused=False, preemptor={"namespace": "a", "name": "b", "uid": "c", "priority": "9"}, source="inferred", protection=None)),  # noqa: E501
    ("a source not known", _decision(refused=False, preemptor={"namespace": "a", "name": "b", "uid": "c", "priority": 9}, source="told", protection=None)),  # noqa: E501
]  # fmt: skip


@pytest.mark.parametrize(("rule", "change"), UNREADABLE, ids=[u[0] for u in UNREADABLE])
def test_a_lease_that_is_no_claim_of_ours_holds_no_decision(rule: str, change: Any) -> None:
    found, _ = read_claim(_forged(change), at(1))
    assert found is None


def test_the_memory_answers_until_the_claim_must_be_read_again_and_forgets_the_oldest() -> None:
    verdicts: GroupVerdicts[int] = GroupVerdicts()
    verdicts.keep("g", 1, at(1))
    assert verdicts.recall("g", at(0.99)) == 1
    assert verdicts.recall("g", at(1)) is None
    for index in range(KEPT_GROUPS + 1):
        verdicts.keep(f"g{index}", index, at(10))
    assert verdicts.recall("g0", at(0)) is None and verdicts.recall(f"g{KEPT_GROUPS}", at(0)) == KEPT_GROUPS


async def test_requests_for_one_group_at_once_settle_it_with_one_write() -> None:
    store = MemoryStore()
    claims = GroupClaims(store, "ptol", "replica-0", clock=lambda: NOW)
    found = await asyncio.gather(*(claims.settle("uid-g", ALLOWANCE) for _ in range(5)))
    assert {claim.version for claim in found} == {"1"}
    assert store._versions == 1


class Refusing(MemoryStore):
    async def create(self, body: dict[str, Any]) -> Any:
        raise OSError("connection refused")


async def test_a_claim_that_cannot_be_written_is_this_replicas_alone_and_counted() -> None:
    outcomes: list[GroupDecisionOutcome] = []
    claims = GroupClaims(Refusing(), "ptol", "replica-0", outcomes.append, clock=lambda: NOW)
    claim = await claims.settle("uid-g", REFUSAL)
    assert claim.decision == REFUSAL and outcomes == [GroupDecisionOutcome.UNSHARED]


class Lagging(MemoryStore):
    """Another replica's write lands between this replica's read and its write, every time."""

    async def replace(self, name: str, body: dict[str, Any]) -> Any:
        raise Conflict()

    async def create(self, body: dict[str, Any]) -> Any:
        raise Conflict()

    async def read(self, name: str) -> Any:
        return None


async def test_writes_lost_again_and_again_end_in_this_replicas_decision_not_in_a_loop() -> None:
    outcomes: list[GroupDecisionOutcome] = []
    claim = await GroupClaims(Lagging(), "ptol", "replica-0", outcomes.append, clock=lambda: NOW).settle("u", ALLOWANCE)
    assert claim.decision == ALLOWANCE and outcomes == [GroupDecisionOutcome.UNSHARED]


def protected_and_lagging() -> tuple[list[dict[str, Any]], Replica, Replica, MemoryStore]:
    """Two replicas of one store: `knows` has the group's PodGroup of a 10-minute class; `lags` has not seen
    the class's toleration yet (its group is of a plain class): judged alone, it would allow."""
    members = [member(f"m-{index}", "g", 5) for index in range(4)]
    store = MemoryStore()
    knows = Replica(view(*members, PREEMPTOR, groups=(PROTECTED_ALL,)), store, "replica-0")
    lags = Replica(view(*members, PREEMPTOR, groups=(group("g", "low"),)), store, "replica-1")
    return members, knows, lags, store


async def test_a_refusal_one_replica_made_is_the_other_replicas_answer() -> None:
    members, knows, lags, _ = protected_and_lagging()
    assert await knows.refused(members[0], at(0)) is not None
    message = await lags.refused(members[1], at(0.05))
    assert message is not None and "PodGroup team/g" in message and "below 10000" in message
    assert await lags.refused(members[2], at(1.9)) is not None  # around its end: read again, still refused


async def test_an_allowance_this_replicas_facts_do_not_bear_out_is_refused() -> None:
    """A Lease anyone may write: the replica that protects the group never allows its members for it."""
    members, knows, lags, _ = protected_and_lagging()
    assert await lags.refused(members[0], at(0)) is None
    assert await knows.refused(members[1], at(0.05)) is not None


async def test_a_toleration_that_ends_during_a_preemption_ends_for_every_replica_at_once() -> None:
    """The group's 600 s end 1 s in: the replica first asked refuses, the other, asked after the end, adopts
    the refusal; after the scheduler's pause, both allow."""
    members = [member(f"m-{index}", "g", 10 - 1 / 60) for index in range(4)]
    store = MemoryStore()
    replicas = [
        Replica(view(*members, PREEMPTOR, groups=(group("g", TEN_MINUTES),)), store, f"r-{i}") for i in range(2)
    ]
    assert await replicas[0].refused(members[0], at(0.5)) is not None
    assert await replicas[1].refused(members[1], at(1.5)) is not None
    assert await replicas[1].refused(members[2], at(5)) is None
    assert await replicas[0].refused(members[3], at(5.1)) is None


async def test_an_allowance_shared_by_two_replicas_stands_for_a_deletion_longer_than_any_window() -> None:
    """A group deleted over 36 s through both replicas, 0.4 s apart; a member scheduled again 20 s in (its
    group's toleration starting over, on both replicas' caches) does not stop it."""
    members = [member(f"m-{index}", "g", 15) for index in range(3)]
    store = MemoryStore()
    states = [view(*members, PREEMPTOR, groups=(PROTECTED_ALL,)) for _ in range(2)]
    replicas = [Replica(state, store, f"r-{index}") for index, state in enumerate(states)]
    assert await replicas[0].refused(members[0], at(0)) is None
    for step in range(1, 90):
        if step == 50:
            for state in states:
                state.pods.put(member("m-2", "g", 0))
        assert await replicas[step % 2].refused(members[step % 2], at(step * 0.4)) is None, step
    made = [
        replica.metrics.group_decisions.labels(GroupDecisionOutcome.MADE.value)._value.get() for replica in replicas
    ]
    assert made == [1, 0]


async def test_a_forged_allowance_naming_no_pod_deletes_no_protected_member() -> None:
    members = [member(f"m-{index}", "g", 5) for index in range(2)]
    store = MemoryStore()
    forged = GroupClaim(GroupDecision(None, None), at(0), at(0), "someone")
    await store.create(claim_body("uid-g", forged, "ptol"))
    assert lease_name("uid-g") in store.leases
    replica = Replica(view(*members, PREEMPTOR, groups=(PROTECTED_ALL,)), store)
    assert await replica.refused(members[0], at(0.1)) is not None


async def test_in_audit_the_guard_writes_no_claim_and_its_members_are_reported_alike() -> None:
    members = [member(f"m-{index}", "g", 5) for index in range(2)]
    store = MemoryStore()
    replica = Replica(view(*members, PREEMPTOR, groups=(PROTECTED_ALL,)), store, config=GuardConfig(audit=True))
    assert await replica.refused(members[0], at(0)) is None
    assert await replica.refused(members[1], at(0.1)) is None
    assert store.leases == {}
    assert sum(replica.metrics.guard_refusals.counts.values()) == 2  # each member reported, as refused
