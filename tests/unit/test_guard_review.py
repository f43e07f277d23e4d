"""The guard's body reader: a review the API server sends is read in one pass into the guard's record, with the
fields the guard reads and their types; any other JSON is read leniently, the fields the guard reads kept as the
JSON has them and the rest left out; a body that is not JSON is refused with `from_json`'s message."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_core import from_json

from preemption_toleration.api.admission import AdmissionReview
from preemption_toleration.api.guard_review import read_review_leniently
from preemption_toleration.api.pod import VICTIM_KEYS
from preemption_toleration.guard.request import GuardRequest, guard_request, read_guard_request

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

CHECKED_READ = {  # READ as the one pass keeps it: of a condition, only the keys the guard reads
    **READ,
    "status": {**READ["status"], "conditions": [{"type": "PodScheduled", "status": "True"}]},
}

KEPT = [
    # (rule, body, what the guard gets)
    (
        "a victim keeps the fields the guard reads; managedFields, containers and their status are left out",
        review({**REQUEST, "uid": 1}),
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                **{key: value for key, value in REQUEST.items() if key not in ("requestKind", "options")},
                "uid": 1,
                "oldObject": READ,
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
def test_read_leniently_the_guard_gets_the_fields_it_reads(rule: str, body: bytes, expected: Any) -> None:
    assert read_review_leniently(body) == expected, rule
    assert read_guard_request(body) == expected, rule


def test_a_review_the_api_server_sends_is_read_into_the_guards_record() -> None:
    request = read_guard_request(review(REQUEST))
    assert isinstance(request, GuardRequest)
    assert request.old_object == CHECKED_READ
    assert (request.api_version, request.uid, request.operation, request.user, request.dry_run) == (
        "admission.k8s.io/v1",
        "u-1",
        "DELETE",
        "system:kube-scheduler",
        False,
    )


def fields(request: GuardRequest) -> dict[str, Any]:
    return {name: getattr(request, name) for name in GuardRequest.__slots__}


AS_READ_WHOLE = [
    ("a DELETE as the API server sends it", REQUEST),
    (
        "fields it may leave out: the model's defaults",
        {key: REQUEST[key] for key in ("uid", "kind", "resource", "operation")},
    ),
    (
        "a group, a subresource, a dry run",
        {**REQUEST, "resource": {**REQUEST["resource"], "group": "g"}, "subResource": "status", "dryRun": True},
    ),
    (
        "keys by their Python names",
        {**{key: REQUEST[key] for key in ("uid", "kind", "resource", "operation")}, "user_info": {}, "dry_run": None},
    ),
    ("both spellings: the alias counts", {**REQUEST, "sub_resource": "status", "subResource": "eviction"}),
]


@pytest.mark.parametrize(("rule", "request_"), AS_READ_WHOLE, ids=[case[0] for case in AS_READ_WHOLE])
def test_the_record_read_in_one_pass_is_the_record_of_the_review_read_whole(rule: str, request_: Any) -> None:
    """The one pass reads the review model's fields with its types and defaults: the record is the one of the
    review read whole and checked, but for the pods' fields the guard does not read."""
    body = review(request_)
    request = read_guard_request(body)
    assert isinstance(request, GuardRequest), rule
    whole = guard_request(AdmissionReview.model_validate_json(body))
    assert {**fields(request), "old_object": None} == {**fields(whole), "old_object": None}, rule
    assert (request.old_object is None) is (whole.old_object is None), rule


NOT_READ_IN_ONE_PASS = [
    ("a priority of the wrong type", {**REQUEST, "oldObject": {"spec": {"priority": "8000"}}}),
    ("a priority beyond int32", {**REQUEST, "oldObject": {"spec": {"priority": 2**31}}}),
    ("a time that is not RFC 3339", {**REQUEST, "oldObject": {"metadata": {"creationTimestamp": "today"}}}),
    ("a condition's message that is not a string", {**REQUEST, "object": {"status": {"conditions": [{"message": 1}]}}}),
    ("an object that is not an object", {**REQUEST, "object": "text"}),
    ("an empty uid", {**REQUEST, "uid": ""}),
    ("an operation the model does not know", {**REQUEST, "operation": "PATCH"}),
    ("no resource", {key: value for key, value in REQUEST.items() if key != "resource"}),
    ("a user name that is not a string", {**REQUEST, "userInfo": {"username": 7}}),
]


@pytest.mark.parametrize(("rule", "request_"), NOT_READ_IN_ONE_PASS, ids=[case[0] for case in NOT_READ_IN_ONE_PASS])
def test_a_review_with_a_field_of_the_wrong_type_is_read_leniently(rule: str, request_: Any) -> None:
    """Not the guard's record: its JSON, for the fast path and the checks to say what is wrong."""
    body = review(request_)
    assert read_guard_request(body) == read_review_leniently(body), rule


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
        read_guard_request(body)
    assert str(guard.value) == str(full.value), rule
