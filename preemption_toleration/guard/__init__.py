"""The eviction guard's pure decisions (architecture §5): is a pod request a preemption (`prefilter`,
`decisions`, its records `verdicts`), who the preemptor is (`finding`, `inference`, `matching`; what the
extender named is `inventory.preemptors`), a victim group's one decision (`group_claims`, `memory`), which
refusals to report or hold (`repeats`), when to nudge a held-back preemptor (`nudges`), and deletions in
vain (`waste`). Its adapter is `guard.adapter` (the endpoint, the group Leases, the Events, the nudger), its
caches `webhooks.caches`.
"""
