"""Each victim judged again right before its DELETE, against the caches of that moment: a plan is made from
the classes, policies and pods of its own moment, and an action takes seconds (its writes, the rate limit),
during which a policy may be applied or a class annotated. What holds then wins."""

from __future__ import annotations

from datetime import datetime

from preemption_toleration.core.exemption import PriorityClassNotFound
from preemption_toleration.extender.decisions import ExemptionCheck
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.pod import SlimPod


def victim_now(
    planned: SlimPod, node: str, preemptor: SlimPod, view: ClusterView, now: datetime
) -> SlimPod | str | None:
    """The victim a plan named (`planned`) as the cache holds it now, when it may still be preempted for
    `preemptor` on `node`; None when it is gone, terminating already, or another pod of that name is there now
    (nothing of this plan to delete); otherwise why the action stops before it."""
    namespace, name = planned.key
    pod = view.pods.get(planned.key)
    if pod is None or pod.uid != planned.uid or pod.deletion is not None:
        return None  # gone, another pod, or terminating already (its mark and DELETE are someone else's)
    where = f"victim {namespace}/{name}"
    if pod.node_name != node:
        return f"{where} is on {pod.node_name or 'no node'}, not on {node}"
    if pod.priority >= preemptor.priority:
        return f"{where} has priority {pod.priority}, not below the preemptor's {preemptor.priority}"
    if pod.pod_group is not None:
        return f"{where} is a member of PodGroup {namespace}/{pod.pod_group}"
    try:
        if ExemptionCheck(preemptor, view, now)(pod):
            return f"{where} tolerates the preemptor now"
    except PriorityClassNotFound:
        return f"{where}'s PriorityClass is not in the cache"
    return pod
