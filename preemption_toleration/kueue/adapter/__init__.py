"""Kueue's adapter: the Workloads' watch and cache (`workloads`), the boost's writes on them (`writes`) and the
worker that plans each Workload and writes what its plan says (`booster`), assembled for the server by `worker`."""
