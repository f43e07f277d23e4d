"""Which refusals to report, when the scheduler retries the same protected victim many times a second.

With asynchronous preemption (on by default since Kubernetes 1.33) a refused victim sends its preemptor
straight back to the scheduling queue, and the scheduler asks again at once: tens of times a second,
for as long as the victim is protected. Each retry is counted (metrics) but reported (a log line, an
Event update) only as the first of its kind, then at most once per interval, with the number of repeats
it stands for: the same refusal, of the same victim by the same preemptor for the same reason. And an
immediate repeat may be answered after a short hold, which paces the scheduler's loop (`RetryPacer`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

REPORT_INTERVAL_SECONDS = 10.0  # as the refusal Events' own rate limit
MAX_TRACKED = 10_000  # distinct refusals; the least recently reported are forgotten beyond it


@dataclass
class _Tracked:
    reported_at: float
    repeats: int  # refusals since the last report


class RepeatFilter:
    def __init__(self, interval: float = REPORT_INTERVAL_SECONDS, capacity: int = MAX_TRACKED) -> None:
        self.interval = interval
        self.capacity = capacity
        self._tracked: OrderedDict[Hashable, _Tracked] = OrderedDict()

    def report(self, key: Hashable, now: float) -> int | None:
        """For a refusal of `key` at `now` (monotonic seconds): None when it is a repeat to count but not
        report; otherwise how many refusals this report stands for (1 for the first, more when it also
        covers the repeats since the last report)."""
        tracked = self._tracked.get(key)
        if tracked is not None and now - tracked.reported_at < self.interval:
            tracked.repeats += 1
            return None
        count = 1 + (tracked.repeats if tracked is not None else 0)
        self._tracked[key] = _Tracked(now, 0)
        self._tracked.move_to_end(key)
        while len(self._tracked) > self.capacity:
            self._tracked.popitem(last=False)
        return count

    def __len__(self) -> int:
        return len(self._tracked)


FAST_REPEAT_SECONDS = 0.5  # below the scheduler's smallest backoff (1 s): only an immediate retry is this fast
MAX_HOLD_SECONDS = 2.0  # well within the guard's webhook timeout (3 s), so a held answer is never a timeout


class RetryPacer:
    """How long to hold the answer to a refusal that repeats one just answered.

    With asynchronous preemption the scheduler re-activates the preemptor as soon as a victim's patch or
    DELETE fails, and keeps it out of the queue only while that preemption's API calls run. Holding the
    refusal of an immediate repeat for `hold` seconds paces the loop to about one attempt per `hold`. The
    first refusal, and any that comes after the scheduler's own backoff (synchronous preemption, which
    holds its scheduling cycle while waiting for us), is answered at once."""

    def __init__(self, hold: float, fast: float = FAST_REPEAT_SECONDS, capacity: int = MAX_TRACKED) -> None:
        if not 0 <= hold <= MAX_HOLD_SECONDS:
            raise ValueError(f"a hold of {hold} s is not from 0 to {MAX_HOLD_SECONDS} s")
        self.seconds = hold
        self.fast = fast
        self.capacity = capacity
        self._answered: OrderedDict[Hashable, float] = OrderedDict()  # key -> when its last answer goes out

    def hold(self, key: Hashable, now: float) -> float:
        """Seconds to hold the answer to a refusal of `key` decided at `now` (monotonic seconds)."""
        if self.seconds <= 0:
            return 0.0
        answered = self._answered.get(key)
        hold = self.seconds if answered is not None and now - answered < self.fast else 0.0
        self._answered[key] = now + hold
        self._answered.move_to_end(key)
        while len(self._answered) > self.capacity:
            self._answered.popitem(last=False)
        return hold
