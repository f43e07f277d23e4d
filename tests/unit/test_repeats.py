"""`RepeatFilter`: the first refusal of a kind is reported, repeats within the interval are only counted,
and the next report after the interval stands for them."""

from __future__ import annotations

import pytest

from preemption_toleration.guard.repeats import MAX_HOLD_SECONDS, RepeatFilter, RetryPacer

# (rule, refusals as (key, monotonic seconds), what each refusal reports: None or the count it stands for)
CASES = [
    ("the first refusal is reported as one", [("a", 0.0)], [1]),
    ("a repeat within the interval is counted, not reported", [("a", 0.0), ("a", 0.02), ("a", 9.9)], [1, None, None]),
    (
        "the first refusal after the interval stands for the repeats before it",
        [("a", 0.0), ("a", 1.0), ("a", 2.0), ("a", 10.0)],
        [1, None, None, 3],
    ),
    ("the interval counts from the last report", [("a", 0.0), ("a", 10.0), ("a", 15.0), ("a", 20.0)], [1, 1, None, 2]),
    ("distinct refusals are reported apart", [("a", 0.0), ("b", 0.1), ("a", 0.2), ("b", 0.3)], [1, 1, None, None]),
]


@pytest.mark.parametrize(("rule", "refusals", "expected"), CASES, ids=[case[0] for case in CASES])
def test_reports(rule: str, refusals: list[tuple[str, float]], expected: list[int | None]) -> None:
    repeats = RepeatFilter(interval=10.0)
    assert [repeats.report(key, now) for key, now in refusals] == expected, rule


def test_beyond_its_capacity_the_least_recently_reported_refusal_is_forgotten() -> None:
    repeats = RepeatFilter(interval=10.0, capacity=2)
    assert [repeats.report(key, 0.0) for key in ("a", "b", "c")] == [1, 1, 1]
    assert len(repeats) == 2
    assert repeats.report("a", 1.0) == 1, "a was forgotten: reported again as a first refusal"
    assert repeats.report("c", 1.0) is None


# (rule, refusals as (key, monotonic seconds), the hold of each answer) with a hold of 1 s
PACING = [
    ("the first refusal is answered at once", [("a", 0.0)], [0.0]),
    ("an immediate repeat is held", [("a", 0.0), ("a", 0.02)], [0.0, 1.0]),
    (
        "a repeat right after a held answer is held again: one attempt per hold",
        [("a", 0.0), ("a", 0.02), ("a", 1.04), ("a", 2.06)],
        [0.0, 1.0, 1.0, 1.0],
    ),
    (
        "a retry after the scheduler's backoff (synchronous preemption) is answered at once",
        [("a", 0.0), ("a", 1.0), ("a", 3.0)],
        [0.0, 0.0, 0.0],
    ),
    ("another victim or preemptor is paced apart", [("a", 0.0), ("b", 0.01)], [0.0, 0.0]),
]


@pytest.mark.parametrize(("rule", "refusals", "expected"), PACING, ids=[case[0] for case in PACING])
def test_pacing(rule: str, refusals: list[tuple[str, float]], expected: list[float]) -> None:
    pacer = RetryPacer(hold=1.0)
    assert [pacer.hold(key, now) for key, now in refusals] == expected, rule


def test_a_hold_of_zero_answers_every_refusal_at_once() -> None:
    pacer = RetryPacer(hold=0.0)
    assert [pacer.hold("a", now) for now in (0.0, 0.01, 0.02)] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("hold", [-0.1, MAX_HOLD_SECONDS + 0.1])
def test_a_hold_outside_its_range_is_refused(hold: float) -> None:
    with pytest.raises(ValueError, match="not from 0 to 2"):
        RetryPacer(hold=hold)
