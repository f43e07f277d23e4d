"""kopf credentials from the same kubernetes_asyncio configuration the rest of the project uses."""

from __future__ import annotations

import kopf
from kubernetes_asyncio.client import ApiClient


def connection_info(api: ApiClient) -> kopf.ConnectionInfo:
    configuration = api.configuration
    token = (configuration.api_key or {}).get("authorization") or (configuration.api_key or {}).get("BearerToken")
    scheme = None
    if token and " " in token:
        scheme, token = token.split(" ", 1)
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert or None,
        insecure=not configuration.verify_ssl,
        scheme=scheme or ("Bearer" if token else None),
        token=token or None,
        certificate_path=configuration.cert_file or None,
        private_key_path=configuration.key_file or None,
        default_namespace="default",
    )
