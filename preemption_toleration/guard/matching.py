"""Could a pending pod be scheduled onto a node? Only the parts a preemption cannot change: node
selector, required node affinity and taints (resources are what preemption frees)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from preemption_toleration.core.selectors import requirement_holds
from preemption_toleration.records.node import NodeRecord


def _term_holds(term: Mapping[str, Any], node: NodeRecord) -> bool:
    labels = node.labels
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches no node
    name_labels = {"metadata.name": node.name}
    return all(requirement_holds(r, labels, numeric=True) for r in expressions) and all(
        requirement_holds(r, name_labels, numeric=True) for r in fields
    )


def node_selector_matches(pod: Mapping[str, Any], node: NodeRecord) -> bool:
    labels = node.labels
    spec = pod.get("spec") or {}
    if any(labels.get(key) != value for key, value in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if terms is None:
        return True
    return any(_term_holds(term, node) for term in terms)  # terms are ORed


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    key = toleration.get("key")
    if operator == "Exists":
        return not key or key == taint.get("key")
    return key == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")


def tolerates_taints(pod: Mapping[str, Any], node: NodeRecord) -> bool:
    tolerations: Sequence[Mapping[str, Any]] = (pod.get("spec") or {}).get("tolerations") or []
    for taint in node.taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue  # PreferNoSchedule never keeps a pod off a node
        if not any(_tolerates(toleration, taint) for toleration in tolerations):
            return False
    return True


def could_run_on(pod: Mapping[str, Any], node: NodeRecord) -> bool:
    return node_selector_matches(pod, node) and tolerates_taints(pod, node)
