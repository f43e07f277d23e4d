"""The admission decisions, pure: a PriorityClass or policy AdmissionRequest and a snapshot of the caches in,
an AdmissionResponse out (the `validation` rules, a new class's policy annotations, policy conflicts). The
aiohttp adapter that serves them is `webhooks`."""
