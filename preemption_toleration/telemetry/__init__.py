"""Every Prometheus metric, declared once (`declared`): its name, type, help and label values, which the
components' metrics objects are built from and `docs/metrics-reference.md` is generated from (`reference`).
Pure: the collectors are `collectors`' (prometheus_client)."""
