"""Keeping the cyclic garbage collector's full collections, which block the event loop for as long as they
traverse the heap, away from a server that caches every pod."""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable

logger = logging.getLogger("preemption_toleration.webhooks")


def freeze_heap() -> int:
    """Moves every object alive now (modules, schemas, the objects just listed) out of the cyclic garbage
    collector's reach, after one last collection, and returns how many. A full collection, which Python
    runs whenever the long-lived heap has grown by a quarter, blocks the event loop for as long as it takes
    to traverse the heap: 175 ms with 150,000 cached pods, on the scheduler's hot path
    (benchmarks/gc_pause.py). Frozen objects are still freed when their last reference goes (a pod
    replaced or deleted); later collections traverse only what came after, so the pause grows back with the
    pods replaced since (a later listing of every pod is frozen as it comes: PageFreezer). A frozen object
    that becomes garbage in a reference cycle is never collected: the start-up heap, once, at most (slim
    pods hold no cycles)."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    logger.info("heap frozen", extra={"objects": frozen})
    return frozen


# A listing of pods after start-up (a watch that expired, an API server that lost it) replaces every pod
# record; freezing the new ones as they come keeps full collections away, as freeze_heap did at start.
REFREEZE_EVERY_PAGES = 20


class PageFreezer:
    """Every `every` pages listed: collects the young generations (about 1 ms: only what came since the
    last collection of them) and freezes what is alive. A full collection is not needed first: the old
    records a listing replaces are freed as soon as they are replaced (they hold no reference cycles), and
    the young collection frees the cyclic garbage that is not yet old. What is frozen besides the new
    records is what happened to be alive then (requests in flight, connections); those of them that become
    cyclic garbage later are never collected, a bounded cost per listing, and listings after start-up are
    rare. The last pages of a listing (fewer than `every`) stay unfrozen. benchmarks/gc_pause.py measures
    a listing of 150,000 pods with and without it."""

    def __init__(self, every: int, freeze: Callable[[], None] | None = None) -> None:
        self.every = every
        self.freeze = freeze or _collect_young_and_freeze
        self.pages = 0

    def page_listed(self) -> None:
        self.pages += 1
        if self.pages % self.every == 0:
            self.freeze()


def _collect_young_and_freeze() -> None:
    gc.collect(1)
    gc.freeze()
