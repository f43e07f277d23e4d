"""The kopf operator: reconciles PreemptionTolerationPolicy objects into PriorityClass annotations.

Layers: `governance` (pure planning) <- `operator.writes` (async sends) <- `operator.reconciler`
(one serialized reconcile over the watch caches) <- `operator.handlers` (kopf wiring) <- `operator.runner`.
"""
