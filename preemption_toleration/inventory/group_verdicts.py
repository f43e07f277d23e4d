"""The guard's copy of the decisions that stand for victim groups of `disruptionMode: all`
(`guard.group_claims`): each kept until the moment its replica may no longer answer from it without reading
the claim again."""

from __future__ import annotations

from datetime import datetime
from typing import Generic, TypeVar

V = TypeVar("V")

KEPT_GROUPS = 4096  # the latest groups decided; an older one is read again


class GroupVerdicts(Generic[V]):
    """Decisions by group UID, each until its `trusted_until`."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[datetime, V]] = {}

    def recall(self, group_uid: str, now: datetime) -> V | None:
        """The decision that stands for the group at `now`; None when there is none to answer from."""
        kept = self._kept.get(group_uid)
        if kept is None:
            return None
        trusted_until, decision = kept
        if now >= trusted_until:
            del self._kept[group_uid]
            return None
        return decision

    def keep(self, group_uid: str, decision: V, trusted_until: datetime) -> None:
        self._kept.pop(group_uid, None)
        self._kept[group_uid] = (trusted_until, decision)
        if len(self._kept) > KEPT_GROUPS:
            del self._kept[next(iter(self._kept))]
