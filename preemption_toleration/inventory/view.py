"""The one view of the caches every decision over the cluster reads: the admission decisions', the guard's,
the extender's and steering's plan."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from preemption_toleration.inventory.budgets import BudgetIndex
from preemption_toleration.inventory.labels import LabelIndex
from preemption_toleration.inventory.ownership import PolicyIndex
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.records.node import NodeRecord
from preemption_toleration.records.pod import PodRecord
from preemption_toleration.records.pod_group import MemberRecord, PodGroupRecord
from preemption_toleration.records.policy import PolicyView
from preemption_toleration.records.priority_class import ClassView


class GroupsNotCurrent(Exception):
    """A pod names a PodGroup and the PodGroup cache may not be decided from (not listed, silent, or PodGroups
    not served when the server started): judged as a lone pod, a member would be judged apart from its group,
    so no decision is made from it."""


# Built on every judged request: a plain slotted class builds about five times faster than a frozen
# dataclass (each field of one is set through object.__setattr__). Never mutated.
@dataclass(slots=True)
class ClusterView:
    """The live indexes of the webhook's caches: a decision runs without awaiting, so nothing changes under
    it."""

    pods: PodIndex = field(default_factory=PodIndex)
    nodes: Mapping[str, NodeRecord] = field(default_factory=dict)
    classes: Mapping[str, ClassView] = field(default_factory=dict)
    budgets: BudgetIndex = field(default_factory=BudgetIndex)
    policies: Mapping[str, PolicyView] = field(default_factory=dict)
    # who claims each class, and the classes by label: the caches build both once per change of the classes
    # or policies; a view made without them (tests, the CLI) builds them when asked
    ownership: PolicyIndex | None = None
    labels: LabelIndex | None = None
    groups: Mapping[str, PodGroupRecord] = field(default_factory=dict)  # PodGroups by "namespace/name"
    groups_problem: str | None = None  # why `groups` may not be decided from (None: it may)

    def ownership_index(self) -> PolicyIndex:
        return self.ownership if self.ownership is not None else PolicyIndex(self.policies.values())

    def label_index(self) -> LabelIndex:
        return self.labels if self.labels is not None else LabelIndex(self.classes)

    def group_of(self, pod: PodRecord) -> PodGroupRecord | None:
        """The PodGroup a pod names, when the cache has it (a pod whose group does not exist is judged as a
        pod); GroupsNotCurrent when it names one and the cache may not be decided from."""
        name = pod.pod_group
        if name is None:
            return None
        if self.groups_problem is not None:
            raise GroupsNotCurrent(self.groups_problem)
        return self.groups.get(f"{pod.key[0]}/{name}")

    def as_member(self, pod: PodRecord) -> PodRecord:
        """A victim as the contract judges it: as a member of its PodGroup, when it has one (`core.groups`)."""
        group = self.group_of(pod)
        if group is None:
            return pod
        return MemberRecord(pod, group, self.pods.members_of(group.key).scheduled_since())

    def owner(self, class_name: str) -> str | None:
        """The policy that governs a class (the oldest that claims it), read only for a refusal's message."""
        view = self.classes.get(class_name)
        governing = self.ownership_index().governing(view) if view is not None else None
        return governing.name if governing is not None else None
