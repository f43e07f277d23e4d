"""preemption-toleration: victim-side preemption policy for Kubernetes.

The toleration contract of the scheduler-plugins PreemptionToleration plugin, in Python:

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
