"""The webhook keeps its pod records out of the garbage collector's full collections: frozen once the caches
are first listed, and frozen again every few pages of a later listing."""

import asyncio
import gc
import logging

from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.kube.informer import Informer
from preemption_toleration.webhooks.heap import PageFreezer
from preemption_toleration.webhooks.runner import _synced_or_stopped


def test_a_later_listing_freezes_every_few_pages() -> None:
    freezes: list[int] = []
    freezer = PageFreezer(3, freeze=lambda: freezes.append(freezer.pages))
    for _ in range(10):
        freezer.page_listed()
    assert freezes == [3, 6, 9]


def test_the_default_freeze_moves_new_records_out_of_full_collections() -> None:
    """What PageFreezer does by default: what is alive after a young collection is frozen, so the next
    full collection does not traverse it."""
    gc.collect()
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        records = [{"name": f"pod-{i}", "labels": {"app": "a"}} for i in range(1000)]
        freezer = PageFreezer(1)
        freezer.page_listed()
        assert gc.get_freeze_count() >= before + len(records)
        assert all(tracked is not records[0] for tracked in gc.get_objects())  # frozen ones are not listed
    finally:
        gc.unfreeze()


class Caches:  # the part of AdmissionCaches the start-up and /readyz read
    def __init__(self, groups: Informer | None) -> None:
        self.pods = Informer("pods", lambda **_: None, PodIndex(), logging.getLogger("test"))
        self.pods.synced.set()
        self.groups = groups

    def required(self) -> list[Informer]:
        return [self.pods]

    @property
    def synced(self) -> bool:
        return self.pods.synced.is_set()

    def stats(self) -> list:
        return [self.pods.stats()]

    def problems(self, needs: str) -> list[str]:
        return [problem for informer in self.required() if (problem := informer.health(60.0)) is not None]

    def groups_problem(self) -> str | None:
        return self.groups.health(60.0) if self.groups is not None else None


async def test_once_the_caches_are_listed_a_later_listing_of_pods_freezes_as_it_goes() -> None:
    """The wiring in the webhook's start-up: the pod cache's listings after the first one are frozen."""

    caches = Caches(groups=None)  # PodGroups not served
    assert caches.pods.page_listed is None
    try:
        assert await _synced_or_stopped(caches, None, asyncio.Event())  # type: ignore[arg-type]
    finally:
        gc.unfreeze()
    assert isinstance(getattr(caches.pods.page_listed, "__self__", None), PageFreezer)


async def test_a_start_waits_for_the_podgroups_a_while_then_is_ready_without_them(monkeypatch, caplog) -> None:
    """PodGroups served but never listed (say, a role that misses them): once the other caches are listed the
    start waits for them `GROUPS_START_WAIT_SECONDS` at most, then goes on, and says why."""
    from preemption_toleration.webhooks import runner

    monkeypatch.setattr(runner, "GROUPS_START_WAIT_SECONDS", 0.05)

    groups = Informer("podgroups", lambda **_: None, PodIndex(), logging.getLogger("test"))
    try:
        with caplog.at_level(logging.WARNING, "preemption_toleration.webhooks"):
            assert await asyncio.wait_for(_synced_or_stopped(Caches(groups), None, asyncio.Event()), timeout=5)  # type: ignore[arg-type]
    finally:
        gc.unfreeze()
    assert [(record.getMessage(), record.problem) for record in caplog.records] == [
        (
            "podgroups not listed yet: ready without them; no decision is made about a pod that names one until"
            " they are",
            "podgroups: not listed yet",
        )
    ]
