"""The guard's body reader: the fields the guard reads are kept as the JSON has them, the rest are left out,
and a body that is not JSON is refused with the same message as pydantic-core's `from_json`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_core import from_json

from preemption_toleration.api.guard_review import CheckedReview, read_guard_review
from preemption_toleration.api.pod import VICTIM_KEYS

# One value per key the guard reads of a pod; VICTIM_KEYS names them.
READ: dict[str, dict[str, Any]] = {
    "metadata": {
        "name": "victim",
        "namespace": "team",
        "uid": "uid-v",
        "labels": {"app": "trainer"},
        "annotations": {"note": "x"},
        "creationTimestamp": "2026-11-22T11:00:00Z",
        "deletionTimestamp": "2026-11-22T12:00:00Z",
    },
    "spec": {"nodeName": "node-1", "priority": 8000, "priorityClassName": "low", "preemptionPolicy": "Never"},
    "status": {
        "phase": "Running",
        "nominatedNodeName": "node-2",
        "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": None, "extra": [1]}],
    },
}
UNREAD: dict[str, dict[str, Any]] = {
    "metadata": {"managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}], "ownerReferences": []},
    "spec": {"containers": [{"name": "trainer", "resources": {"requests": {"cpu": "1"}}}], "tolerations": []},
    "status": {"containerStatuses": [{"name": "trainer", "ready": True}], "qosClass": "Burstable"},
}
FULL_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    **{section: {**READ[section], **UNREAD[section]} for section in READ},
}


def review(request: Any, **extra: Any) -> bytes:
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request, **extra}
    ).encode()


def test_the_read_keys_are_every_key_the_victims_check_reads() -> None:
    assert {section: set(values) for section, values in READ.items()} == {
        section: set(keys) for section, keys in VICTIM_KEYS.items()
    }


REQUEST = {
    "uid": "u-1",
    "kind": {"group": "", "version": "v1", "kind": "Pod"},
    "resource": {"group": "", "version": "v1", "resource": "pods"},
    "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
    "name": "victim",
    "namespace": "team",
    "operation": "DELETE",
    "userInfo": {"username": "system:kube-scheduler", "groups": ["system:authenticated"], "extra": {"a": ["b"]}},
    "object": None,
    "oldObject": FULL_POD,
    "dryRun": False,
    "options": {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"},
}

CHECKED_READ = {  # READ as the checked reading keeps it: of a condition, only the keys the guard reads
    **READ,
    "status": {**READ["status"], "conditions": [{"type": "PodScheduled", "status": "True"}]},
}

KEPT = [
    # (rule, body, what the guard gets)
    (
        "a victim keeps the fields the guard reads; managedFields, containers and their status are left out",
        review(REQUEST),
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                **{key: value for key, value in REQUEST.items() if key not in ("requestKind", "options")},
                "oldObject": CHECKED_READ,
            },
        },
    ),
    (
        "an Eviction in request.object keeps its metadata, annotations included",
        review(
            {
                "operation": "CREATE",
                "object": {
                    "kind": "Eviction",
                    "metadata": {"name": "v", "annotations": {"a": "b"}},
                    "deleteOptions": {},
                },
            }
        ),
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"operation": "CREATE", "object": {"metadata": {"name": "v", "annotations": {"a": "b"}}}},
        },
    ),
    (
        "keys the review model accepts by their Python names are kept too",
        review(
            {
                "sub_resource": "status",
                "user_info": {"username": "u"},
                "old_object": {"spec": {"priority": 1, "containers": []}},
            }
        ),
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "sub_resource": "status",
                "user_info": {"username": "u"},
                "old_object": {"spec": {"priority": 1}},
            },
        },
    ),
    (
        "a value of another JSON type where an object stands is kept as it is, for the checks to report",
        review({"object": "text", "oldObject": {"metadata": [1], "spec": 7, "status": None}}),
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"object": "text", "oldObject": {"metadata": [1], "spec": 7, "status": None}},
        },
    ),
    (
        "a request that is not an object is kept as it is",
        review([1, {"a": 2}]),
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": [1, {"a": 2}]},
    ),
    ("a body that is a JSON list is returned as one", b'[{"request": {}}]', [{"request": {}}]),
    (
        "integers of any size and duplicate keys read as from_json reads them",
        b'{"request": {"oldObject": {"spec": {"priority": 1, "priority": 123456789012345678901234567890}}}}',
        {"request": {"oldObject": {"spec": {"priority": 123456789012345678901234567890}}}},
    ),
]


@pytest.mark.parametrize(("rule", "body", "expected"), KEPT, ids=[case[0] for case in KEPT])
def test_the_guard_gets_the_fields_it_reads(rule: str, body: bytes, expected: Any) -> None:
    assert read_guard_review(body) == expected, rule


CHECKED = [
    # (rule, body, whether the fields the guard reads of its pods were type-checked in the reading)
    ("a scheduler's DELETE as the API server sends it", review(REQUEST), True),
    ("an Eviction with its metadata", review({"operation": "CREATE", "object": {"metadata": {"name": "v"}}}), True),
    ("a priority of the wrong type", review({"oldObject": {"spec": {"priority": "8000"}}}), False),
    ("a priority beyond int32", review({"oldObject": {"spec": {"priority": 2**31}}}), False),
    ("a time that is not RFC 3339", review({"oldObject": {"metadata": {"creationTimestamp": "today"}}}), False),
    (
        "a condition's message that is not a string",
        review({"object": {"status": {"conditions": [{"message": 1}]}}}),
        False,
    ),
    ("an object that is not an object", review({"object": "text"}), False),
    ("a request that is not an object", review([1]), False),
]


@pytest.mark.parametrize(("rule", "body", "checked"), CHECKED, ids=[case[0] for case in CHECKED])
def test_a_review_is_marked_checked_only_when_its_pods_read_fields_have_their_types(
    rule: str, body: bytes, checked: bool
) -> None:
    """A checked review skips `request_problem`; any other is read as it is, for it to say what is wrong."""
    assert isinstance(read_guard_review(body), CheckedReview) is checked, rule


NOT_JSON = [
    ("empty", b""),
    ("cut short", b'{"request": {"oldObject": '),
    ("not UTF-8", b'{"request": "\xff\xfe"}'),
    (
        "nested deeper than 200 levels in a field the guard does not read",
        review({"options": {"a": [[[[[[]]]]]]}}).replace(b"[[[[[[]]]]]]", b"[" * 300 + b"]" * 300),
    ),
    ("trailing text", review({}) + b" x"),
]


@pytest.mark.parametrize(("rule", "body"), NOT_JSON, ids=[case[0] for case in NOT_JSON])
def test_a_body_that_is_not_json_is_refused_with_the_parsers_message(rule: str, body: bytes) -> None:
    with pytest.raises(ValueError) as full:
        from_json(body)
    with pytest.raises(ValueError) as guard:
        read_guard_review(body)
    assert str(guard.value) == str(full.value), rule
