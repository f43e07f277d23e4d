"""Which refusals to report, when the scheduler retries the same protected victim many times a second.

With asynchronous preemption (on by default since Kubernetes 1.33) a refused victim sends its preemptor
straight back to the scheduling queue, and the scheduler asks again at once: tens of times a second,
for as long as the victim is protected. Each retry is counted (metrics) but reported (a log line, an
Event update) only as the first of its kind, then at most once per interval, with the number of repeats
it stands for: the same refusal, of the same victim by the same preemptor for the same reason.
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
