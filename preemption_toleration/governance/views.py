"""The records of classes and policies under the names `operator/` and `ptol explain` import them by; they live in
`records` (#36 §1). Nothing else imports this module."""

from __future__ import annotations

from preemption_toleration.records.policy import PolicyView, policy_view
from preemption_toleration.records.priority_class import FIELD_MANAGER, ClassView, class_view

__all__ = ["FIELD_MANAGER", "ClassView", "PolicyView", "class_view", "policy_view"]
