"""Deletions in vain: a scheduler's victim on a node where pods that tolerate the preemptor lead the stock
scheduler astray.

The stock scheduler counts the pods that tolerate the preemptor as potential victims. Where its choice on a
node includes one, it deletes the plain victims in parallel and the guard then refuses the tolerating one:
the preemptor still does not fit there, and the plain victims were deleted for nothing. Upstream's plugin
leaves the tolerating pods out: it does not consider a node where the preemptor cannot fit without them,
and elsewhere it chooses its own victims (`extender.victims`). With steering on, the guard refuses such a
victim too, and steering carries out upstream's choice instead.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from preemption_toleration.core.exemption import PriorityClassNotFound, exemption
from preemption_toleration.extender.victims import NodeVictims, importance, select_victims
from preemption_toleration.inventory.budgets import BudgetIndex, split_by_budget_violation
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.node import NodeRecord
from preemption_toleration.records.pod import PodRecord, SlimPod


def _names(pods: list[SlimPod]) -> str:
    return ", ".join(sorted(f"{pod.namespace}/{pod.name}" for pod in pods))


def choice_on_node(
    preemptor: SlimPod,
    node_name: str,
    node: NodeRecord,
    pods: PodIndex,
    budgets: BudgetIndex,
    excluded: Callable[[SlimPod], bool],
) -> NodeVictims | None:
    """The victims `SelectVictimsOnNode` picks for the preemptor on one node, the pods `excluded` left out (none:
    the stock scheduler's own choice; those that tolerate it: upstream's plugin's), the other pods nominated
    there counted."""
    return select_victims(
        preemptor.priority,
        dict(preemptor.requests),
        pods.on_node(node_name),
        [pod for pod in pods.nominated_to(node_name) if pod.uid != preemptor.uid],
        node.allocatable,
        excluded,
        lambda found: split_by_budget_violation(found, budgets),
    )


def stock_choice_refused(
    preemptor: SlimPod,
    victim: SlimPod,
    node: NodeRecord,
    pods: PodIndex,
    budgets: BudgetIndex,
    exempt: Callable[[SlimPod], bool],
) -> bool:
    """Whether the guard refuses the stock scheduler's preemption for this preemptor on the victim's node with
    steering on: its choice there includes the victim and a pod that tolerates the preemptor (the victim itself
    or another, which makes the victim's deletion one in vain). Raises PriorityClassNotFound as `exempt` does."""
    node_name = victim.node_name or ""
    stock = choice_on_node(preemptor, node_name, node, pods, budgets, lambda pod: False)
    if stock is None or all(pod.uid != victim.uid for pod in stock.victims):
        return False
    return any(exempt(pod) for pod in stock.victims)


def in_vain(victim_uid: str, node_name: str, preemptor: PodRecord, view: ClusterView, now: datetime) -> str | None:
    """Why this victim of the scheduler would be deleted in vain, when pods of its node tolerate the
    preemptor; None when it would not (or no pod there tolerates the preemptor: the scheduler's choice is then
    upstream's), or when it cannot be judged (a node, class or preemptor the cache does not hold)."""
    pods = view.pods
    cached = pods.get(preemptor.key)
    node = view.nodes.get(node_name)
    if cached is None or node is None:
        return None

    def exempt(pod: SlimPod) -> bool:
        record = view.classes.get(pod.priority_class or "")
        return exemption(pod, preemptor, record.toleration if record is not None else None, now)[0]

    on_node = pods.on_node(node_name)
    victim = next((pod for pod in on_node if pod.uid == victim_uid), None)
    if victim is None or victim.deletion is not None:
        return None  # not in the cache, or already terminating: refusing its deletion again saves nothing

    def choose(excluded: Callable[[SlimPod], bool]) -> NodeVictims | None:
        return choice_on_node(cached, node_name, node, pods, view.budgets, excluded)

    try:
        tolerating = [pod for pod in on_node if pod.priority < cached.priority and pod.deletion is None and exempt(pod)]
        if not tolerating:
            return None
        stock = choose(lambda pod: False)  # the scheduler's own choice there counts every lower pod
        refused = [pod for pod in stock.victims if exempt(pod)] if stock is not None else []
        upstream = choose(exempt)
    except PriorityClassNotFound:
        return None
    if refused:
        return (
            f"the scheduler's choice on node {node_name} includes {_names(refused)}, which tolerate it, so its "
            "preemption there cannot complete"
        )
    if upstream is None:
        return f"it cannot fit on node {node_name} without {_names(tolerating)}, which tolerate it"
    # of equal priority and start, either pod is upstream's choice (Go's sort does not keep their order)
    if any(importance(pod) == importance(victim) for pod in upstream.victims):
        return None
    chosen = ", ".join(f"{pod.namespace}/{pod.name}" for pod in upstream.victims)
    return f"on node {node_name}, where {_names(tolerating)} tolerate it, upstream's plugin would preempt {chosen}"
