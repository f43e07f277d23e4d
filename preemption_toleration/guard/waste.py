"""Deletions in vain: a scheduler's victim that upstream's plugin would not preempt on its node, where pods
that tolerate the preemptor lead the stock scheduler astray.

The stock scheduler counts the pods that tolerate the preemptor as potential victims, so on a node that
holds some, its choice can mix plain and protected pods. It deletes the plain ones in parallel before the
guard refuses the protected one, for nothing: the preemptor still does not fit. Upstream's plugin leaves
the tolerating pods out: it does not consider a node where the preemptor cannot fit without them, and
elsewhere it chooses its own victims (`extender.victims`). With steering on, the guard refuses a victim
that upstream would not preempt there, and steering carries out upstream's choice instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from preemption_toleration.core.exemption import PriorityClassNotFound, exemption_under
from preemption_toleration.core.resources import allocatable
from preemption_toleration.core.shapes import as_mapping
from preemption_toleration.extender.victims import importance, select_victims
from preemption_toleration.governance.views import ClassView
from preemption_toleration.inventory.pods import PodIndex
from preemption_toleration.inventory.slim import SlimPod


def in_vain(
    victim_uid: str,
    node_name: str,
    preemptor: Mapping[str, Any],
    pods: PodIndex,
    nodes: Mapping[str, Mapping[str, Any]],
    classes: Mapping[str, ClassView],
    now: datetime,
) -> str | None:
    """Why upstream's plugin would not preempt this victim on its node for this preemptor, when pods there
    tolerate the preemptor; None when it would (or no pod there tolerates the preemptor: the scheduler's
    choice is then upstream's), or when it cannot be judged (a node, class or preemptor the cache does not
    hold)."""
    metadata = as_mapping(preemptor.get("metadata"))
    cached = pods.get((str(metadata.get("namespace") or ""), str(metadata.get("name") or "")))
    node = nodes.get(node_name)
    if cached is None or node is None:
        return None

    def exempt(pod: SlimPod) -> bool:
        view = classes.get(pod.priority_class or "")
        return exemption_under(pod.as_json(), preemptor, view.toleration if view is not None else None, now)[0]

    on_node = pods.on_node(node_name)
    try:
        tolerating = [
            f"{pod.namespace}/{pod.name}"
            for pod in on_node
            if pod.priority < cached.priority and pod.deletion is None and exempt(pod)
        ]
        if not tolerating:
            return None
        nominated = [pod for pod in pods.nominated_to(node_name) if pod.uid != cached.uid]
        chosen = select_victims(cached.priority, dict(cached.requests), on_node, nominated, allocatable(node), exempt)
    except PriorityClassNotFound:
        return None
    names = ", ".join(sorted(tolerating))
    if any(pod.uid == victim_uid and pod.deletion is not None for pod in on_node):
        return None  # already terminating: refusing its deletion again saves nothing
    if chosen is None:
        return f"it cannot fit on node {node_name} without {names}, which tolerate it"
    victim = next((pod for pod in on_node if pod.uid == victim_uid), None)
    if victim is None:
        return None
    # of equal priority and start, either pod is upstream's choice (Go's sort does not keep their order)
    if any(importance(pod) == importance(victim) for pod in chosen.victims):
        return None
    kept = ", ".join(f"{pod.namespace}/{pod.name}" for pod in chosen.victims)
    return f"on node {node_name}, where {names} tolerate it, upstream's plugin would preempt {kept} instead"
