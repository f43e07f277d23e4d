"""How long a full garbage collection blocks the webhook's event loop, against the pods in its caches.

Python collects its whole heap whenever the long-lived part has grown by a quarter; the collection
traverses every tracked object, and the event loop (the guard's and the extender's answers) waits for it.
Fills the guard's pod index with N realistic pods (decoded and slimmed one by one, as the watch does), for
N = 0, 50,000 and 150,000, and times, side by side in one process:

- a full collection as the server would run it without a frozen heap;
- the same after `freeze_heap()` (what `ptol webhook` does once its caches are listed);
- the same after a tenth of the pods were replaced since the freeze (the new slim pods are not frozen);
- a later listing of every pod (a watch that expired), decoded page by page as the informer does: the
  full collections Python runs during it and the one after it, without and with `PageFreezer` (what
  `ptol webhook` does on such a listing: freeze again every 20 pages).

Reports medians of 5 collections each. Saves the figures to benchmarks/results/gc_pause.json. Run:

    .venv/bin/python benchmarks/gc_pause.py [--sizes 0,50000,150000]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import save_results, shown
from guard_latency import realistic_pod, snapshot_of

from preemption_toleration.webhooks.heap import REFREEZE_EVERY_PAGES, PageFreezer, freeze_heap

COLLECTIONS = 5


def full_collection_ms() -> float:
    samples = []
    for _ in range(COLLECTIONS):
        started = time.perf_counter()
        gc.collect()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


class FullCollections:
    """The full collections Python runs by itself while it is active, and how long each took (ms)."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._started = 0.0

    def __enter__(self) -> FullCollections:
        gc.callbacks.append(self._observe)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self._observe)

    def _observe(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif info["generation"] == 2:
            self.pauses.append((time.perf_counter() - self._started) * 1000)


def relist(snapshot: Any, size: int, freezer: PageFreezer | None, round_: int) -> dict[str, float]:
    """Every pod replaced by a newly decoded record, in pages of 100, as a fresh listing does."""
    bodies = [json.dumps(realistic_pod(i)) for i in range(100)]
    with FullCollections() as during:
        for start in range(0, size, 100):
            for i in range(start, min(start + 100, size)):
                pod = json.loads(bodies[i % 100])
                pod["metadata"].update(name=f"pod-{i}", uid=f"uid-{i}", resourceVersion=f"{i}-{round_}")
                snapshot.pods.put(pod)
            if freezer is not None:
                freezer.page_listed()
    return {
        "full_collections_during": len(during.pauses),
        "longest_during_ms": round(max(during.pauses, default=0.0), 1),
        "full_collection_after_ms": round(full_collection_ms(), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,50000,150000")
    args = parser.parse_args()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        snapshot, _ = snapshot_of(size)
        tracked = len(gc.get_objects())
        unfrozen = full_collection_ms()
        frozen_objects = freeze_heap()
        frozen = full_collection_ms()
        for i in range(0, size, 10):  # a tenth of the pods replaced (a new resourceVersion each)
            pod = realistic_pod(i)
            pod["metadata"]["resourceVersion"] = f"{i}-2"
            snapshot.pods.put(json.loads(json.dumps(pod)))
        churned = full_collection_ms()
        plain = relist(snapshot, size, None, 3)
        refrozen = relist(snapshot, size, PageFreezer(REFREEZE_EVERY_PAGES), 4)
        rows.append(
            {
                "pods": size,
                "tracked_objects": tracked,
                "frozen_objects": frozen_objects,
                "full_collection_ms": round(unfrozen, 1),
                "after_freeze_ms": round(frozen, 2),
                "after_freeze_and_a_tenth_replaced_ms": round(churned, 1),
                "relist": plain,
                "relist_refrozen": refrozen,
            }
        )
        gc.unfreeze()
        del snapshot
        gc.collect()
    print(f"{'pods':>8} {'tracked':>9} {'full GC ms':>11} {'frozen ms':>10} {'+10% replaced ms':>17}")
    for row in rows:
        print(
            f"{row['pods']:>8} {row['tracked_objects']:>9} {row['full_collection_ms']:>11} "
            f"{row['after_freeze_ms']:>10} {row['after_freeze_and_a_tenth_replaced_ms']:>17}"
        )
    print("a later listing of every pod: full collections during it (count, longest), and one after it")
    for row in rows:
        for label, key in (("as is", "relist"), ("frozen every 20 pages", "relist_refrozen")):
            r = row[key]
            print(
                f"{row['pods']:>8} {label:>22}: {r['full_collections_during']} during, longest "
                f"{r['longest_during_ms']} ms; after {r['full_collection_after_ms']} ms"
            )
    print(f"saved to {shown(save_results('gc_pause', {'collections': COLLECTIONS, 'rows': rows}))}")


if __name__ == "__main__":
    main()
