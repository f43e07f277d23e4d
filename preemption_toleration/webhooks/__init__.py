"""The webhook server's adapters: `server` (the aiohttp app, routing, health, readiness, metrics and the
admission endpoints' wiring), `guard_endpoint` and `extender_endpoint` (the guard's and the scheduler
extender's request handling) and `handling` (what they share); the watch caches they decide from, TLS,
Events, expiry nudges, steering (`steerer`, its Lease protocol `steering_leases`), work done every so often
(`periodic`), the `registration` of the webhook configurations (built by `manifests`), and
`runner`, the composition root, with a module per job it wires: `settings`, `certificates`,
`self_registration`, `draining`, `heap` and `metrics_site`. The decisions they serve are pure: `admission`,
`guard` and `extender`."""
