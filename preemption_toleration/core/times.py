"""Times as the Kubernetes API writes them (RFC 3339, UTC, whole seconds)."""

from __future__ import annotations

from datetime import UTC, datetime

NANOSECONDS_PER_SECOND = 1_000_000_000


def rfc3339(moment: datetime) -> str:
    """`moment` (timezone-aware) as metav1.Time's JSON: 2026-11-22T12:00:00Z."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
