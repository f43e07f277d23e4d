"""The webhooks' view of the cluster: PriorityClasses and policies (and for the guard, pods, nodes and,
where the API server serves them, PodGroups), from watches, never from a request."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import NamedTuple

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.admission.decisions import Needs
from preemption_toleration.api.policy import PLURAL
from preemption_toleration.api.resources import PRIORITY_CLASS_PLURAL
from preemption_toleration.core.quantities import LATEST_RULES, ResizeRules
from preemption_toleration.guard.memory import GuardMemory
from preemption_toleration.inventory.budgets import BudgetIndex
from preemption_toleration.inventory.labels import LabelIndex
from preemption_toleration.inventory.ownership import PolicyIndex
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.preemptors import PreemptorRecord
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.kube import listers
from preemption_toleration.kube.informer import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_STALE_AFTER_SECONDS,
    CacheStats,
    DictStore,
    Informer,
)
from preemption_toleration.records.node import NodeRecord, node_record
from preemption_toleration.records.pod_group import PodGroupRecord, group_ref_of, pod_group_record
from preemption_toleration.records.policy import PolicyView, policy_view
from preemption_toleration.records.priority_class import ClassView, class_view

# Only a pod that names a PodGroup asks, and the API server keeps that field only where it serves them.
NOT_SERVED = "podgroups: not served when this server started (restart it after turning GenericWorkload on)"


class _PolicyState(NamedTuple):
    classes: Mapping[str, ClassView]
    policies: Mapping[str, PolicyView]
    ownership: PolicyIndex
    labels: LabelIndex


class AdmissionCaches:
    """Classes and policies for every webhook; with `guard`, also the pod index, node records and the
    PodDisruptionBudgets (which the extender reads), all read through one `ClusterView`."""

    def __init__(
        self,
        api: ApiClient,
        logger: logging.Logger,
        guard: bool = False,
        page_size: int = DEFAULT_PAGE_SIZE,
        stale_after: float = DEFAULT_STALE_AFTER_SECONDS,
        rules: ResizeRules = LATEST_RULES,
        pod_groups: bool = False,
        jobs: bool = False,
    ) -> None:
        self.stale_after = stale_after
        core = client.CoreV1Api(api)
        self.pod_index = PodIndex(rules, jobs=jobs)  # `jobs`: each Job's pods indexed (Kueue's boost)
        self.node_store: DictStore[NodeRecord] = DictStore(node_record)
        self.budget_index = BudgetIndex()
        self.preemptors = PreemptorRecord()  # written by the extender's calls, read by the guard
        self.guard_memory = GuardMemory(preemptors=self.preemptors)  # the guard's, kept between its requests
        self.class_store: DictStore[ClassView] = DictStore(class_view)
        self.policy_store: DictStore[PolicyView] = DictStore(policy_view)
        self.group_store: DictStore[PodGroupRecord] = DictStore(pod_group_record, group_ref_of)
        self.pods: Informer | None = None
        self.nodes: Informer | None = None
        self.budgets: Informer | None = None
        self.groups: Informer | None = None  # with `guard` and `pod_groups`: the API server serves them
        if guard:
            self.pods = Informer("pods", core.list_pod_for_all_namespaces, self.pod_index, logger, page_size=page_size)
            self.nodes = Informer("nodes", core.list_node, self.node_store, logger, page_size=page_size)
            self.budgets = Informer(
                "poddisruptionbudgets",
                listers.pod_disruption_budgets(api),
                self.budget_index,
                logger,
                page_size=page_size,
            )
            if pod_groups:
                self.groups = Informer(
                    "podgroups", listers.pod_groups(api), self.group_store, logger, page_size=page_size
                )
        self.classes = Informer(
            PRIORITY_CLASS_PLURAL,
            listers.priority_classes(api),
            self.class_store,
            logger,
            self._changed,
            page_size=page_size,
        )
        self.policies = Informer(
            PLURAL, listers.policies(api), self.policy_store, logger, self._changed, page_size=page_size
        )
        self._policies: _PolicyState | None = None  # built again on a change of the classes or policies
        self._view: ClusterView | None = None  # the last view made (`view`)
        # What each kind of decision reads, listed once: `problems` is asked on every request. PodGroups are
        # not among "all": only a request about a pod that names one needs them (`ClusterView.groups_problem`).
        apart = (self.budgets, self.groups)
        self._needed: dict[Needs, list[Informer]] = {
            "admission": [self.classes, self.policies],
            "all": [informer for informer in self.informers() if informer not in apart],
        }

    def _changed(self) -> None:
        self._policies = None

    def informers(self) -> list[Informer]:
        informers = (self.classes, self.policies, self.pods, self.nodes, self.budgets, self.groups)
        return [informer for informer in informers if informer is not None]

    def stats(self) -> list[CacheStats]:
        return [informer.stats() for informer in self.informers()]

    def required(self) -> list[Informer]:
        """The caches every decision needs. PodDisruptionBudgets are not among them: only the extender
        reads them, and until they are listed it counts no budget (a missing permission for them, say after
        an upgrade of the image alone, must not take the admission webhooks and the guard down). Nor are
        PodGroups, for the same reason: until they are listed, a decision about a pod that names one is not
        made (`groups_problem`), and every other decision is."""
        return list(self._needed["all"])

    def generation(self) -> int:
        """A number that changes whenever any cache does (steering plans again only then)."""
        return sum(informer.changes for informer in self.informers())

    @property
    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.required())

    def problems(self, needs: Needs) -> list[str]:
        """Why the caches a decision needs may not be decided from (empty: they may): not listed yet, or
        no successful list or watch for longer than `stale_after` seconds. The PriorityClass and policy
        webhooks need only classes and policies; the guard, the extender and /readyz need every cache."""
        return [
            problem for informer in self._needed[needs] if (problem := informer.health(self.stale_after)) is not None
        ]

    def view(self) -> ClusterView:
        """The one view every decision over the cluster reads: the live indexes (a decision runs without
        awaiting, so nothing changes under it). Asked on every request: the view of the last one is given again
        while it is of the same indexes."""
        state = self._policies or self._policy_state()
        problem = self.groups_problem()
        nodes, groups = self.node_store.items, self.group_store.items
        kept = self._view
        if (
            kept is not None
            and kept.classes is state.classes
            and kept.nodes is nodes
            and kept.groups is groups
            and kept.groups_problem == problem
            and kept.pods is self.pod_index
            and kept.budgets is self.budget_index
        ):
            return kept
        self._view = ClusterView(
            pods=self.pod_index,
            nodes=nodes,
            classes=state.classes,
            budgets=self.budget_index,
            policies=state.policies,
            ownership=state.ownership,
            labels=state.labels,
            groups=groups,
            groups_problem=problem,
        )
        return self._view

    def groups_problem(self) -> str | None:
        """Why a pod's PodGroup may not be read from the cache (None: it may)."""
        if self.groups is None:
            return NOT_SERVED
        return self.groups.health(self.stale_after)

    def _policy_state(self) -> _PolicyState:
        """The classes and policies as of now, and their indexes: built once per change, never per request."""
        classes, policies = dict(self.class_store.items), dict(self.policy_store.items)
        self._policies = _PolicyState(classes, policies, PolicyIndex(policies.values()), LabelIndex(classes))
        return self._policies

    def tasks(self) -> list[asyncio.Task[None]]:
        return [asyncio.create_task(informer.run(), name=f"watch-{informer.kind}") for informer in self.informers()]
