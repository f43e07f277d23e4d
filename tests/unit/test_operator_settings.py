"""The kopf settings the operator runs with."""

from __future__ import annotations

import itertools
from collections.abc import Sized

import kopf

from preemption_toleration.operator.handlers import EndlessBackoffs, OperatorConfig, apply_settings


def test_api_retries_are_never_used_up() -> None:
    settings = kopf.OperatorSettings()
    apply_settings(settings, OperatorConfig(peering_priority=7))
    backoffs = settings.networking.error_backoffs
    # kopf counts the attempts of a Sized sequence and gives up after the last; it must not be able to
    assert isinstance(backoffs, EndlessBackoffs) and not isinstance(backoffs, Sized)
    assert list(itertools.islice(backoffs, 12)) == [1, 1, 2, 3, 5, 8, 13, 21, 30, 30, 30, 30]
    assert list(itertools.islice(backoffs, 3)) == [1, 1, 2]  # each request starts again from the first delay
    assert settings.peering.priority == 7
    assert settings.persistence.finalizer == "preemption-toleration.dev/finalizer"
