"""The eviction guard (architecture §5): refuses pod deletions, evictions and DisruptionTarget marks that would
preempt a pod whose toleration protects it from that preemptor.

`matching` (scheduling compatibility) and `inference` (who is the preemptor) and `decisions` are pure;
`caches` and the webhook server's guard endpoint are the adapters.
"""
