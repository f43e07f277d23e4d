"""kopf's peering rule, as the operator's resync applies it: which live peers pause this replica."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from preemption_toleration.kube.peering import blocking_peers, new_identity

NOW = datetime(2026, 11, 23, 9, 0, 0, tzinfo=UTC)
ME, MY_PRIORITY = "operator-a/20261123085900/abc123", 200


def seen(seconds_ago: float) -> str:
    """A lastseen as kopf writes it (datetime.isoformat() of an aware UTC time)."""
    return (NOW - timedelta(seconds=seconds_ago)).isoformat()


CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    # (rule, status of the ClusterKopfPeering, the peers that pause us)
    ("alone: active", {ME: {"priority": MY_PRIORITY, "lifetime": 60, "lastseen": seen(1)}}, []),
    ("no status at all: active", {}, []),
    ("a lower priority peer does not pause us", {"b": {"priority": 100, "lifetime": 60, "lastseen": seen(1)}}, []),
    ("a higher priority peer pauses us", {"b": {"priority": 300, "lifetime": 60, "lastseen": seen(1)}}, ["b"]),
    (
        "the same priority pauses both (kopf's rule without shard selectors)",
        {"b": {"priority": MY_PRIORITY, "lifetime": 60, "lastseen": seen(1)}},
        ["b"],
    ),
    (
        "a higher peer past its lifetime is dead",
        {"b": {"priority": 300, "lifetime": 60, "lastseen": seen(61)}},
        [],
    ),
    (
        "a higher peer exactly at its deadline is dead (kopf: deadline <= now)",
        {"b": {"priority": 300, "lifetime": 60, "lastseen": seen(60)}},
        [],
    ),
    ("lifetime defaults to 60 s", {"b": {"priority": 300, "lastseen": seen(59)}}, ["b"]),
    ("a missing lastseen reads as now: live", {"b": {"priority": 300, "lifetime": 60}}, ["b"]),
    ("a missing priority reads as 0", {"b": {"lifetime": 60, "lastseen": seen(1)}}, []),
    (
        "a lastseen with a Z suffix",
        {"b": {"priority": 300, "lifetime": 60, "lastseen": "2026-11-23T08:59:59Z"}},
        ["b"],
    ),
    (
        "an unreadable lastseen counts as live, to be safe",
        {"b": {"priority": 300, "lifetime": 60, "lastseen": "yesterday"}},
        ["b"],
    ),
    (
        "kopf freeze: a higher-priority entry pauses everyone",
        {"kopf-freeze": {"priority": 10**9, "lifetime": 3600, "lastseen": seen(10)}},
        ["kopf-freeze"],
    ),
    (
        "our own entry never pauses us, whatever it says",
        {ME: {"priority": 10**9, "lifetime": 60, "lastseen": seen(1)}},
        [],
    ),
    (
        "several: only the live ones at or above us, by name",
        {
            "d": {"priority": 300, "lifetime": 60, "lastseen": seen(1)},
            "c": {"priority": 100, "lifetime": 60, "lastseen": seen(1)},
            "b": {"priority": MY_PRIORITY, "lifetime": 60, "lastseen": seen(1)},
            "a": {"priority": 500, "lifetime": 10, "lastseen": seen(30)},
        },
        ["b", "d"],
    ),
    ("an entry that is not a map reads as a live peer of priority 0", {"b": "garbage"}, []),
]


@pytest.mark.parametrize(("rule", "status", "expected"), CASES, ids=[case[0] for case in CASES])
def test_blocking_peers(rule: str, status: dict[str, Any], expected: list[str]) -> None:
    assert blocking_peers(status, ME, MY_PRIORITY, NOW) == expected


def test_identities_differ_between_replicas_on_one_host() -> None:
    assert len({new_identity() for _ in range(50)}) == 50
