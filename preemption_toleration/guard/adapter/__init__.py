"""The guard's adapter: its endpoint's request handling (`guard_endpoint`), its group decisions settled
with the other replicas through Leases (`group_leases`), the Events of its refusals (`refusal_events`), the
groups the scheduler left in part (`partial_groups`) and the expiry nudge (`nudger`)."""
