"""Who a kubeconfig authenticates as, when the client certificate says it (CN = user name), and whether it may
act as another user (impersonation)."""

from __future__ import annotations

from cryptography import x509
from cryptography.x509.oid import NameOID
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

# A user of the local control plane's own operator (`ptol run`): its writes are told from an admin's.
RUN_OPERATOR_USER = "ptol-run:operator"
# The group it acts in: every right, as the admin that runs `ptol run` has (a local control plane only).
RUN_OPERATOR_GROUP = "system:masters"


def client_certificate_user(api: ApiClient) -> str | None:
    path = api.configuration.cert_file
    if not path:
        return None
    with open(path, "rb") as handle:
        certificate = x509.load_pem_x509_certificate(handle.read())
    names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else None


async def may_impersonate(api: ApiClient, user: str, group: str) -> bool:
    """Whether this kubeconfig's user may act as `user` in `group` (SelfSubjectAccessReviews)."""
    authorization = client.AuthorizationV1Api(api)
    for resource, name in (("users", user), ("groups", group)):
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "impersonate", "resource": resource, "name": name}},
        }
        answer = await authorization.create_self_subject_access_review(review)
        if not answer.status.allowed:
            return False
    return True


def impersonating(api: ApiClient, user: str, group: str) -> ApiClient:
    """`api`, whose every request acts as `user` in `group` (Kubernetes' impersonation headers)."""
    api.set_default_header("Impersonate-User", user)
    api.set_default_header("Impersonate-Group", group)
    return api
