"""The eviction guard's pure decisions (architecture §5): is a pod request a preemption (`prefilter`,
`decisions`), who the preemptor is (`inference`, `matching`; what the extender named is
`inventory.preemptors`), which refusals to report or hold (`repeats`), when to nudge a held-back preemptor
(`nudges`), and deletions in vain (`waste`). Its adapter is `guard.adapter` (the endpoint, the
group Leases, the Events, the nudger), its caches `webhooks.caches`.
"""
