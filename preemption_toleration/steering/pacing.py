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


class DeclinedPlans:
    """When each preemptor's last plan was declined (by UID), at which generation of the caches, and how long
    it waits before the next: from 1 s, doubled at each decline in a row, up to 10 s (the scheduler's own
    `podMaxBackoffSeconds`). A busy cluster changes its caches many times a second, so the generation alone
    would let every refusal plan again."""

    def __init__(self, remembered: int = DECLINED_REMEMBERED) -> None:
        self.remembered = remembered
        self.at: dict[str, tuple[int | None, float, float]] = {}  # uid -> (generation, when, wait)

    def due(self, uid: str, generation: int, now: float) -> bool:
        """Whether a plan for this preemptor may tell anything new: never declined, or declined at another
        generation of the caches and its wait is over."""
        found = self.at.get(uid)
        if found is None:
            return True
        declined_generation, when, wait = found
        return generation != declined_generation and now >= when + wait

    def declined(self, uid: str, generation: int | None, now: float) -> None:
        """Declined at `generation` of the caches; None (an action given up): due once the wait is over,
        whatever the caches do."""
        found = self.at.pop(uid, None)
        wait = FIRST_WAIT_SECONDS if found is None else min(found[2] * 2, MAX_WAIT_SECONDS)
        self.at[uid] = (generation, now, wait)  # the newest last
        if len(self.at) > self.remembered:
            del self.at[next(iter(self.at))]

    def forget(self, uid: str) -> None:
        """A plan for it was carried out (or audited): its next decline waits from the start again."""
        self.at.pop(uid, None)


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
