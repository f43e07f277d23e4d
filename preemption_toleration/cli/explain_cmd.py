"""`ptol explain pod NAMESPACE/NAME` and `ptol explain priorityclass NAME`: read the cluster and say, in
plain words, which priorities may preempt it now, which are refused, and when each protection ends."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import Any

from preemption_toleration.cli.options import add_kubeconfig_argument
from preemption_toleration.core.explain import explain_class, explain_pod, render


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="say who may preempt a pod or the pods of a class, and until when",
        description="Read the cluster and say, in plain words, which priorities may preempt a pod (or the pods "
        "of a PriorityClass) now, which are refused, until when, and which policy says so. Only reads.",
    )
    parser.add_argument("kind", choices=["pod", "priorityclass", "pc"], help="pod, or priorityclass (pc)")
    parser.add_argument("name", help="NAMESPACE/NAME for a pod (default namespace: default), NAME for a class")
    parser.add_argument(
        "-o", "--output", choices=["text", "json"], default="text", help="plain words or JSON facts (default text)"
    )
    add_kubeconfig_argument(parser)
    parser.set_defaults(handler=run)


async def _governing_policy(api: Any, class_name: str) -> str | None:
    from kubernetes_asyncio import client
    from kubernetes_asyncio.client.exceptions import ApiException

    from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
    from preemption_toleration.governance.plan import plan
    from preemption_toleration.governance.views import class_view, policy_view

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


async def _explain(args: argparse.Namespace) -> dict[str, Any]:
    from kubernetes_asyncio import client
    from kubernetes_asyncio.client.exceptions import ApiException

    from preemption_toleration.kube.client import make_api_client

    api = await make_api_client(args.kubeconfig)
    try:
        scheduling = client.SchedulingV1Api(api)
        if args.kind == "pod":
            namespace, _, name = args.name.rpartition("/")
            pod = api.sanitize_for_serialization(
                await client.CoreV1Api(api).read_namespaced_pod(name, namespace or "default")
            )
            class_name = (pod.get("spec") or {}).get("priorityClassName")
            priority_class = None
            if class_name:
                try:
                    priority_class = api.sanitize_for_serialization(await scheduling.read_priority_class(class_name))
                except ApiException as error:
                    if error.status != 404:
                        raise
                    raise SystemExit(f"pod {args.name}: its PriorityClass {class_name} does not exist") from error
            policy = await _governing_policy(api, class_name) if class_name else None
            return explain_pod(pod, priority_class, policy, datetime.now(UTC))
        priority_class = api.sanitize_for_serialization(await scheduling.read_priority_class(args.name))
        return explain_class(priority_class, await _governing_policy(api, args.name))
    finally:
        await api.close()


def run(args: argparse.Namespace) -> int:
    from kubernetes_asyncio.client.exceptions import ApiException

    try:
        facts = asyncio.run(_explain(args))
    except ApiException as error:
        reason = "not found" if error.status == 404 else f"{error.status} {error.reason}"
        print(f"{args.kind} {args.name}: {reason}", file=sys.stderr)
        return 1
    print(json.dumps(facts, indent=2) if args.output == "json" else render(facts))
    return 0
