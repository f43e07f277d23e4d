"""Steering's adapter: the worker that carries a plan out with the scheduler's own writes (`steerer`) and
its Lease protocol, one action per preemptor per window whichever replica acts (`steering_leases`)."""
