"""How often steering plans, and how much of the event loop a plan may take.

The webhook server answers the API server on one event loop, and the guard's `failurePolicy` is Ignore: an
answer later than its `timeoutSeconds` lets a DELETE through. A plan reads every node it tries, so it runs in
slices of at most `slice_seconds`, and after each slice waits long enough that planning takes at most
`share` of the loop's time; between slices the loop answers whoever waits. And a preemptor whose plan was
declined is not planned again until the caches have changed: the same cluster gives the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass

SLICE_SECONDS = 0.002  # at 150,000 pods one node of 30 pods takes about 0.2 ms: about 10 nodes a slice
LOOP_SHARE = 0.25  # of the event loop's time, at most, for planning
DECLINED_REMEMBERED = 10_000  # preemptors whose declined plan is remembered (beyond it, the oldest goes)


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
    """The cache generation at which each preemptor's last plan was declined (by UID)."""

    def __init__(self, remembered: int = DECLINED_REMEMBERED) -> None:
        self.remembered = remembered
        self.at: dict[str, int] = {}

    def due(self, uid: str, generation: int) -> bool:
        """Whether a plan for this preemptor may tell anything new: never planned, planned and carried out,
        or declined at another generation of the caches."""
        return self.at.get(uid) != generation

    def declined(self, uid: str, generation: int) -> None:
        self.at.pop(uid, None)
        self.at[uid] = generation  # the newest last
        if len(self.at) > self.remembered:
            del self.at[next(iter(self.at))]

    def forget(self, uid: str) -> None:
        self.at.pop(uid, None)
