"""Who a kubeconfig authenticates as, when the client certificate says it (CN = user name)."""

from __future__ import annotations

from cryptography import x509
from cryptography.x509.oid import NameOID
from kubernetes_asyncio.client import ApiClient


def client_certificate_user(api: ApiClient) -> str | None:
    path = api.configuration.cert_file
    if not path:
        return None
    with open(path, "rb") as handle:
        certificate = x509.load_pem_x509_certificate(handle.read())
    names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else None
