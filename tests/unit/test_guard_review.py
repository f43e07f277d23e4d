"""The guard's body reader: a review is read once, strictly, into the guard's record, with the fields the guard
reads of its pods and their types; any other body is refused with what the whole AdmissionReview model, or
the check of a pod's fields the guard reads, would say of it."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest

from preemption_toleration.api.admission import AdmissionReview
from preemption_toleration.api.bodies import BadRequest, read_model
from preemption_toleration.api.pod import VictimFields
from preemption_toleration.guard.request import GuardRequest, read_guard_request
from tests.unit.guard_requests import fields, read_whole

# One value per key the guard reads of a pod (`VictimFields`).
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
    "spec": {
        "nodeName": "node-1",
        "priority": 8000,
        "priorityClassName": "low",
        "preemptionPolicy": "Never",
        "schedulingGroup": {"podGroupName": "trainers"},
    },
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


def test_the_read_keys_are_every_key_the_victims_fields_have() -> None:
    sections = typing.get_type_hints(VictimFields)
    assert set(READ) == set(sections)
    for section, values in READ.items():
        [typed] = [arg for arg in sections[section].__args__ if arg is not type(None)]
        assert set(values) == set(typed.__optional_keys__), section


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
    review read whole and its pods' fields checked."""
    body = review(request_)
    assert fields(read_guard_request(body)) == fields(read_whole(body)), rule


REFUSED = [
    # (rule, request, the 400's message)
    (
        "a priority of the wrong type",
        {**REQUEST, "oldObject": {"spec": {"priority": "8000"}}},
        "request.oldObject.spec.priority: should be an integer",
    ),
    (
        "a priority beyond int32",
        {**REQUEST, "oldObject": {"spec": {"priority": 2**31}}},
        "request.oldObject.spec.priority: Input should be less than or equal to 2147483647",
    ),
    (
        "a time that is not RFC 3339",
        {**REQUEST, "oldObject": {"metadata": {"creationTimestamp": "today"}}},
        "request.oldObject.metadata.creationTimestamp: Value error, Invalid isoformat string: 'today'",
    ),
    (
        "a condition's message that is not a string",
        {**REQUEST, "object": {"status": {"conditions": [{"message": 1}]}}},
        "request.object.status.conditions.0.message: should be a string",
    ),
    (
        "two of one pod's fields: the first, and how many more",
        {**REQUEST, "oldObject": {"spec": {"priority": "x", "nodeName": 1}}},
        "request.oldObject.spec.nodeName: should be a string (and 1 more)",
    ),
    (
        "an Eviction's metadata that is not an object",
        {**REQUEST, "operation": "CREATE", "subResource": "eviction", "object": {"metadata": [1]}},
        "request.object.metadata: should be an object",
    ),
    (
        "an object that is not an object: the review's problem",
        {**REQUEST, "object": "text"},
        "request body is not an AdmissionReview: request.object: should be an object",
    ),
    (
        "an empty uid",
        {**REQUEST, "uid": ""},
        "request body is not an AdmissionReview: request.uid: String should have at least 1 character",
    ),
    (
        "an operation the model does not know",
        {**REQUEST, "operation": "PATCH"},
        "request body is not an AdmissionReview: request.operation: "
        "Input should be 'CREATE', 'UPDATE', 'DELETE' or 'CONNECT'",
    ),
    (
        "no resource",
        {key: value for key, value in REQUEST.items() if key != "resource"},
        "request body is not an AdmissionReview: request.resource: Field required",
    ),
    (
        "a user name that is not a string",
        {**REQUEST, "userInfo": {"username": 7}},
        "request body is not an AdmissionReview: request.userInfo.username: should be a string",
    ),
    (
        "the review's problems come before a pod's, and only they are counted",
        {**REQUEST, "uid": "", "operation": "PATCH", "oldObject": {"spec": {"priority": "x"}}},
        "request body is not an AdmissionReview: request.uid: String should have at least 1 character (and 1 more)",
    ),
]


@pytest.mark.parametrize(("rule", "request_", "message"), REFUSED, ids=[case[0] for case in REFUSED])
def test_a_review_with_a_field_of_the_wrong_type_is_refused_as_read_whole(
    rule: str, request_: Any, message: str
) -> None:
    """The 400's words are those of the review read whole and its pods checked, which name the field."""
    body = review(request_)
    with pytest.raises(BadRequest) as refused:
        read_guard_request(body)
    assert str(refused.value) == message, rule
    with pytest.raises(BadRequest) as whole:
        read_whole(body)
    assert str(whole.value) == message, rule


NOT_JSON = [
    ("empty", b""),
    ("cut short", b'{"request": {"oldObject": '),
    ("not UTF-8", b'{"request": "\xff\xfe"}'),
    (
        "nested deeper than 200 levels in a field the guard does not read",
        review({"options": {"a": [[[[[[]]]]]]}}).replace(b"[[[[[[]]]]]]", b"[" * 300 + b"]" * 300),
    ),
    ("trailing text", review({}) + b" x"),
    ("a JSON list", b'[{"request": {}}]'),
    ("a JSON string", b'"review"'),
]


@pytest.mark.parametrize(("rule", "body"), NOT_JSON, ids=[case[0] for case in NOT_JSON])
def test_a_body_that_is_no_json_object_is_refused_as_every_endpoint_refuses_it(rule: str, body: bytes) -> None:
    """With the words of the other endpoints' reading (`read_model`)."""
    with pytest.raises(BadRequest) as model:
        read_model(body, AdmissionReview.model_validate_json, "an AdmissionReview")
    with pytest.raises(BadRequest) as guard:
        read_guard_request(body)
    assert str(guard.value) == str(model.value), rule
    assert str(guard.value).startswith(("request body is not JSON: ", "request body is a JSON ")), rule
