"""`ptol explain pod NAMESPACE/NAME` and `ptol explain priorityclass NAME`: read the cluster and say, in
plain words, which priorities may preempt it now, which are refused, and when each protection ends;
`ptol explain workload NAMESPACE/NAME`: what Kueue's boost makes of a Workload, and why one is not written."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import Any

from preemption_toleration.cli.failures import refused
from preemption_toleration.cli.options import KUBECONFIG
from preemption_toleration.cli.values import dns_label, non_empty
from preemption_toleration.core.explain import (
    Member,
    explain_class,
    explain_group,
    explain_pod,
    explain_preemptor,
    is_pending,
    render,
)
from preemption_toleration.core.groups import group_scheduled_since
from preemption_toleration.core.pods import group_name
from preemption_toleration.kueue.explain import render_workload


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="say who may preempt a pod or the pods of a class, and until when",
        description="Read the cluster and say, in plain words, which priorities may preempt a pod (or the pods "
        "of a PriorityClass) now, which are refused, until when, and which policy says so. Only reads.",
    )
    parser.add_argument(
        "kind",
        choices=["pod", "podgroup", "pg", "priorityclass", "pc", "workload", "wl"],
        help="pod, podgroup (pg; Kubernetes 1.37), priorityclass (pc), or workload (wl; Kueue's)",
    )
    parser.add_argument(
        "name",
        help="NAME of a class; NAMESPACE/NAME or NAME of a pod, PodGroup or Workload (namespace: -n, else the "
        "kubeconfig context's, else default)",
    )
    parser.add_argument(
        "-n", "--namespace", type=dns_label, metavar="NS", help="the pod's, PodGroup's or Workload's namespace"
    )
    parser.add_argument(
        "--context", type=non_empty, help="the kubeconfig context to use (default: its current-context)"
    )
    parser.add_argument(
        "-o", "--output", choices=["text", "json"], default="text", help="plain words or JSON facts (default text)"
    )
    KUBECONFIG.add_to(parser)
    parser.set_defaults(handler=run)


async def _governing_policy(api: Any, class_name: str) -> str | None:
    from kubernetes_asyncio import client
    from kubernetes_asyncio.client.exceptions import ApiException

    from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
    from preemption_toleration.governance.planner import plan
    from preemption_toleration.records.policy import policy_view
    from preemption_toleration.records.priority_class import class_view

    try:
        policies = await client.CustomObjectsApi(api).list_cluster_custom_object(GROUP, VERSION, PLURAL)
    except ApiException as error:
        if error.status == 404:
            return None  # the CRD is not installed: only annotations
        raise
    classes = api.sanitize_for_serialization(await client.SchedulingV1Api(api).list_priority_class())
    owners = plan(
        [policy_view(p) for p in policies.get("items") or []], [class_view(c) for c in classes.get("items") or []]
    ).owners
    return owners.get(class_name)


async def _as_preemptor(api: Any, pod: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A pending pod's facts as a preemptor: the pods on nodes, of every namespace, that tolerate it."""
    from kubernetes_asyncio import client
    from kubernetes_asyncio.client.exceptions import ApiException

    from preemption_toleration.kube.client import api_problem

    try:
        pods = await client.CoreV1Api(api).list_pod_for_all_namespaces(field_selector="spec.nodeName!=")
        classes = await client.SchedulingV1Api(api).list_priority_class()
    except ApiException as error:  # a user who may read one namespace: the rest of the answer stands
        listing = f"listing the pods of all namespaces was answered {api_problem(error)}"
        return {"pending": True, "toleratedByUnknown": listing}
    by_name = {c["metadata"]["name"]: c for c in api.sanitize_for_serialization(classes).get("items") or []}
    return explain_preemptor(pod, api.sanitize_for_serialization(pods).get("items") or [], by_name, now)


async def _explain(args: argparse.Namespace) -> dict[str, Any]:
    from kubernetes_asyncio import client

    from preemption_toleration.kube.client import make_api_client

    api = await make_api_client(args.kubeconfig, context=args.context)
    try:
        if args.kind == "pod":
            return await _explain_pod(api, args)
        if args.kind in ("podgroup", "pg"):
            return await _explain_group(api, args)
        if args.kind in ("workload", "wl"):
            return await _explain_workload(api, args)
        scheduling = client.SchedulingV1Api(api)
        priority_class = api.sanitize_for_serialization(await scheduling.read_priority_class(args.name))
        return explain_class(priority_class, await _governing_policy(api, args.name))
    finally:
        await api.close()


async def _explain_pod(api: Any, args: argparse.Namespace) -> dict[str, Any]:
    namespace, name = pod_key(args)
    pod = await _read_pod(api, namespace, name)
    named = group_name(pod.get("spec") or {})
    found = await _group(api, namespace, named, pod) if named else None
    member = found[0] if found is not None else None
    class_name = member.judged.priority_class if member else (pod.get("spec") or {}).get("priorityClassName")
    priority_class, policy = await _class_and_policy(api, args, class_name)
    now = datetime.now(UTC)
    facts = explain_pod(pod, priority_class, policy, now, member)
    if is_pending(pod):
        facts.update(await _as_preemptor(api, pod, now))
    return facts


async def _explain_group(api: Any, args: argparse.Namespace) -> dict[str, Any]:
    namespace, name = pod_key(args)
    found = await _group(api, namespace, name)
    if found is None:
        raise SystemExit(f"podgroup {namespace}/{name}: not found (or the API server serves no PodGroups)")
    judged, members = found
    priority_class, policy = await _class_and_policy(api, args, judged.judged.priority_class)
    now = datetime.now(UTC)
    return explain_group(judged.group, judged.disruption, members, priority_class, policy, now, judged)


async def _explain_workload(api: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The Workload's facts (`kueue.explain`): its class of either kind read for its toleration, and its Job's
    pods for when the last was scheduled."""
    from kubernetes_asyncio import client
    from kubernetes_asyncio.client.exceptions import ApiException

    from preemption_toleration.api.resources import KUEUE_GROUP, KUEUE_VERSION, WORKLOADS, ClassKind
    from preemption_toleration.core.pods import PodJson
    from preemption_toleration.inventory.pod_index import JOB_UID_LABEL
    from preemption_toleration.kube.client import answer_of
    from preemption_toleration.kueue.explain import TOLD, explain_workload
    from preemption_toleration.records.priority_class import class_view
    from preemption_toleration.records.workload import workload_record

    namespace, name = pod_key(args)
    custom = client.CustomObjectsApi(api)
    workload = workload_record(
        await custom.get_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, namespace, WORKLOADS, name)
    )
    toleration = None
    ref = workload.class_ref
    kind = ref.class_kind if ref is not None else None
    if ref is not None and kind is not None:
        try:
            if kind is ClassKind.PRIORITY_CLASS:
                found = api.sanitize_for_serialization(await client.SchedulingV1Api(api).read_priority_class(ref.name))
            else:
                found = await custom.get_cluster_custom_object(kind.group, KUEUE_VERSION, kind.plural, ref.name)
            toleration = class_view(found, None, kind).toleration
        except ApiException as error:
            if error.status != 404:
                raise
    pods: list[dict[str, Any]] = []
    if workload.job_uid:
        selector = f"{JOB_UID_LABEL}={workload.job_uid}"
        listed = await answer_of(
            client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=selector, _preload_content=False)
        )
        pods = [pod for pod in json.loads(listed).get("items") or [] if (pod.get("spec") or {}).get("nodeName")]
    since = group_scheduled_since(PodJson(pod) for pod in pods)
    events = await client.CoreV1Api(api).list_namespaced_event(
        namespace, field_selector=f"involvedObject.uid={workload.uid}"
    )
    told: dict[str, tuple[str, str]] = {}  # reason -> (when, message): the latest of each
    for event in api.sanitize_for_serialization(events).get("items") or []:
        reason, when = event.get("reason"), str(event.get("lastTimestamp") or event.get("eventTime") or "")
        if reason in TOLD and (reason not in told or when >= told[reason][0]):
            told[reason] = (when, str(event.get("message") or ""))
    latest = {reason: message for reason, (_, message) in told.items()}
    return explain_workload(workload, toleration, since, datetime.now(UTC), latest)


async def _class_and_policy(
    api: Any, args: argparse.Namespace, class_name: str | None
) -> tuple[dict[str, Any] | None, str | None]:
    """The PriorityClass the object is judged by, and the policy that governs it (None, None without one)."""
    from kubernetes_asyncio import client
    from kubernetes_asyncio.client.exceptions import ApiException

    if not class_name:
        return None, None
    try:
        found = await client.SchedulingV1Api(api).read_priority_class(class_name)
    except ApiException as error:
        if error.status != 404:
            raise
        raise SystemExit(f"{args.kind} {args.name}: its PriorityClass {class_name} does not exist") from error
    return api.sanitize_for_serialization(found), await _governing_policy(api, class_name)


async def _read_pod(api: Any, namespace: str, name: str) -> dict[str, Any]:
    """The pod's JSON, every field (the client's model drops fields it does not know, such as
    `spec.schedulingGroup` of 1.37)."""
    from kubernetes_asyncio import client

    from preemption_toleration.kube.client import answer_of

    found: dict[str, Any] = json.loads(
        await answer_of(client.CoreV1Api(api).read_namespaced_pod(name, namespace, _preload_content=False))
    )
    return found


async def _group(
    api: Any, namespace: str, name: str, pod: dict[str, Any] | None = None
) -> tuple[Member, list[tuple[dict[str, Any], Member]]] | None:
    """The PodGroup `name` as its members are judged (`pod`, given, as a member; else the group's own facts,
    as any member), and each of its members judged; None when the API server serves no PodGroup or has none
    of that name (a pod naming it is judged as a pod)."""
    from kubernetes_asyncio import client
    from kubernetes_asyncio.client.exceptions import ApiException

    from preemption_toleration.api.resources import POD_GROUP_API
    from preemption_toleration.core.groups import group_scheduled_since
    from preemption_toleration.core.pods import PodJson
    from preemption_toleration.kube.client import answer_of
    from preemption_toleration.records.pod_group import MemberRecord, pod_group_record

    group_api, version, plural = POD_GROUP_API
    try:
        body = await client.CustomObjectsApi(api).get_namespaced_custom_object(
            group_api, version, namespace, plural, name
        )
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    group = pod_group_record(body)
    listed = await answer_of(client.CoreV1Api(api).list_namespaced_pod(namespace, _preload_content=False))
    pods = [item for item in json.loads(listed).get("items") or [] if group_name(item.get("spec") or {}) == name]
    since = group_scheduled_since(PodJson(item) for item in pods)

    def judged(member: dict[str, Any]) -> Member:
        return Member(group.ref, group.disruption.value, MemberRecord(PodJson(member), group, since))

    as_given = judged(pod if pod is not None else {"metadata": {"namespace": namespace}})
    return as_given, [(member, judged(member)) for member in pods]


def namespace_conflict(args: argparse.Namespace) -> str | None:
    """Why the pod's NAMESPACE/NAME and -n do not go together, if they do not."""
    namespace, slash, _ = args.name.rpartition("/")
    if args.kind != "priorityclass" and args.kind != "pc" and slash and args.namespace and namespace != args.namespace:
        return f"{args.kind} {args.name} is in namespace {namespace}, -n names {args.namespace}: give one of them"
    return None


def pod_key(args: argparse.Namespace) -> tuple[str, str]:
    """The pod's namespace and name: NAMESPACE/NAME, else -n, else the kubeconfig context's namespace (as
    kubectl reads it), else default."""
    from preemption_toleration.kube.client import context_namespace

    namespace, _, name = args.name.rpartition("/")
    return namespace or args.namespace or context_namespace(args.kubeconfig, args.context) or "default", name


def run(args: argparse.Namespace) -> int:
    from kubernetes_asyncio.client.exceptions import ApiException

    from preemption_toleration.kube.client import api_problem

    if problem := namespace_conflict(args):
        return refused("explain", problem)
    try:
        facts = asyncio.run(_explain(args))
    except ApiException as error:
        reason = "not found" if error.status == 404 else api_problem(error)
        namespaced = args.kind in ("pod", "podgroup", "pg", "workload", "wl")
        print(f"{args.kind} {'/'.join(pod_key(args)) if namespaced else args.name}: {reason}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(facts, indent=2))
    else:
        print(render_workload(facts) if facts.get("kind") == "Workload" else render(facts))
    return 0
