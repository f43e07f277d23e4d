"""The extender's preempt decision over all candidate nodes of one preemption attempt.

For each node the scheduler proposes: if no pod of lower priority on the node is exempt from this
preemptor (the toleration contract, `exempted_from_preemption`), its victims are returned unchanged, so
every filter of the scheduler's own dry run (affinity, ports, volumes) still holds. If a proposed victim is
exempt, the victims are chosen again as upstream's plugin does (`victims.select_victims`), or the node is
left out when the preemptor cannot fit there without an exempt pod. If only pods the scheduler did not
propose are exempt, its victims are upstream's too, unless a PodDisruptionBudget selects an exempt pod:
its dry run spent a disruption on that pod and upstream's does not, so the victims are chosen again for a
preemptor whose constraints the project judges exactly (`core.constraints`), and otherwise kept with the
budget violations counted again. A victim the cache does
not hold leaves the node as the scheduler proposed it (the guard still judges each deletion); a node or
class the cache does not know, when a victim is exempt, leaves the node out.

Pod groups (1.37): the scheduler proposes a PodGroup of `disruptionMode: all` whole as the victims of one
node, its members on other nodes included, and looks each UID of the answer up among that node's pods only.
So where such a group tolerates the preemptor, the node is left out (an answer the scheduler takes); where it
does not, the node is returned as proposed, which the scheduler cannot take: it discards the whole answer and
preempts as it chose, which the guard judges (`ACROSS_NODES`). A choice made again never takes a member of a
`disruptionMode: all` group, which it could only take in part.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from preemption_toleration.api.extender import ExtenderPreemptionArgs, ExtenderPreemptionResult, MetaPod, MetaVictims
from preemption_toleration.core.annotations import ClassToleration
from preemption_toleration.core.constraints import unjudged_constraints
from preemption_toleration.core.exemption import PriorityClassNotFound, class_exemption, exemption
from preemption_toleration.core.groups import DisruptionMode
from preemption_toleration.core.pods import PodJson, PreemptorFacts, pod_priority
from preemption_toleration.core.protection import Protection, ProtectionKind, protection_under
from preemption_toleration.core.quantities import pod_requests
from preemption_toleration.core.shapes import as_mapping
from preemption_toleration.extender.victims import (
    BudgetSplit,
    NodeVictims,
    count_violations,
    potential_victims,
    select_victims,
)
from preemption_toleration.inventory.budgets import split_by_budget_violation
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.node import NodeRecord
from preemption_toleration.records.pod import PodRecord, SlimPod
from preemption_toleration.records.pod_group import MemberRecord, PodGroupRecord


class NodeChoice(str, Enum):
    UNCHANGED = "unchanged"  # no exempt victim: the scheduler's choice stands
    REPLACED = "replaced"  # victims chosen again without the exempt ones
    DROPPED = "dropped"  # the preemptor cannot fit there without an exempt pod
    RECOUNTED = "recounted"  # the scheduler's victims, with budget violations counted without exempt pods
    UNKNOWN = "unknown"  # a victim the cache does not hold: the scheduler's choice, for the guard to judge
    # members of a PodGroup of disruptionMode all on other nodes, which the scheduler cannot take from an
    # answer: it discards the answer and preempts as it chose, for the guard to judge
    ACROSS_NODES = "across-nodes"


@dataclass(frozen=True)
class NodeOutcome:
    node: str
    choice: NodeChoice
    victims: tuple[str, ...]  # UIDs returned for the node (none when dropped)
    exempt: tuple[str, ...] = ()  # "namespace/name" of the scheduler's victims that were exempt
    detail: str = ""
    pdb_violations: int | None = None  # of recomputed victims; None: the scheduler's own count stands
    # The earliest end of a time-limited toleration among the exempt victims: when the preemptor should be
    # tried again (None: no exempt victim's toleration ends)
    held_until: datetime | None = None


@dataclass(frozen=True)
class PreemptDecision:
    result: ExtenderPreemptionResult
    outcomes: tuple[NodeOutcome, ...]


class ExemptionCheck:
    """The exemption check for slim pods of the cache, against one preemptor at one moment."""

    def __init__(self, preemptor: PreemptorFacts, view: ClusterView, now: datetime) -> None:
        self.preemptor = preemptor
        self.view = view
        self.now = now
        self.known: dict[str, bool] = {}  # by pod uid: each pod is judged once per call
        self.protections: dict[str, Protection] = {}  # by pod uid, as the judgement computed it
        self.by_class: dict[str, bool | None] = {}  # `_class_wide`, by class name

    def __call__(self, pod: SlimPod) -> bool:
        found = self.known.get(pod.uid)
        if found is None and pod.pod_group is None and pod.priority_class:
            found = self._class_wide(pod.priority_class)
            if found is not None:
                return found
        if found is None:
            judged = self.view.as_member(pod)  # a member of a PodGroup as its group, as the guard judges it
            found, protection = exemption(judged, self.preemptor, self._toleration(judged), self.now)
            self.known[pod.uid] = found
            if protection is not None:
                self.protections[pod.uid] = protection
        return found

    def _class_wide(self, class_name: str) -> bool | None:
        """The verdict for every pod of this class that is no group member, when it does not depend on the
        pod (`class_exemption`): read once per class, not once per pod."""
        if class_name not in self.by_class:
            record = self.view.classes.get(class_name)
            self.by_class[class_name] = class_exemption(record.toleration, self.preemptor) if record else None
        return self.by_class[class_name]

    def earliest_end(self, pods: list[SlimPod]) -> datetime | None:
        """When the first of these exempt pods' tolerations ends, if any of them ends."""
        ends = []
        for pod in pods:
            protection = self.protections.get(pod.uid)
            if protection is None:  # exempt by the preemptor's preemptionPolicy alone
                judged = self.view.as_member(pod)
                protection = protection_under(judged, self._toleration(judged), self.now)
            if protection.kind is ProtectionKind.UNTIL and protection.until is not None:
                ends.append(protection.until)
        return min(ends, default=None)

    def _toleration(self, pod: PodRecord) -> ClassToleration | None:
        """The toleration of the pod's class, as its record parsed it; None when the cache has no such class."""
        record = self.view.classes.get(pod.priority_class or "")
        return record.toleration if record is not None else None


def _by_uid(pods: Any) -> dict[str, SlimPod]:
    return {pod.uid: pod for pod in pods}


def _name(pod: SlimPod) -> str:
    return f"{pod.namespace}/{pod.name}"


@dataclass(frozen=True)
class _Preemptor:
    """What fitting reads of the preemptor, taken once per call rather than once per candidate node."""

    uid: str
    priority: int
    spec: Mapping[str, Any]
    unjudged: tuple[str, ...]  # constraints a choice on resources alone would miss (`core.constraints`)

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> _Preemptor:
        spec = as_mapping(pod.get("spec"))
        return cls(
            str(as_mapping(pod.get("metadata")).get("uid") or ""), pod_priority(pod), spec, unjudged_constraints(spec)
        )

    @functools.cached_property
    def requests(self) -> Mapping[str, int]:
        """Summed once, when a node's victims are chosen again: the scheduler's own victims need no fit."""
        return pod_requests(self.spec)


def _node_outcome(
    node: str, uids: list[str], preemptor: _Preemptor, exempt: ExemptionCheck, view: ClusterView
) -> NodeOutcome:
    on_node = _by_uid(view.pods.on_node(node))
    proposed = [on_node.get(uid) for uid in uids]
    if any(pod is None for pod in proposed):
        missing = [uid for uid, pod in zip(uids, proposed, strict=True) if pod is None]
        try:
            groups = _groups_across_nodes([pod for pod in proposed if pod is not None], missing, view)
            if groups is not None:
                return _across_nodes(node, uids, groups, exempt)
        except PriorityClassNotFound as missing_class:
            return NodeOutcome(node, NodeChoice.DROPPED, (), detail=str(missing_class))
        return NodeOutcome(node, NodeChoice.UNKNOWN, tuple(uids), detail=view.pods.describe_absent(missing))
    try:
        exempt_pods = [pod for pod in proposed if pod is not None and exempt(pod)]
        if not exempt_pods:
            return _unproposed_exemptions(node, uids, proposed, on_node, preemptor, exempt, view)
        exempt_victims = tuple(_name(pod) for pod in exempt_pods)
        # Every tolerating pod of the node counts, not only the proposed ones: the scheduler proposes the
        # newest pods, whose guarantees end last.
        held_until = exempt.earliest_end(
            [
                pod
                for pod in on_node.values()
                if pod.priority < preemptor.priority and pod.deletion is None and exempt(pod)
            ]
        )
        node_object = view.nodes.get(node)
        if node_object is None:
            return NodeOutcome(
                node, NodeChoice.DROPPED, (), exempt_victims, "the node is not in the cache", held_until=held_until
            )
        chosen = _upstream_victims(node, node_object, on_node, preemptor, exempt, view)
    except PriorityClassNotFound as missing_class:  # upstream leaves the node out on this error too
        return NodeOutcome(node, NodeChoice.DROPPED, (), detail=str(missing_class))
    if chosen is None:
        return NodeOutcome(
            node,
            NodeChoice.DROPPED,
            (),
            exempt_victims,
            "the preemptor does not fit without a pod that tolerates it (or a member of a PodGroup of disruptionMode "
            "all, which a choice made again never takes)",
            held_until=held_until,
        )
    return NodeOutcome(
        node,
        NodeChoice.REPLACED,
        tuple(pod.uid for pod in chosen.victims),
        exempt_victims,
        pdb_violations=chosen.num_pdb_violations,
        held_until=held_until,
    )


def _whole_group(pod: SlimPod, view: ClusterView) -> PodGroupRecord | None:
    """The PodGroup of `disruptionMode: all` the pod is a member of, as the cache has it."""
    judged = view.as_member(pod)
    if isinstance(judged, MemberRecord) and judged.group.disruption is DisruptionMode.ALL:
        return judged.group
    return None


def _groups_across_nodes(
    local: list[SlimPod], missing: list[str], view: ClusterView
) -> list[tuple[PodGroupRecord, SlimPod]] | None:
    """The `disruptionMode: all` groups of the node's proposed victims, each with one of its members there,
    when the proposed victims the node does not hold (`missing`, by UID) are all their members elsewhere;
    None otherwise."""
    groups: dict[str, tuple[PodGroupRecord, SlimPod]] = {}
    for pod in local:
        group = _whole_group(pod, view)
        if group is not None:
            groups.setdefault(group.uid, (group, pod))
    members = {member.uid for group, _ in groups.values() for member in view.pods.members_of(group.key).pods.values()}
    return list(groups.values()) if groups and set(missing) <= members else None


def _across_nodes(
    node: str, uids: list[str], groups: list[tuple[PodGroupRecord, SlimPod]], exempt: ExemptionCheck
) -> NodeOutcome:
    """A node whose proposed victims include members of `disruptionMode: all` groups on other nodes: left
    out where a group tolerates the preemptor (judged by one member: its members are judged alike); else as
    proposed, which the scheduler cannot take (`ACROSS_NODES`)."""
    tolerating = [(group, member) for group, member in groups if exempt(member)]
    names = ", ".join(group.ref for group, _ in (tolerating or groups))
    if tolerating:
        return NodeOutcome(
            node,
            NodeChoice.DROPPED,
            (),
            tuple(_name(member) for _, member in tolerating),
            f"PodGroup {names} (disruptionMode all, members on other nodes too) tolerates the preemptor",
            held_until=exempt.earliest_end([member for _, member in tolerating]),
        )
    return NodeOutcome(
        node,
        NodeChoice.ACROSS_NODES,
        tuple(uids),
        detail=f"PodGroup {names} (disruptionMode all) has members on other nodes, which the scheduler cannot take "
        "from the answer: it preempts as it chose, and the guard judges each member",
    )


def _budget_split(view: ClusterView) -> BudgetSplit:
    return lambda pods: split_by_budget_violation(pods, view.budgets)


def _upstream_victims(
    node: str,
    node_object: NodeRecord,
    on_node: Mapping[str, SlimPod],
    preemptor: _Preemptor,
    exempt: ExemptionCheck,
    view: ClusterView,
) -> NodeVictims | None:
    """Upstream's victims on the node (`victims.select_victims`), pods nominated there counted. A member of a
    `disruptionMode: all` group is never among them: a choice pod by pod could take its group in part."""
    return select_victims(
        preemptor.priority,
        preemptor.requests,
        on_node.values(),
        [pod for pod in view.pods.nominated_to(node) if pod.uid != preemptor.uid],
        node_object.allocatable,
        lambda pod: exempt(pod) or _whole_group(pod, view) is not None,
        _budget_split(view),
    )


def _unproposed_exemptions(
    node: str,
    uids: list[str],
    proposed: list[SlimPod | None],
    on_node: Mapping[str, SlimPod],
    preemptor: _Preemptor,
    exempt: ExemptionCheck,
    view: ClusterView,
) -> NodeOutcome:
    """No proposed victim is exempt. Then the scheduler's victims are upstream's too (resource fit only grows
    with fewer pods, so a pod it reprieved with an exempt pod gone also fits with it there), except where an
    exempt pod counts against a PodDisruptionBudget: the dry run spent a disruption on it that upstream's
    does not, which changes the count and can change the victims. Then choose again, or, for a preemptor
    the project cannot judge exactly, count again."""
    lower = [pod for pod in on_node.values() if pod.priority < preemptor.priority and pod.deletion is None]
    if not any(exempt(pod) for pod in view.budgets.counted(lower)):
        return NodeOutcome(node, NodeChoice.UNCHANGED, tuple(uids))
    split = _budget_split(view)
    node_object = view.nodes.get(node)
    if not preemptor.unjudged and node_object is not None:
        chosen = _upstream_victims(node, node_object, on_node, preemptor, exempt, view)
        # None: the resources disagree with the scheduler's own fit; its victims stand, counted again
        if chosen is not None:
            chosen_uids = tuple(pod.uid for pod in chosen.victims)
            same = set(chosen_uids) == set(uids)
            return NodeOutcome(
                node,
                NodeChoice.RECOUNTED if same else NodeChoice.REPLACED,
                chosen_uids,
                pdb_violations=chosen.num_pdb_violations,
                detail="" if same else "chosen again: the pods that tolerate the preemptor use none of its budgets",
            )
    victims = [pod for pod in proposed if pod is not None]
    violations = count_violations(victims, potential_victims(preemptor.priority, lower, exempt), split)
    return NodeOutcome(node, NodeChoice.RECOUNTED, tuple(uids), pdb_violations=violations)


def decide_preemption(args: ExtenderPreemptionArgs, view: ClusterView, now: datetime) -> PreemptDecision:
    exempt = ExemptionCheck(PodJson(args.pod), view, now)
    preemptor = _Preemptor.of(args.pod)
    proposals = args.victim_uids()
    outcomes = tuple(_node_outcome(node, uids, preemptor, exempt, view) for node, (uids, _) in proposals.items())
    result = ExtenderPreemptionResult()
    for outcome in outcomes:
        if not outcome.victims:
            continue  # an empty list is an error to the scheduler: the node is left out instead
        violations = proposals[outcome.node][1] if outcome.pdb_violations is None else outcome.pdb_violations
        result.node_name_to_meta_victims[outcome.node] = MetaVictims(
            Pods=[MetaPod(UID=uid) for uid in outcome.victims], NumPDBViolations=violations
        )
    return PreemptDecision(result, outcomes)
