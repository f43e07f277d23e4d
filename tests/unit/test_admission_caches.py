"""What the webhook server's caches say may be decided from: the caches every decision needs (which /readyz
reports), and apart from them the PodGroups, needed only for a pod that names one."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.webhooks.caches import NOT_SERVED, AdmissionCaches

LOGGER = logging.getLogger("test")


@pytest.fixture
async def api() -> AsyncIterator[ApiClient]:
    api = ApiClient()  # never called: no informer is started
    yield api
    await api.close()


async def test_podgroups_unlisted_keep_the_server_ready_and_only_group_decisions_wait(api: ApiClient) -> None:
    caches = AdmissionCaches(api, LOGGER, guard=True, pod_groups=True)
    for informer in caches.informers():
        if informer is not caches.groups:
            informer.synced.set()
    assert caches.problems("all") == [] and caches.synced
    assert caches.groups_problem() == "podgroups: not listed yet"
    assert caches.view().groups_problem == "podgroups: not listed yet"
    assert caches.groups is not None
    caches.groups.synced.set()
    assert caches.view().groups_problem is None


async def test_podgroups_not_served_at_start_are_the_reason_a_group_is_not_decided(api: ApiClient) -> None:
    caches = AdmissionCaches(api, LOGGER, guard=True, pod_groups=False)
    assert caches.groups is None
    assert caches.view().groups_problem == NOT_SERVED
    assert "restart it after turning GenericWorkload on" in NOT_SERVED


async def test_the_view_is_given_again_until_a_class_or_policy_changes(api: ApiClient) -> None:
    """Asked on every request: the same view while nothing it reads was replaced, a new one after a change."""
    caches = AdmissionCaches(api, LOGGER, guard=True, pod_groups=False)
    first = caches.view()
    assert caches.view() is first
    caches.class_store.put({"metadata": {"name": "batch"}, "value": 8000})
    caches._changed()  # what the classes' informer calls on every event
    changed = caches.view()
    assert changed is not first and "batch" in changed.classes and "batch" not in first.classes
    assert caches.view() is changed
