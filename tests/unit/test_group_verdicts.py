"""One decision per victim group and preemption (`inventory.group_verdicts`): the requests for a group's
members that follow each other get the first one's decision; the scheduler's next attempt, a pause later,
gets a fresh one; a refusal kept by a chain that never pauses is decided afresh after LONGEST_SECONDS, an
allowance stands as long as the chain."""

from __future__ import annotations

import pytest

from preemption_toleration.inventory.group_verdicts import (
    BURST_GAP_SECONDS,
    FRESH_SECONDS,
    KEPT_GROUPS,
    LONGEST_SECONDS,
    GroupVerdicts,
)

GAP, FRESH, LONGEST = BURST_GAP_SECONDS, FRESH_SECONDS, LONGEST_SECONDS

TIMELINES = [
    # (rule, times the group's members are asked at after the decision at 0, what each recalls)
    ("the members of one burst get the decision", [0.01, 0.02, 0.03], ["kept", "kept", "kept"]),
    ("within FRESH_SECONDS, even after a pause", [FRESH - 0.1], ["kept"]),
    ("a pause after FRESH_SECONDS ends it", [FRESH + GAP], [None]),
    ("a burst that goes on past FRESH_SECONDS keeps it", [FRESH - 0.1, FRESH + 0.3, FRESH + 0.6], ["kept"] * 3),
    (
        "a chain that never pauses is decided afresh after LONGEST_SECONDS",
        [step * GAP * 0.9 for step in range(1, int(LONGEST / (GAP * 0.9)) + 2)],
        ["kept"] * int(LONGEST / (GAP * 0.9)) + [None],
    ),
]


@pytest.mark.parametrize(("rule", "times", "recalled"), TIMELINES, ids=[t[0] for t in TIMELINES])
def test_a_decision_stands_for_the_requests_that_follow_it(
    rule: str, times: list[float], recalled: list[str | None]
) -> None:
    now = [100.0]
    verdicts: GroupVerdicts[str] = GroupVerdicts(clock=lambda: now[0])
    verdicts.keep("uid", "kept")
    found = []
    for at in times:
        now[0] = 100.0 + at
        found.append(verdicts.recall("uid"))
    assert found == recalled


CHAIN = [step * GAP * 0.9 for step in range(1, int(3 * LONGEST / (GAP * 0.9)))]  # three windows, no pause
ALLOWANCES = [
    # (rule, times asked at after the allowance at 0, what each recalls)
    ("an allowance stands while the chain goes on, past LONGEST_SECONDS", CHAIN, ["kept"] * len(CHAIN)),
    ("an allowance ends at the chain's first pause after FRESH_SECONDS", [FRESH - 0.1, FRESH + GAP], ["kept", None]),
]


@pytest.mark.parametrize(("rule", "times", "recalled"), ALLOWANCES, ids=[t[0] for t in ALLOWANCES])
def test_an_allowance_stands_for_a_group_deleted_over_more_than_one_window(
    rule: str, times: list[float], recalled: list[str | None]
) -> None:
    """A group of some thousand members is deleted over more than LONGEST_SECONDS: a decision made afresh in the
    middle (a policy applied meanwhile) would stop the deletion there and leave the group in part."""
    now = [100.0]
    verdicts: GroupVerdicts[str] = GroupVerdicts(clock=lambda: now[0])
    verdicts.keep("uid", "kept", lasting=True)
    found = []
    for at in times:
        now[0] = 100.0 + at
        found.append(verdicts.recall("uid"))
    assert found == recalled


def test_groups_are_kept_apart_and_the_oldest_forgotten_beyond_the_bound() -> None:
    verdicts: GroupVerdicts[int] = GroupVerdicts(clock=lambda: 0.0)
    for index in range(KEPT_GROUPS + 1):
        verdicts.keep(f"g{index}", index)
    assert verdicts.recall("g0") is None
    assert verdicts.recall("g1") == 1
    assert verdicts.recall(f"g{KEPT_GROUPS}") == KEPT_GROUPS
    assert verdicts.recall("unknown") is None
