"""What the decisions know of the cluster: the indexes they read (pods by key and by node, pending
preemptor candidates by priority; PodDisruptionBudgets; which policy governs a class; the preemptors the
extender named), and `view.ClusterView`, the one view over them the guard, the extender and steering read.
Pure: the watches that feed them live in `webhooks.caches`.
"""
