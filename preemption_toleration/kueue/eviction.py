"""Kueue's preemption of a Workload, as its write on `workloads/status` shows it: `Evicted=True` with reason
`Preempted`, newly, beside a `Preempted` condition whose message names the preemptor Workload's UID (Kueue's
`preemptionMessage`, v0.17 to v0.19). What the backstop judges (docs/contract.md, "Kueue")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from preemption_toleration.core.shapes import as_list, as_mapping

EVICTED: Final = "Evicted"
PREEMPTED: Final = "Preempted"  # the Evicted reason of a preemption, and the type of its own condition
# "Preempted to accommodate a workload (UID: <uid>, JobUID: <uid>) due to <reason>; preemptor path: ..."
_PREEMPTOR = re.compile(r"^Preempted to accommodate a workload \(UID: ([^,\s]+), JobUID: ([^)\s]+)\)")
_UNKNOWN = "UNKNOWN"  # what Kueue writes for a UID it does not know


@dataclass(frozen=True, slots=True)
class KueuePreemption:
    """A Workload's eviction by Kueue's preemption: the preemptor Workload's UID, and its Job's (None where Kueue
    wrote none), and the Preempted condition's reason (InClusterQueue, InCohortReclamation...)."""

    preemptor_uid: str | None
    preemptor_job_uid: str | None
    reason: str


def _condition(workload: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    for condition in as_list(as_mapping(as_mapping(workload).get("status")).get("conditions")):
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def _evicted_by_preemption(workload: Mapping[str, Any] | None) -> bool:
    evicted = _condition(workload, EVICTED)
    return evicted is not None and evicted.get("status") == "True" and evicted.get("reason") == PREEMPTED


def preemption_of(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> KueuePreemption | None:
    """The preemption a write on a Workload's status makes (None: the write makes none, or one that was made
    already: a Workload evicted before is not preempted again)."""
    if not _evicted_by_preemption(new) or _evicted_by_preemption(old):
        return None
    preempted = _condition(new, PREEMPTED)
    message = preempted.get("message") if preempted is not None else None
    reason = preempted.get("reason") if preempted is not None else None
    found = _PREEMPTOR.match(message) if isinstance(message, str) else None
    uid, job_uid = found.groups() if found else (None, None)
    return KueuePreemption(
        uid if uid != _UNKNOWN else None,
        job_uid if job_uid != _UNKNOWN else None,
        reason if isinstance(reason, str) else "",
    )
