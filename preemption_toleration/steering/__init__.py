"""Steering (pure): on a cluster whose scheduler calls no extender, the preemption upstream's plugin would
make for a preemptor whose scheduler's choice the guard refused: which pod, which node, which victims."""
