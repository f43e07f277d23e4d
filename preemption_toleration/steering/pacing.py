"""How often steering plans, and how much of the event loop a plan may take.

The webhook server answers the API server on one event loop, and the guard's `failurePolicy` is Ignore: an
answer later than its `timeoutSeconds` lets a DELETE through. A plan reads every node it tries, so it runs in
slices of at most `slice_seconds`, and after each slice waits long enough that planning takes at most
`share` of the loop's time; between slices the loop answers whoever waits. And a preemptor whose plan was
declined is not planned again until the caches have changed: the same cluster gives the same answer. And
the actions themselves are rate-limited per replica (`TokenBucket`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from preemption_toleration.records.pod import NO_CONSTRAINTS, Requests, SlimPod

SLICE_SECONDS = 0.002  # at 150,000 pods one node of 30 pods takes about 0.2 ms: about 10 nodes a slice
LOOP_SHARE = 0.25  # of the event loop's time, at most, for planning
DECLINED_REMEMBERED = 10_000  # preemptors whose declined plan is remembered (beyond it, the oldest goes)
FIRST_WAIT_SECONDS, MAX_WAIT_SECONDS = 1.0, 10.0  # before a declined preemptor is planned again


@dataclass(frozen=True)
class Pace:
    slice_seconds: float = SLICE_SECONDS
    share: float = LOOP_SHARE

    def pause_after(self, worked_seconds: float) -> float:
        """How long to leave the loop to others after a slice of `worked_seconds`, so that planning takes
        at most `share` of its time."""
        return max(worked_seconds, 0.0) * (1 - self.share) / self.share


DEFAULT_PACE = Pace()


Shape = tuple[int, Requests, str]


def shape_of(preemptor: SlimPod) -> Shape:
    """What a plan reads of its preemptor to find a node (priority, requests, the constraints a preemption
    cannot change): the pods of one template (a Job's, a Deployment's) share it."""
    return preemptor.priority, preemptor.requests, (preemptor.constraints or NO_CONSTRAINTS).signature


class DeclinedPlans:
    """When each preemptor's last plan was declined (by UID), at which generation of the caches, and how long
    it waits before the next: from 1 s, doubled at each decline in a row, up to 10 s (the scheduler's own
    `podMaxBackoffSeconds`). A busy cluster changes its caches many times a second, so the generation alone
    would let every refusal plan again. The same holds for a shape (`shape_of`) no node was found for: its
    other preemptors wait too, since a plan for them reads the same nodes to the same end; a thousand pending
    pods of one Job make one plan, not a thousand. A wait only delays a plan: declining deletes nothing."""

    def __init__(self, remembered: int = DECLINED_REMEMBERED) -> None:
        self.remembered = remembered
        self.at: dict[str, tuple[int | None, float, float]] = {}  # uid -> (generation, when, wait)
        self.shapes: dict[Shape, tuple[int | None, float, float]] = {}  # shape -> (generation, when, wait)

    def due(self, uid: str, generation: int, now: float, shape: Shape | None = None) -> bool:
        """Whether a plan for this preemptor may tell anything new: never declined, or declined at another
        generation of the caches and its wait is over; and so for its shape, when given."""
        return _due(self.at.get(uid), generation, now) and (
            shape is None or _due(self.shapes.get(shape), generation, now)
        )

    def declined(self, uid: str, generation: int | None, now: float, shape: Shape | None = None) -> None:
        """Declined at `generation` of the caches; None (an action given up): due once the wait is over,
        whatever the caches do. `shape`: no node was found for it."""
        _decline(self.at, uid, generation, now, self.remembered)
        if shape is not None:
            _decline(self.shapes, shape, generation, now, self.remembered)

    def forget(self, uid: str, shape: Shape | None = None) -> None:
        """A plan for it was carried out (or audited): its next decline waits from the start again, and a
        node was found for its shape."""
        self.at.pop(uid, None)
        if shape is not None:
            self.shapes.pop(shape, None)


K = TypeVar("K")


def _due(found: tuple[int | None, float, float] | None, generation: int, now: float) -> bool:
    if found is None:
        return True
    declined_generation, when, wait = found
    return generation != declined_generation and now >= when + wait


def _decline(
    table: dict[K, tuple[int | None, float, float]], key: K, generation: int | None, now: float, bound: int
) -> None:
    found = table.pop(key, None)
    wait = FIRST_WAIT_SECONDS if found is None else min(found[2] * 2, MAX_WAIT_SECONDS)
    table[key] = (generation, now, wait)  # the newest last
    if len(table) > bound:
        del table[next(iter(table))]


class TokenBucket:
    """At most `rate` actions a second, `burst` at once: each action takes a token, and one that finds none
    takes the next one to come (the bucket goes into debt) and waits for it."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens, self.at = float(burst), clock()

    def wait_seconds(self) -> float:
        """How long the caller waits before its action; the token is its own from now on."""
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        self.tokens -= 1
        return max(0.0, -self.tokens / self.rate)

    def refund(self) -> None:
        """An action that did not happen (another replica acts for its preemptor) gives its token back."""
        self.tokens = min(float(self.burst), self.tokens + 1)
