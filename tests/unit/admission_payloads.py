"""AdmissionReview payloads as the API server sends them."""

from __future__ import annotations

from typing import Any

PC_RESOURCE = {"group": "scheduling.k8s.io", "version": "v1", "resource": "priorityclasses"}
PC_KIND = {"group": "scheduling.k8s.io", "version": "v1", "kind": "PriorityClass"}
PTP_RESOURCE = {"group": "preemption-toleration.dev", "version": "v1alpha1", "resource": "preemptiontolerationpolicies"}
PTP_KIND = {"group": "preemption-toleration.dev", "version": "v1alpha1", "kind": "PreemptionTolerationPolicy"}


def review(
    obj: dict[str, Any] | None,
    *,
    old: dict[str, Any] | None = None,
    operation: str = "CREATE",
    resource: dict[str, str] = PC_RESOURCE,
    kind: dict[str, str] = PC_KIND,
    user: str = "alice",
    api_version: str = "admission.k8s.io/v1",
    uid: str = "705ab4f5-6393-11e8-b7cc-42010a800002",
) -> dict[str, Any]:
    metadata = (obj or old or {}).get("metadata")
    name = metadata.get("name", "") if isinstance(metadata, dict) else ""
    return {
        "apiVersion": api_version,
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": kind,
            "resource": resource,
            "requestKind": kind,
            "requestResource": resource,
            "name": name,
            "operation": operation,
            "userInfo": {"username": user, "groups": ["system:authenticated"]},
            "object": obj,
            "oldObject": old,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }
