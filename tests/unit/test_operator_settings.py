"""The kopf settings the operator runs with."""

from __future__ import annotations

import logging

import kopf

from preemption_toleration.operator.config import OperatorConfig
from preemption_toleration.operator.handlers import apply_settings
from preemption_toleration.operator.runner import NoEventHandlerLines, new_identity

KOPF_SILENT_WATCH_RESTART_SECONDS = 70  # kopf's settings.watching.inactivity_timeout


def test_api_retries_outlast_a_silent_watch_but_not_a_lasting_error() -> None:
    settings = kopf.OperatorSettings()
    apply_settings(settings, OperatorConfig(peering_priority=7))
    backoffs = list(settings.networking.error_backoffs)
    assert settings.watching.inactivity_timeout == KOPF_SILENT_WATCH_RESTART_SECONDS
    # a watch is restarted (its attempts counted from the first again) before its retries run out ...
    assert sum(backoffs) > 4 * KOPF_SILENT_WATCH_RESTART_SECONDS
    # ... while any other request gives a lasting error up within a quarter of an hour, every 30 s at most
    assert sum(backoffs) < 15 * 60 and max(backoffs) == 30 and backoffs[:4] == [1, 1, 2, 3]
    assert settings.peering.priority == 7
    assert settings.persistence.finalizer == "preemption-toleration.dev/finalizer"


def test_peering_priorities_are_random_unless_set() -> None:
    priorities = {OperatorConfig().peering_priority for _ in range(20)}
    assert len(priorities) > 15 and all(p >= 1 for p in priorities)


def test_kopf_lists_the_policies_in_pages() -> None:
    settings = kopf.OperatorSettings()
    apply_settings(settings, OperatorConfig())
    assert settings.watching.chunk_size == 100


def test_replicas_on_one_host_join_the_peering_under_identities_of_their_own() -> None:
    assert len({new_identity() for _ in range(50)}) == 50


def test_kopfs_line_for_each_run_of_the_policies_event_handler_is_dropped_and_its_others_kept() -> None:
    line = logging.LogRecord("kopf.objects", logging.INFO, "", 0, "Handler 'policy_event' succeeded.", None, None)
    other = logging.LogRecord("kopf.objects", logging.INFO, "", 0, "Removing the finalizer.", None, None)
    assert not NoEventHandlerLines().filter(line) and NoEventHandlerLines().filter(other)
