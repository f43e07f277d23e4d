"""Records of Kueue's ClusterQueues (`kueue.x-k8s.io/v1beta2`): what the boost reads of one, its preemption
policies and its cohort, read once as it is decoded (docs/contract.md, "Kueue")."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from preemption_toleration.core.shapes import as_mapping


class PreemptionPolicy(enum.IntEnum):
    """Kueue's preemption policies, from the one that lets the fewest preemptors take a Workload to the one
    that lets the most (Kueue's `SatisfiesPreemptionPolicy`)."""

    NEVER = 0
    LOWER_PRIORITY = 1  # a preemptor of higher effective priority
    LOWER_OR_NEWER_EQUAL_PRIORITY = 2  # ... or of equal effective priority, queued before the Workload
    ANY = 3  # any preemptor

    @classmethod
    def read(cls, value: Any) -> PreemptionPolicy:
        """The policy a field names; Kueue's default (absent) is Never, and a name Kueue does not know (a later
        release's) counts as Any, which lets the most preemptors in."""
        if value is None or value == "":
            return cls.NEVER
        return _BY_NAME.get(value, cls.ANY) if isinstance(value, str) else cls.ANY


_BY_NAME = {
    "Never": PreemptionPolicy.NEVER,
    "LowerPriority": PreemptionPolicy.LOWER_PRIORITY,
    "LowerOrNewerEqualPriority": PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY,
    "Any": PreemptionPolicy.ANY,
}


@dataclass(frozen=True, slots=True)
class ClusterQueueRecord:
    name: str
    cohort: str | None  # spec.cohortName (None: in no cohort)
    within: PreemptionPolicy  # spec.preemption.withinClusterQueue: preemptors of its own queue
    reclaim: PreemptionPolicy  # spec.preemption.reclaimWithinCohort: its preemptors' victims in other queues


def cluster_queue_record(raw: Mapping[str, Any]) -> ClusterQueueRecord:
    """The record of a ClusterQueue as the API server returns it (v1beta2); a field of the wrong shape reads as
    the policy that lets the most preemptors in."""
    spec = as_mapping(raw.get("spec"))
    preemption = as_mapping(spec.get("preemption"))
    cohort = spec.get("cohortName")
    return ClusterQueueRecord(
        name=str(as_mapping(raw.get("metadata")).get("name") or ""),
        cohort=cohort if isinstance(cohort, str) and cohort else None,
        within=PreemptionPolicy.read(preemption.get("withinClusterQueue")),
        reclaim=PreemptionPolicy.read(preemption.get("reclaimWithinCohort")),
    )
