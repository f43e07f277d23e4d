"""Another admission check of a cluster, as the tests need one: a ValidatingAdmissionPolicy that refuses some
requests, bound with Deny."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient


@contextlib.asynccontextmanager
async def refused_by_admission(
    api: ApiClient,
    name: str,
    rule: dict[str, Any],
    expression: str,
    message: str,
    selectors: dict[str, Any],
) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """A ValidatingAdmissionPolicy `name` (and its binding) refusing, with `message`, the requests `rule` (one
    resourceRule) and `selectors` (e.g. an objectSelector) match where `expression` is false; yields the
    function that removes it (the API server drops a removed policy a moment later), which the end calls too."""
    name = name[:63]
    admission = client.AdmissionregistrationV1Api(api)
    policy = {
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [rule], **selectors},
            "validations": [{"expression": expression, "message": message}],
        },
    }
    binding = {"metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}
    await admission.create_validating_admission_policy(policy)
    await admission.create_validating_admission_policy_binding(binding)
    removed = False

    async def remove() -> None:
        nonlocal removed
        if not removed:
            removed = True
            await admission.delete_validating_admission_policy_binding(name)
            await admission.delete_validating_admission_policy(name)

    try:
        yield remove
    finally:
        await remove()
