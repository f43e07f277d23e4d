"""The kopf operator: reconciles PreemptionTolerationPolicy objects into PriorityClass annotations and policy
statuses. `governance` plans; here are its watch caches, the reconcile (coalesced triggers, a periodic
resync), the writes, the kopf wiring and its supervision, its metrics, and `runner`."""
