"""The `extenders` entry of a KubeSchedulerConfiguration that sends preemptions to our server (config/scheduler
holds it in a whole file; `ptol run`, the demo and the tests give it to a real kube-scheduler)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preemption_toleration.api.paths import EXTENDER_PREFIX, GUARD_PATH

EXTENDER_TIMEOUT = "2s"


def scheduler_extender(
    url_prefix: str,
    ca_data: str,
    server_name: str | None = None,
    client_certificate: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The entry for the server at `url_prefix`. `ca_data`: the base64 CA bundle; `client_certificate`: the
    base64 certificate and key kube-scheduler presents (its own), which the server requires.

    ignorable: an extender outage lets the scheduler go on with its own victims (the guard still judges
    them); nodeCacheCapable: victims travel as UIDs, since the server keeps its own pod cache."""
    tls: dict[str, Any] = {"caData": ca_data}
    if server_name:
        tls["serverName"] = server_name
    if client_certificate is not None:
        tls["certData"], tls["keyData"] = client_certificate
    return {
        "urlPrefix": url_prefix,
        "preemptVerb": "preempt",
        "nodeCacheCapable": True,
        "enableHTTPS": True,
        "tlsConfig": tls,
        "httpTimeout": EXTENDER_TIMEOUT,
        "ignorable": True,
    }


def scheduler_extender_of(guard: Mapping[str, Any]) -> dict[str, Any]:
    """The extender entry for the server a URL-registered guard configuration (`ptol run`) calls."""
    client_config = guard["webhooks"][0]["clientConfig"]
    base = str(client_config["url"]).rsplit(GUARD_PATH, 1)[0]
    return scheduler_extender(base + EXTENDER_PREFIX, str(client_config["caBundle"]))
