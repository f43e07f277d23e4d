"""Kueue (pure): where Kueue, not the scheduler, preempts whole Workloads, the contract held by Kueue's own
search (docs/contract.md, "Kueue"): a protected Workload's effective priority raised to its minimum − 1
(`boost`), and its preemption as its status write shows it, which a backstop judges (`eviction`). Its adapter,
which will write the boost and watch Workloads, is not built yet (#57).
"""
