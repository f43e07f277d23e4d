"""Steering's adapter: the worker that plans and acts for a refused preemption (`steerer`), the scheduler's
writes it makes on pods (`pod_writes`), clearing a blocking nomination (`clearing`), this replica's memory
of its actions (`record`) and the other replicas', read from their Leases (`replicas`), what it tells
(`reports`), the start-up's look at the Leases left acting (`resume`), and its Lease protocol, one action
per preemptor per window whichever replica acts (`steering_leases`)."""
