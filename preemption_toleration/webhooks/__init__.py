"""The webhook server: `server` (the aiohttp app, routing, health, readiness, metrics and the wiring of
each feature's endpoint), the watch caches every feature decides from, TLS (`tls`, `secret_tls`,
`certificates`), the `registration` of the webhook configurations (built by `manifests`), and `runner`, the
composition root, with a module per job it wires: `settings`, `self_registration`, `draining`, `heap` and
`metrics_site`. Each feature's decisions and adapter live in its own package: `admission`, `guard`,
`extender` and `steering`; what their adapters share with the server is `serving`."""
