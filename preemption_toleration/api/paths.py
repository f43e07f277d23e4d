"""The URL paths the webhook server serves, which its configurations give the API server and scheduler."""

from __future__ import annotations

from preemption_toleration.api.policy import PLURAL

VALIDATE_PRIORITY_CLASSES_PATH = "/validate/priorityclasses"
MUTATE_PRIORITY_CLASSES_PATH = "/mutate/priorityclasses"
VALIDATE_POLICIES_PATH = f"/validate/{PLURAL}"
GUARD_PATH = "/guard/pods"
EXTENDER_PREFIX = "/extender"  # the scheduler appends "/" and the verb: /extender/preempt
EXTENDER_PREEMPT_PATH = f"{EXTENDER_PREFIX}/preempt"
KUEUE_WORKLOADS_PATH = "/kueue/workloads"  # a Workload's creation, held until the boosts it needs are written
