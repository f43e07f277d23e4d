"""What the guard keeps between requests, beside the read-only view of the caches: `judge` is a function of
the request, the view and this memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from preemption_toleration.inventory.group_verdicts import GroupVerdicts
from preemption_toleration.inventory.preemptors import PreemptorRecord


@dataclass
class GuardMemory:
    # the decisions for victim groups (`guard.verdicts.GroupDecision`), kept between a preemption's requests
    group_verdicts: GroupVerdicts[Any] = field(default_factory=GroupVerdicts)
    preemptors: PreemptorRecord | None = None  # what the extender's calls said; None: the guard infers only
