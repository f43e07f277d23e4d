"""The operator's configuration: one declaration of each setting and its default, which `ptol operator`'s
and `ptol run`'s flags read (this module imports no kopf, so that the CLI can read it cheaply)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from preemption_toleration.records.priority_class import FIELD_MANAGER


@dataclass
class OperatorConfig:
    kubeconfig: str | None = None
    field_manager: str = FIELD_MANAGER
    resync_seconds: float = 60.0
    # unique per replica, so that exactly one is active: random unless set (replicas with equal ones all pause)
    peering_priority: int = field(default_factory=lambda: secrets.randbelow(10**9) + 1)
    # a pause before each reconcile, so that one `kubectl apply` of many policies shares it
    settle_seconds: float = 0.1
    # `ptol run`: the operator's own writes act as this user (kube/identity.py), whom the webhooks take for
    # the operator, so that an admin's hand edit made with the same kubeconfig is refused, not reverted
    impersonate: str | None = None
    # with Kueue: also govern Kueue's WorkloadPriorityClasses (policies of priorityClassKind WorkloadPriorityClass)
    kueue: bool = False


OPERATOR_DEFAULTS = OperatorConfig()  # read only: the defaults, for the flags and the docs' table
