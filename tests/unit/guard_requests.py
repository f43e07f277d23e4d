"""Requests the guard receives, in the shapes API servers send (older releases to current), each with whether it may be
a preemption and the rule that says so. One table for the prefilter, the matchConditions' CEL and `judge`.

Payloads are written as the API server serializes them: empty optional fields (subResource, reason,
message) are absent, not empty. The victim, pod team/victim, has PriorityClass low-non-preempted (protected
forever in tests/unit/test_guard.py's snapshot); the preemptor candidate there is team/high-1.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from preemption_toleration.api.admission import AdmissionResponse, AdmissionReview, answer_of
from preemption_toleration.api.base import first_error
from preemption_toleration.api.bodies import BadRequest, read_model
from preemption_toleration.api.pod import VictimFields
from preemption_toleration.core.annotations import LEGACY_PREFIX, PREEMPTOR, PREEMPTOR_PRIORITY
from preemption_toleration.guard.adapter.guard_endpoint import answer, read_pod_review
from preemption_toleration.guard.request import GuardRequest
from preemption_toleration.guard.verdicts import Verdict

SCHEDULER = "system:kube-scheduler"
KUBELET = "system:node:node-1"
USER = "alice"
REPLICASET_CONTROLLER = "system:serviceaccount:kube-system:replicaset-controller"
POD_KIND = {"group": "", "version": "v1", "kind": "Pod"}
POD_RESOURCE = {"group": "", "version": "v1", "resource": "pods"}
GROUPS = {
    SCHEDULER: ["system:authenticated"],
    KUBELET: ["system:nodes", "system:authenticated"],
    USER: ["developers", "system:authenticated"],
    REPLICASET_CONTROLLER: ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
}


@dataclass(frozen=True)
class Row:
    rule: str
    request: Any  # the `request` of an AdmissionReview, as JSON
    # may it be a preemption (the rule's and the CEL's answer); None: no request the guard reads (a 400)
    preemption: bool | None
    well_formed: bool = True  # a shape an API server sends (the CEL runs on these only)
    refused: bool = False  # judged against the protected victim, it is refused


def condition(kind: str, status: str = "True", reason: str | None = None, **fields: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "type": kind,
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": "2026-11-22T11:59:30Z",
        **fields,
    }
    if reason is not None:
        found["reason"] = reason
    return found


MARK = condition(
    "DisruptionTarget",
    reason="PreemptionByScheduler",
    message="default-scheduler: preempting to accommodate a higher priority pod",
)


def victim(*extra_conditions: dict[str, Any]) -> dict[str, Any]:
    """The bound, running, protected pod, as the API server stores it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "victim",
            "namespace": "team",
            "uid": "0c1b8a4e-4f43-4d6e-9a53-0a9f5d2c7e11",
            "resourceVersion": "4121",
            "creationTimestamp": "2026-11-22T11:59:00Z",
            "labels": {"app": "train"},
        },
        "spec": {
            "containers": [{"name": "c", "image": "pause", "resources": {}}],
            "nodeName": "node-1",
            "priorityClassName": "low-non-preempted",
            "priority": 8000,
            "preemptionPolicy": "PreemptLowerPriority",
            "schedulerName": "default-scheduler",
            "restartPolicy": "Always",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                condition("Initialized"),
                condition("Ready"),
                condition("ContainersReady"),
                condition("PodScheduled"),
                *extra_conditions,
            ],
            "podIP": "10.0.0.7",
            "startTime": "2026-11-22T11:59:30Z",
        },
    }


def eviction(version: str = "policy/v1", annotations: Any = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "victim", "namespace": "team", "creationTimestamp": None}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"kind": "Eviction", "apiVersion": version, "metadata": metadata, "deleteOptions": {}}


def request(
    operation: str, user: str, obj: Any = None, old: Any = None, sub_resource: str | None = None, **fields: Any
) -> dict[str, Any]:
    resource = POD_RESOURCE
    kind = POD_KIND
    options: dict[str, Any] = {"kind": f"{operation.title()}Options", "apiVersion": "meta.k8s.io/v1"}
    if sub_resource == "eviction":
        api_version = obj.get("apiVersion") if isinstance(obj, dict) else None
        kind = {"group": "policy", "version": str(api_version or "policy/v1").partition("/")[2], "kind": "Eviction"}
    if operation == "DELETE":
        options.update(propagationPolicy="Background", gracePeriodSeconds=0)
    built: dict[str, Any] = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": "victim",
        "namespace": "team",
        "operation": operation,
        "userInfo": {"username": user, "groups": GROUPS.get(user, ["system:authenticated"])},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": options,
    }
    if sub_resource is not None:
        built["subResource"] = sub_resource
        built["requestSubResource"] = sub_resource
    built.update(fields)
    return built


def with_status(pod: dict[str, Any], **status: Any) -> dict[str, Any]:
    changed = copy.deepcopy(pod)
    changed["status"].update(status)
    return changed


def unscheduled(pod: dict[str, Any]) -> dict[str, Any]:
    """The scheduler's status update of a pod it could not place (not a preemption)."""
    return with_status(
        pod,
        phase="Pending",
        conditions=[
            condition("PodScheduled", "False", "Unschedulable", message="0/1 nodes are available: 1 Insufficient cpu.")
        ],
        nominatedNodeName="node-1",
    )


def status_update(user: str, new: Any, old: Any, **fields: Any) -> dict[str, Any]:
    return request("UPDATE", user, new, old, "status", **fields)


def evict(annotations: Any, version: str = "policy/v1", user: str = USER) -> dict[str, Any]:
    return request("CREATE", user, eviction(version, annotations), None, "eviction")


def delete(user: str, old: Any = None, **fields: Any) -> dict[str, Any]:
    return request("DELETE", user, None, victim() if old is None else old, **fields)


def drop(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k != key}


EVICTION_VERSIONS = ("policy/v1", "policy/v1beta1")

ROWS = [
    # Evictions name their preemptor by annotation, whoever sends them.
    # Both Eviction versions the API server serves name the preemptor alike, by its priority or by the pod.
    *(
        Row(f"eviction {version} names {named}", evict(annotations, version), True, refused=True)
        for version in EVICTION_VERSIONS
        for named, annotations in [
            ("the preemptor's priority", {PREEMPTOR_PRIORITY: "9000"}),
            ("the preemptor pod", {PREEMPTOR: "team/high-1"}),
        ]
    ),
    Row("eviction names both", evict({PREEMPTOR: "team/high-1", PREEMPTOR_PRIORITY: "9000"}), True, refused=True),
    Row(
        "eviction with a priority that does not parse is judged (and says why)", evict({PREEMPTOR_PRIORITY: "9k"}), True
    ),
    Row(
        "eviction by the scheduler identity with the annotation",
        evict({PREEMPTOR_PRIORITY: "9000"}, user=SCHEDULER),
        True,
        refused=True,
    ),
    Row("eviction without annotations is a drain", evict(None), False),
    Row("eviction with empty annotations is a drain", evict({}), False),
    Row("eviction with other annotations is a drain", evict({"kubectl.kubernetes.io/drain": "node-1"}), False),
    Row("eviction with the legacy prefix is a drain", evict({LEGACY_PREFIX + "preemptor-priority": "9000"}), False),
    Row("eviction by the scheduler identity without the annotation is a drain", evict(None, user=SCHEDULER), False),
    Row("eviction policy/v1beta1 without annotations is a drain", evict(None, "policy/v1beta1"), False),
    # Deletions are preemptions only by a preemptor identity.
    Row("delete by the scheduler (preemption)", delete(SCHEDULER), True, refused=True),
    Row("delete by the scheduler, dry run", delete(SCHEDULER, dryRun=True), True, refused=True),
    Row(
        "delete by the scheduler of a marked pod (1.26+ preemption)",
        delete(SCHEDULER, victim(MARK)),
        True,
        refused=True,
    ),
    Row("delete by the scheduler with an empty subResource", delete(SCHEDULER, subResource=""), True, refused=True),
    Row("delete by a user", delete(USER), False),
    Row("delete by a controller", delete(REPLICASET_CONTROLLER), False),
    Row("delete by the kubelet", delete(KUBELET), False),
    Row("delete by a user of a marked pod", delete(USER, victim(MARK)), False),
    # Status updates are preemptions when a preemptor identity newly marks the pod.
    Row(
        "scheduler marks the pod DisruptionTarget (1.26+)",
        status_update(SCHEDULER, victim(MARK), victim()),
        True,
        refused=True,
    ),
    Row(
        "scheduler marks a pod whose status had no conditions key",
        status_update(
            SCHEDULER, with_status(victim(), conditions=[MARK]), {**victim(), "status": {"phase": "Running"}}
        ),
        True,
        refused=True,
    ),
    Row(
        "status update by the kubelet", status_update(KUBELET, with_status(victim(), podIP="10.0.0.8"), victim()), False
    ),
    Row("kubelet status update that carries the mark", status_update(KUBELET, victim(MARK), victim()), False),
    Row(
        "scheduler status update without the mark (unschedulable)",
        status_update(SCHEDULER, unscheduled(victim()), victim()),
        False,
    ),
    Row("scheduler status update of a pod already marked", status_update(SCHEDULER, victim(MARK), victim(MARK)), False),
    Row(
        "scheduler sets DisruptionTarget with another reason",
        status_update(SCHEDULER, victim(condition("DisruptionTarget", reason="DeletionByTaintManager")), victim()),
        False,
    ),
    Row(
        "scheduler sets DisruptionTarget False",
        status_update(SCHEDULER, victim(condition("DisruptionTarget", "False", "PreemptionByScheduler")), victim()),
        False,
    ),
    Row(
        "scheduler sets DisruptionTarget without a reason",
        status_update(SCHEDULER, victim(condition("DisruptionTarget")), victim()),
        False,
    ),
    Row(
        "controller marks the pod like the scheduler",
        status_update(REPLICASET_CONTROLLER, victim(MARK), victim()),
        False,
    ),
    # What the rules do not send, should it come.
    Row("update of the pod itself by the scheduler", request("UPDATE", SCHEDULER, victim(MARK), victim()), False),
    Row(
        "binding by the scheduler",
        request("CREATE", SCHEDULER, {"kind": "Binding", "apiVersion": "v1"}, None, "binding"),
        False,
    ),
    # Not what an API server sends: a field of the wrong type, or a CREATE or UPDATE without its object, is no
    # request the guard reads (None: a 400 that says what is wrong); an absent or null field reads as absent.
    Row("request is not an object", ["DELETE"], None, well_formed=False),
    Row("empty request", {}, None, well_formed=False),
    Row("operation missing", drop(delete(USER), "operation"), None, well_formed=False),
    Row("operation not a string", {**delete(USER), "operation": 1}, None, well_formed=False),
    Row("subResource not a string", {**evict(None), "subResource": ["eviction"]}, None, well_formed=False),
    Row(
        "userInfo not an object, on a delete",
        {**delete(SCHEDULER), "userInfo": "system:kube-scheduler"},
        None,
        well_formed=False,
    ),
    Row(
        "username not a string, on a delete",
        {**delete(SCHEDULER), "userInfo": {"username": ["x"]}},
        None,
        well_formed=False,
    ),
    Row("userInfo missing, on a delete: nobody", drop(delete(SCHEDULER), "userInfo"), False, well_formed=False),
    Row(
        "eviction metadata not an object",
        request("CREATE", USER, {**eviction(), "metadata": "victim"}, None, "eviction"),
        None,
        well_formed=False,
    ),
    Row("eviction annotations not an object", evict([PREEMPTOR_PRIORITY]), None, well_formed=False),
    Row("eviction object null", request("CREATE", USER, None, None, "eviction"), None, well_formed=False),
    Row(
        "eviction object not an object", request("CREATE", USER, "Eviction", None, "eviction"), None, well_formed=False
    ),
    Row(
        "scheduler status update whose conditions are not a list",
        status_update(SCHEDULER, with_status(victim(), conditions={"type": "DisruptionTarget"}), victim()),
        None,
        well_formed=False,
    ),
    Row(
        "scheduler status update with a condition that is not an object",
        status_update(SCHEDULER, with_status(victim(), conditions=["DisruptionTarget"]), victim()),
        None,
        well_formed=False,
    ),
    Row(
        "scheduler status update whose status is not an object",
        status_update(SCHEDULER, {**victim(), "status": "Running"}, victim()),
        None,
        well_formed=False,
    ),
    Row(
        "scheduler status update, new mark, old conditions unreadable",
        status_update(SCHEDULER, victim(MARK), with_status(victim(), conditions=[1])),
        None,
        well_formed=False,
    ),
    Row(
        "scheduler status update, unreadable new conditions, old already marked",
        status_update(SCHEDULER, with_status(victim(), conditions=[1]), victim(MARK)),
        None,
        well_formed=False,
    ),
    Row(
        "scheduler marks a pod whose conditions were null",
        status_update(SCHEDULER, with_status(victim(), conditions=[MARK]), with_status(victim(), conditions=None)),
        True,
        well_formed=False,
        refused=True,
    ),
    Row("scheduler status update, object null", status_update(SCHEDULER, None, victim()), None, well_formed=False),
    Row(
        "user status update with unreadable conditions",
        status_update(USER, with_status(victim(), conditions="x"), victim()),
        None,
        well_formed=False,
    ),
]


def answered(verdict: Verdict) -> AdmissionResponse:
    """What the client reads of a verdict: the AdmissionResponse of the guard's handler's verdict."""
    return answer_of("uid", answer(verdict))


def review_of(request: Any, api_version: str = "admission.k8s.io/v1") -> bytes:
    """The body of an AdmissionReview of `request`, as the API server sends it."""
    return json.dumps({"apiVersion": api_version, "kind": "AdmissionReview", "request": request}).encode()


def read_row(request: Any) -> GuardRequest:
    """The guard's record of `request`, read as its endpoint reads a review's body (BadRequest: a 400)."""
    return read_pod_review(review_of(request))


_VICTIM: TypeAdapter[VictimFields] = TypeAdapter(VictimFields)


def read_whole(body: bytes) -> GuardRequest:
    """The guard's record of a body read the slow way, as the oracle of its one-pass reader: the whole
    AdmissionReview model, then each pod's fields the guard reads (BadRequest with what is wrong)."""
    review = read_model(body, AdmissionReview.model_validate_json, "an AdmissionReview")
    request = review.request
    pods = []
    for pod, where in ((request.object, "request.object"), (request.old_object, "request.oldObject")):
        try:
            pods.append(None if pod is None else _VICTIM.validate_python(pod))
        except ValidationError as error:
            raise BadRequest(first_error(error, where)) from None
    return GuardRequest(
        review.api_version,
        request.uid,
        request.operation,
        (request.resource.group, request.resource.resource),
        request.sub_resource,
        request.name,
        request.namespace,
        request.user_info.username,
        request.dry_run,
        *pods,
    )


def fields(request: GuardRequest) -> dict[str, Any]:
    """Everything the record holds, to compare two records."""
    return {name: getattr(request, name) for name in GuardRequest.__slots__}
