"""The eviction guard's pure decisions (architecture §5): is a pod request a preemption (`prefilter`,
`decisions`), who the preemptor is (`inference`, `record`, `matching`), which refusals to report or hold
(`repeats`), when to nudge a held-back preemptor (`nudges`). Its HTTP handling is `webhooks.guard_endpoint`,
its caches `webhooks.caches`.
"""
