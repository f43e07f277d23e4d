"""Which pending pod is the scheduler deleting this victim for? (DESIGN §6)

The scheduler names no preemptor when it deletes a victim, so the guard looks for pods that could be the
one being scheduled: unbound, not terminating, of higher priority than the victim, allowed to preempt,
and able to run on the victim's node. A pod already nominated to that node comes first; when candidates
disagree, the highest priority wins (the scheduler's queue order), then the oldest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from preemption_toleration.core.pods import pod_priority, preempts_never
from preemption_toleration.guard.matching import could_run_on


def _is_candidate(pod: Mapping[str, Any], victim_priority: int, node: Mapping[str, Any] | None) -> bool:
    spec = pod.get("spec") or {}
    if spec.get("nodeName") or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    if pod_priority(pod) <= victim_priority or preempts_never(pod):
        return False
    return node is None or could_run_on(pod, node)


def _queue_order(pod: Mapping[str, Any]) -> tuple[int, str]:
    created = str((pod.get("metadata") or {}).get("creationTimestamp") or "")
    # highest priority first, then the oldest (RFC 3339 UTC strings sort by time)
    return (-pod_priority(pod), created)


def infer_preemptor(
    victim: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], node: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    node_name = (victim.get("spec") or {}).get("nodeName")
    victim_priority = pod_priority(victim)
    candidates = [pod for pod in pods if _is_candidate(pod, victim_priority, node)]
    nominated = [p for p in candidates if node_name and (p.get("status") or {}).get("nominatedNodeName") == node_name]
    pool = nominated or candidates
    return min(pool, key=_queue_order) if pool else None
