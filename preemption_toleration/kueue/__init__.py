"""Kueue (pure): where Kueue, not the scheduler, preempts whole Workloads, the contract held by Kueue's own
search (docs/contract.md, "Kueue"): a protected Workload's effective priority raised to its minimum − 1
(`boost`). Its adapter, which will write the boost and watch Workloads, is not built yet (#57).
"""
