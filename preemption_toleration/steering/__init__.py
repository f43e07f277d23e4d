"""Steering (pure): on a cluster whose scheduler calls no extender, the preemption upstream's plugin would
make for a preemptor whose scheduler's choice the guard refused: which pod, which node, which victims
(`plan`, `pacing`, `recheck`, `resumption`). Its adapter, which carries the plan out, is `steering.adapter`.
"""
