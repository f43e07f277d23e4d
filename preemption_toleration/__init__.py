"""preemption-toleration: victim-side preemption policy for Kubernetes (an operator, admission webhooks, an
eviction guard and a scheduler extender) over the upstream PreemptionToleration plugin's toleration
contract, whose checks are re-exported here:

    from preemption_toleration import exempted_from_preemption, PriorityClassNotFound
"""

from preemption_toleration.core.exemption import PriorityClassNotFound, exempted_from_preemption
from preemption_toleration.core.protection import Protection, ProtectionKind, protection_of

__all__ = [
    "PriorityClassNotFound",
    "Protection",
    "ProtectionKind",
    "exempted_from_preemption",
    "protection_of",
]
__version__ = "0.1.0"
