"""The steerer under faults and in audit, with its Lease protocol and the action's writes replaced by fakes
(the live writes are tests/integration/test_steering_faults.py's): a failed write or a stopped action leaves
nothing behind in this replica and releases its Lease; the Leases left are listed until they are; a Lease
left acting is acted on only as a fresh plan says; audit writes nothing, resumed or not."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.steering.adapter import resume as resume_module
from preemption_toleration.steering.adapter.steerer import ActionStopped, RefusedVictim, Steerer
from preemption_toleration.steering.adapter.steering_leases import LEASE_PREFIX, REFUSED, RELEASED
from preemption_toleration.steering.plan import SteeringPlan
from preemption_toleration.steering.resumption import LeftPlan
from tests.unit.test_extender import CLASS_RECORDS, node, pod
from tests.unit.test_steering_pacing import Counted, api, steerer
from tests.unit.virtual_clock import VIRTUAL_CLOCK, running_loop_is_current

pytestmark = VIRTUAL_CLOCK
__all__ = ["api", "running_loop_is_current"]  # fixtures


class FakeLeases:
    """Steering's Lease protocol as the steerer calls it, every call recorded; `left` fails `failures` times."""

    def __init__(
        self, left: list[tuple[str, LeftPlan]] = (), failures: int = 0, claims: bool | BaseException = True
    ) -> None:
        self.calls: list[tuple[str, Any]] = []
        self._left, self.failures, self.claims = list(left), failures, claims

    async def claim(self, plan: SteeringPlan, retake: bool = False, left_version: str | None = None) -> bool:
        self.calls.append(("claim", (plan.preemptor.uid, left_version)))
        if isinstance(self.claims, BaseException):
            raise self.claims
        return self.claims

    async def mark(self, uid: str, state: str, version: str | None = None) -> bool:
        self.calls.append(("mark", (uid, state) if version is None else (uid, state, version)))
        return True

    async def left(self, now: datetime) -> list[tuple[str, LeftPlan]]:
        self.calls.append(("left", None))
        if self.failures:
            self.failures -= 1
            raise ApiException(status=503, reason="Service Unavailable")
        return self._left

    async def sweep_forever(self) -> None:
        self.calls.append(("sweep", None))


def plain_cluster() -> tuple[ClusterView, dict]:
    """node-a (2 CPUs) runs a plain pod of 2 CPUs; `high` (2 CPUs) is pending, nominated there."""
    victim = pod("plain", "low", cpu="2", node="node-a")
    preemptor = pod("high", "high", cpu="2", node=None, status__nominatedNodeName="node-a")
    return ClusterView(PodIndex.of([victim, preemptor]), {"node-a": node("node-a", cpu="2")}, CLASS_RECORDS), victim


def with_fakes(subject: Steerer, leases: FakeLeases, carried: list[str], fault: BaseException | None) -> None:
    async def carry_out(plan: SteeringPlan) -> bool:
        carried.append(plan.preemptor.uid)
        if fault is not None:
            raise fault
        return True

    subject.leases = leases  # type: ignore[assignment]
    subject._carry_out = carry_out  # type: ignore[method-assign]


def refusal(victim: dict) -> RefusedVictim:
    return RefusedVictim("team", victim["metadata"]["name"], victim["metadata"]["uid"], "node-a", "team/high")


FAULTS = [
    ("a write refused (403)", ApiException(status=403, reason="Forbidden"), "failed"),
    ("a write timed out", TimeoutError(), "failed"),
    ("a victim protected meanwhile", ActionStopped("victim team/plain tolerates the preemptor now"), "stopped"),
]


async def test_an_action_given_up_leaves_nothing_behind_and_its_preemptor_is_steered_again(api) -> None:
    for rule, fault, outcome in FAULTS:
        view, victim = plain_cluster()
        counted = Counted()
        subject = steerer(api, view, counted)
        leases, carried = FakeLeases(), []
        with_fakes(subject, leases, carried, fault)
        assert not await subject._consider(refusal(victim)), rule
        assert counted.outcomes == [outcome], rule
        assert ("mark", ("uid-high", RELEASED)) in leases.calls, rule
        assert "uid-high" not in subject.record.steered and "uid-high" not in subject.record.recent, rule
        await subject._consider(refusal(victim))
        assert counted.outcomes == [outcome, "unchanged"], f"{rule}: within the wait"
        generation, when, wait = subject.declined_plans.at["uid-high"]
        assert (generation, wait) == (None, 1.0), rule
        subject.declined_plans.at["uid-high"] = (generation, when - wait, wait)  # as if its wait were over
        with_fakes(subject, leases, carried, None)
        assert await subject._consider(refusal(victim)), rule
        assert counted.outcomes == [outcome, "unchanged", "steered"], rule
        assert carried == ["uid-high", "uid-high"], rule
        for task in subject.sending:
            task.cancel()


async def test_a_claim_another_replica_won_is_its_action_and_costs_no_token(api) -> None:
    """Another replica acts for the preemptor in this window: this one passes over it as steered lately
    (planning it again at every refusal would spend the rate limit on nothing), keeps nothing as its own action,
    and gives the token back."""
    view, victim = plain_cluster()
    counted = Counted()
    subject = steerer(api, view, counted)
    leases, carried = FakeLeases(claims=False), []
    with_fakes(subject, leases, carried, None)
    tokens = subject.bucket.tokens
    assert not await subject._consider(refusal(victim))
    assert counted.outcomes == ["claimed-elsewhere"] and carried == []
    assert "uid-high" in subject.record.recent and "uid-high" not in subject.record.steered
    assert subject.bucket.tokens == tokens
    await subject._consider(refusal(victim))
    assert counted.outcomes == ["claimed-elsewhere"], "passed over, not planned again"


async def test_a_claim_that_fails_gives_the_action_up_and_releases_what_it_may_have_written(api) -> None:
    """A create that timed out may have been written: the Lease is released if this replica holds it."""
    view, victim = plain_cluster()
    counted = Counted()
    subject = steerer(api, view, counted)
    leases, carried = FakeLeases(claims=TimeoutError()), []
    with_fakes(subject, leases, carried, None)
    assert not await subject._consider(refusal(victim))
    assert counted.outcomes == ["failed"] and carried == []
    assert ("mark", ("uid-high", RELEASED)) in leases.calls and "uid-high" not in subject.record.recent


def left_lease(victims: tuple[str, ...] = ("plain",), node_name: str = "node-a") -> tuple[str, LeftPlan]:
    refs = tuple(("team", name, f"uid-{name}") for name in victims)
    renewed = datetime.now(UTC) - timedelta(seconds=20)
    return LEASE_PREFIX + "uid-high", LeftPlan(("team", "high", "uid-high"), node_name, refs, renewed, 60, "7")


async def resumed(api, mode: str, lease: tuple[str, LeftPlan], failures: int = 0) -> tuple[Counted, FakeLeases, list]:
    view, _ = plain_cluster()
    counted = Counted()
    subject = Steerer(api, lambda: view, mode, "default", "test", counted)
    leases, carried = FakeLeases([lease], failures), []
    with_fakes(subject, leases, carried, None)
    await subject._resume()
    for task in subject.sending:
        task.cancel()
    return counted, leases, carried


async def test_a_left_lease_borne_out_is_taken_over_at_the_version_read_and_acted_on(api) -> None:
    counted, leases, carried = await resumed(api, "on", left_lease())
    assert counted.outcomes == ["resumed"] and carried == ["uid-high"]
    assert ("claim", ("uid-high", "7")) in leases.calls


async def test_a_left_lease_naming_other_victims_than_a_fresh_plan_is_refused(api) -> None:
    counted, leases, carried = await resumed(api, "on", left_lease(("someone-else",)))
    assert counted.outcomes == ["resume-refused"] and carried == []
    assert ("mark", ("uid-high", REFUSED, "7")) in leases.calls, "refused only if nobody wrote it since"


async def test_audit_writes_nothing_for_a_left_lease_whatever_it_finds(api) -> None:
    for lease, outcome in ((left_lease(), "audited"), (left_lease(("someone-else",)), "resume-refused")):
        counted, leases, carried = await resumed(api, "audit", lease)
        assert counted.outcomes == [outcome] and carried == []
        assert [call for call, _ in leases.calls] == ["left"], "no claim, no mark"


async def test_audit_sweeps_no_lease(api) -> None:
    view, _ = plain_cluster()
    subject = Steerer(api, lambda: view, "audit", "default", "test", Counted())
    leases = FakeLeases()
    with_fakes(subject, leases, [], None)

    async def idle() -> None:
        await asyncio.Event().wait()

    subject.run = idle  # type: ignore[method-assign]
    supervised = asyncio.create_task(subject.run_supervised())
    await asyncio.sleep(1)
    supervised.cancel()
    for task in subject.sending:
        task.cancel()
    assert ("sweep", None) not in leases.calls and ("left", None) in leases.calls


async def test_the_leases_left_are_listed_until_they_are(api, monkeypatch) -> None:
    monkeypatch.setattr(resume_module, "LIST_AGAIN_SECONDS", (1.0, 2.0))
    counted, leases, carried = await resumed(api, "on", left_lease(), failures=3)
    assert [call for call, _ in leases.calls][:4] == ["left"] * 4
    assert counted.outcomes == ["failed"] * 3 + ["resumed"] and carried == ["uid-high"]
