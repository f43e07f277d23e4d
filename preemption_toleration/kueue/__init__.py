"""Kueue (pure): where Kueue, not the scheduler, preempts whole Workloads, the contract held by Kueue's own
search (docs/contract.md, "Kueue"): a protected Workload's effective priority raised to its minimum − 1
(`boost`), what to write on each Workload (`plan`), the pending Workloads to try again when a boost falls
(`nudge`), and its preemption as its status write shows it, which a backstop will judge (`eviction`). Its
adapter (`kueue.adapter`) watches the Workloads and writes the boost.
"""
