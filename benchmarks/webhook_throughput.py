"""Webhook throughput: `ptol webhook` against a bare aiohttp HTTPS handler, per endpoint, in one run.

A local control plane (Kubernetes 1.37.2 by default; KWOK for the nodes) holds a realistic workload:
PriorityClasses with and without our annotations, PreemptionTolerationPolicies, pods of a few KB on
simulated nodes, and a pending higher-priority pod. The real `ptol webhook` (guard enforced) serves it
from its caches; `_bare_webhook.py` only parses the AdmissionReview and allows it. Both are separate
processes on one CPU, with nothing else on it (the control plane is moved to the other CPU for the
measurement); `wrk -t1` (16 connections, on that other CPU) POSTs an AdmissionReview body to each,
back to back in alternating order, endpoint by endpoint, for a few rounds. The ratio is the median of the
rounds' ours/bare ratios; the "CPU ratio" compares requests per CPU-second of the server process instead,
which a busy machine disturbs less. The bodies are built around objects read back from this API server
(managedFields and status included), in the envelope kube-apiserver sends. Two endpoints are refusals, the
hot path of a scheduler retrying a protected victim: its DELETE and its `DisruptionTarget` status patch of
a pod protected forever; `ptol webhook` runs with `--retry-hold-seconds 0`, so each is answered at once and
what is measured is the refusal's cost (with the hold, the scheduler sends about one a second).
Target: ours >= 0.8x the bare handler's requests/s on every endpoint.

With `--code PATH`, a third server runs another checkout's `ptol webhook` ("theirs") on the same CPU, against
the same caches and bodies, in the same rounds (the order of the three turns each round), and the table adds
ours/theirs per CPU-second: the median of the rounds' paired ratios, which a code change is judged by.

Needs `wrk` (`apt-get install wrk`) and the control-plane binaries (`ptol dev cluster install`). Run:

    .venv/bin/python benchmarks/webhook_throughput.py [--quick] [--rounds N] [--seconds S] [--pods N] [--code PATH]

Prints a table and saves it to benchmarks/results/webhook_throughput.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _cluster import api_client, bounded, local_cluster
from _common import code_revision, save_results, shown
from _webhook_bench import (
    bare_webhook,
    create_owner,
    decision,
    install_crd,
    log_problems,
    pin_control_plane,
    ptol_webhook,
    raw,
    realistic_pod,
    review,
)
from _wrk import CONNECTIONS, Run, post_script, wrk
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.paths import (
    GUARD_PATH,
    MUTATE_PRIORITY_CLASSES_PATH,
    VALIDATE_POLICIES_PATH,
    VALIDATE_PRIORITY_CLASSES_PATH,
)
from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY as MIN
from preemption_toleration.core.annotations import TOLERATION_SECONDS as TOL
from preemption_toleration.devcluster import LocalCluster, create_node, ensure_namespace

NAMESPACE, TARGET = "bench", 0.8
THEIRS = "theirs"  # the server of another checkout (--code)
TIER = {"preemption-toleration.dev/tier": "guaranteed-10min"}
CLASSES: list[tuple[str, int, dict[str, str], dict[str, str]]] = [
    ("critical", 10000, {}, {}),
    ("high", 9000, {}, {}),
    ("low", 8000, {}, {}),
    ("low-non-preempted", 8000, {}, {MIN: "10000", TOL: "-1"}),
    ("batch-non-preempted", 8000, {}, {MIN: "10000", TOL: "-1"}),
    ("batch-training", 8000, TIER, {MIN: "10000", TOL: "600"}),
    ("batch-eval", 8000, TIER, {MIN: "10000", TOL: "600"}),
]
POLICIES: list[tuple[str, dict[str, Any], int]] = [  # name, target, tolerationSeconds
    ("low-non-preempted", {"priorityClassName": "low-non-preempted"}, -1),
    ("batch-non-preempted", {"priorityClassName": "batch-non-preempted"}, -1),
    ("guaranteed-10min", {"priorityClassSelector": {"matchLabels": TIER}}, 600),
]
# (key, path): the brief's numbering
ENDPOINTS = [
    ("validate-priorityclass", VALIDATE_PRIORITY_CLASSES_PATH),
    ("guard-user-delete", GUARD_PATH),
    ("guard-kubelet-status", GUARD_PATH),
    ("guard-scheduler-delete", GUARD_PATH),
    ("guard-refused-delete", GUARD_PATH),
    ("guard-refused-mark", GUARD_PATH),
    ("mutate-priorityclass", MUTATE_PRIORITY_CLASSES_PATH),
    ("validate-policy", VALIDATE_POLICIES_PATH),
]
ALICE = ("alice", ["system:masters", "system:authenticated"])
SCHEDULER = ("system:kube-scheduler", ["system:authenticated"])


async def populate(api: ApiClient, pods: int) -> None:
    """Classes, policies, nodes, `pods` bound pods, the victim and a preemptor nobody schedules."""
    nodes = [f"node-{i + 1}" for i in range(pods // 100 + 1)]
    await ensure_namespace(api, NAMESPACE)
    for node in nodes:
        await create_node(api, node, cpu="64", memory="256Gi", pods="110")
    for name, value, labels, notes in CLASSES:
        await client.SchedulingV1Api(api).create_priority_class(
            {"metadata": {"name": name, "labels": labels, "annotations": notes}, "value": value}
        )
    for name, target, seconds in POLICIES:
        await client.CustomObjectsApi(api).create_cluster_custom_object(
            GROUP,
            VERSION,
            PLURAL,
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "PreemptionTolerationPolicy",
                "metadata": {"name": name},
                "spec": {**target, "minimumPreemptablePriority": 10000, "tolerationSeconds": seconds},
            },
        )
    owner = await create_owner(api, NAMESPACE)
    bodies = [
        realistic_pod(f"worker-{i}", node=nodes[i % len(nodes)], priority_class=CLASSES[2 + i % 5][0], owner_uid=owner)
        for i in range(pods)
    ]
    bodies += [
        realistic_pod("victim", node="node-1", priority_class="batch-training", owner_uid=owner),
        realistic_pod("protected", node="node-1", priority_class="low-non-preempted", owner_uid=owner),
        realistic_pod(
            "preemptor", node="node-1", priority_class="high", scheduler="bench-unscheduled", owner_uid=owner
        ),
    ]
    core = client.CoreV1Api(api)
    await bounded(bodies, lambda body: core.create_namespaced_pod(NAMESPACE, body), 8)
    deadline = time.monotonic() + 120 + pods / 50  # KWOK marks about a hundred pods a second here
    while True:  # raw JSON: decoding 20,000 pods into client models took longer than KWOK's work
        listed = await raw(core.list_namespaced_pod(NAMESPACE, _preload_content=False))
        running = sum((pod.get("status") or {}).get("phase") == "Running" for pod in listed["items"])
        if running == pods + 2:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"only {running} of {pods + 2} pods run after {120 + pods / 50:.0f} s")
        await asyncio.sleep(1)
    an_hour_ago = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    await core.patch_namespaced_pod_status(
        "victim",
        NAMESPACE,
        {"status": {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": an_hour_ago}]}},
        _content_type="application/strategic-merge-patch+json",
    )  # its 600 s of protection are over


async def record(api: ApiClient) -> dict[str, dict[str, Any]]:
    """One AdmissionReview per endpoint, around objects as this API server returns them."""
    core, scheduling = client.CoreV1Api(api), client.SchedulingV1Api(api)
    worker, node_pod, victim, never = [
        await raw(core.read_namespaced_pod(name, NAMESPACE, _preload_content=False))
        for name in ("worker-0", "worker-1", "victim", "protected")
    ]
    new_class = {
        "metadata": {"name": "nightly-research", "annotations": {MIN: "9000", TOL: "300"}},
        "value": 7000,
        "description": "Research jobs: 5 minutes before priority 9000 may preempt them.",
    }
    governed = {"metadata": {"name": "batch-finetune", "labels": TIER}, "value": 8000}
    created = [
        await raw(scheduling.create_priority_class(body, dry_run="All", _preload_content=False))
        for body in (new_class, governed)
    ]
    policy = await raw(
        client.CustomObjectsApi(api).create_cluster_custom_object(
            GROUP,
            VERSION,
            PLURAL,
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "PreemptionTolerationPolicy",
                "metadata": {"name": "nightly-research"},
                "spec": {
                    "priorityClassName": "nightly-research",
                    "minimumPreemptablePriority": 9000,
                    "tolerationSeconds": 300,
                },
            },
            dry_run="All",
            _preload_content=False,
        )
    )
    protected = copy.deepcopy(victim)  # scheduled just now: refused iff the guard finds the preemptor
    for condition in protected["status"]["conditions"]:
        if condition["type"] == "PodScheduled":
            condition["lastTransitionTime"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    restarted = copy.deepcopy(node_pod)  # the kubelet reports a restart of the sidecar
    for status in restarted["status"]["containerStatuses"]:
        status.update(restartCount=1, ready=False, lastState={"terminated": {"exitCode": 137, "reason": "OOMKilled"}})
    for condition in restarted["status"]["conditions"]:
        if condition["type"] in ("Ready", "ContainersReady"):
            condition.update(status="False", reason="ContainersNotReady")
    marked = copy.deepcopy(never)  # the scheduler's DisruptionTarget patch, as the API server sends it
    marked["status"]["conditions"].append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "reason": "PreemptionByScheduler",
            # the preemptor is placed by a scheduler of its own (nobody runs it): its mark names it
            "message": "bench-unscheduled: preempting to accommodate a higher priority pod",
        }
    )
    pc, pc_r = ("scheduling.k8s.io", "v1", "PriorityClass"), ("scheduling.k8s.io", "v1", "priorityclasses")
    pod, pod_r = ("", "v1", "Pod"), ("", "v1", "pods")
    create = {"kind": "CreateOptions", "fieldManager": "kubectl-client-side-apply"}
    return {
        "validate-priorityclass": review("CREATE", pc, pc_r, ALICE, created[0], None, create),
        "guard-user-delete": review(
            "DELETE", pod, pod_r, ALICE, None, worker, {"kind": "DeleteOptions", "propagationPolicy": "Background"}
        ),
        "guard-kubelet-status": review(
            "UPDATE",
            pod,
            pod_r,
            ("system:node:node-1", ["system:nodes", "system:authenticated"]),
            restarted,
            node_pod,
            {"kind": "UpdateOptions"},
            "status",
        ),
        "guard-scheduler-delete": review("DELETE", pod, pod_r, SCHEDULER, None, victim, {"kind": "DeleteOptions"}),
        "guard-refused-delete": review("DELETE", pod, pod_r, SCHEDULER, None, never, {"kind": "DeleteOptions"}),
        "guard-refused-mark": review(
            "UPDATE", pod, pod_r, SCHEDULER, marked, never, {"kind": "UpdateOptions"}, "status"
        ),
        "probe-protected-victim": review("DELETE", pod, pod_r, SCHEDULER, None, protected, {"kind": "DeleteOptions"}),
        "mutate-priorityclass": review("CREATE", pc, pc_r, ALICE, created[1], None, create),
        "validate-policy": review(
            "CREATE",
            (GROUP, VERSION, "PreemptionTolerationPolicy"),
            (GROUP, VERSION, PLURAL),
            ALICE,
            policy,
            None,
            create,
        ),
    }


def benchmark(
    cluster: LocalCluster, bodies: dict[str, bytes], scratch: Path, rounds: int, seconds: int, code: str | None
) -> tuple[dict[str, str], dict[str, dict[str, list[Run]]]]:
    """The servers on one CPU, wrk on another: (our decisions, runs by endpoint and server)."""
    cpus = sorted(os.sched_getaffinity(0))
    server_cpu, wrk_cpu = (cpus[0], cpus[1]) if len(cpus) >= 2 else (None, None)
    scripts = {key: post_script(body, scratch / key) for key, body in bodies.items()}
    pin_control_plane(cluster, wrk_cpu)
    # refusals answered at once: this measures what a refusal costs, not the pacing of retries
    hold = ("--retry-hold-seconds", "0")
    with contextlib.ExitStack() as stack:
        servers = {
            "bare": stack.enter_context(bare_webhook(cluster.logs_dir / "bare-webhook.log", cpu=server_cpu)),
            "ours": stack.enter_context(ptol_webhook(cluster, cpu=server_cpu, extra_args=hold)),
        }
        if code is not None:
            servers[THEIRS] = stack.enter_context(
                ptol_webhook(cluster, cpu=server_cpu, extra_args=hold, code=code, log_name="ptol-webhook-theirs.log")
            )
        for name in ("ours", THEIRS) if code is not None else ("ours",):
            if not decision(servers[name][0], GUARD_PATH, bodies["probe-protected-victim"]).startswith("denied"):
                raise SystemExit(
                    f"{name}: the guard did not infer the pending preemptor: the scheduler DELETE would not measure "
                    "what it should"
                )
        decisions = {key: decision(servers["ours"][0], path, bodies[key]) for key, path in ENDPOINTS}
        for key, path in ENDPOINTS:
            decision(servers["bare"][0], path, bodies[key])
            for base, pid in servers.values():
                wrk(base + path, scripts[key], 1, pid, wrk_cpu)  # warm-up
        names = list(servers)
        runs: dict[str, dict[str, list[Run]]] = {key: {name: [] for name in names} for key, _ in ENDPOINTS}
        for number in range(rounds):  # each round: the servers back to back, the order turned by one
            order = names[number % len(names) :] + names[: number % len(names)]
            for key, path in ENDPOINTS:
                for name in order:
                    base, pid = servers[name]
                    runs[key][name].append(wrk(base + path, scripts[key], seconds, pid, wrk_cpu))
    return decisions, runs


def report(
    bodies: dict[str, bytes], decisions: dict[str, str], runs: dict[str, dict[str, list[Run]]]
) -> list[dict[str, Any]]:
    """Print the table; its rows, with every run."""

    def paired_ratio(key: str, field: str, over: str = "bare") -> float:
        """The median over rounds of ours / `over`, each round's runs taken back to back."""
        return round(
            statistics.median(
                float(getattr(o, field)) / float(getattr(b, field))
                for o, b in zip(runs[key]["ours"], runs[key][over], strict=True)
            ),
            3,
        )

    compared = THEIRS in next(iter(runs.values()))

    rows: list[dict[str, Any]] = []
    print(
        f"{'endpoint':<23} {'body KB':>7} {'bare req/s':>10} {'ours req/s':>10} {'ratio':>6} {'CPU ratio':>9}  "
        f"{'bare p50/p99 ms':>15}  {'ours p50/p99 ms':>15}"
        + (f" {'theirs CPU':>10} {'ours/theirs CPU':>15}" if compared else "")
        + "  ours decision"
    )
    for key, path in ENDPOINTS:
        figures = {
            name: {
                field: round(statistics.median(getattr(run, field) for run in runs[key][name]), 3)
                for field in ("requests_per_s", "requests_per_cpu_s", "p50_ms", "p99_ms")
            }
            for name in runs[key]
        }
        ratio, cpu_ratio = paired_ratio(key, "requests_per_s"), paired_ratio(key, "requests_per_cpu_s")
        against: dict[str, float] = {}
        if compared:
            theirs_cpu = statistics.median(
                float(t.requests_per_cpu_s) / float(b.requests_per_cpu_s)
                for t, b in zip(runs[key][THEIRS], runs[key]["bare"], strict=True)
            )
            against = {
                "theirs_cpu_ratio": round(theirs_cpu, 3),
                "ours_over_theirs_cpu": paired_ratio(key, "requests_per_cpu_s", THEIRS),
            }
        rows.append(
            {
                "endpoint": key,
                "path": path,
                "body_bytes": len(bodies[key]),
                "decision": decisions[key],
                **figures,
                "ratio": ratio,
                "cpu_ratio": cpu_ratio,
                "meets_target": ratio >= TARGET,
                **against,
                "runs": {name: [asdict(run) for run in server_runs] for name, server_runs in runs[key].items()},
            }
        )
        bare, ours = figures["bare"], figures["ours"]
        print(
            f"{key:<23} {len(bodies[key]) / 1024:>7.1f} {bare['requests_per_s']:>10.0f} "
            f"{ours['requests_per_s']:>10.0f} {ratio:>5.2f}x {cpu_ratio:>8.2f}x  "
            f"{bare['p50_ms']:>7.2f}/{bare['p99_ms']:<7.2f}  {ours['p50_ms']:>7.2f}/{ours['p99_ms']:<7.2f}"
            + (f" {against['theirs_cpu_ratio']:>9.2f}x {against['ours_over_theirs_cpu']:>14.3f}x" if compared else "")
            + f"  {decisions[key]}"
        )
    print("ratio: median over rounds of ours/bare requests/s; CPU ratio: the same per CPU-second of the server")
    if compared:
        print("theirs CPU: theirs/bare per CPU-second; ours/theirs CPU: median over rounds of the paired ratio")
    failed = [row["endpoint"] for row in rows if not row["meets_target"]]
    print(f"target ours >= {TARGET}x bare on every endpoint: {'missed on ' + ', '.join(failed) if failed else 'met'}")
    errors = sum(
        run.socket_errors + run.non_2xx
        for by_server in runs.values()
        for server_runs in by_server.values()
        for run in server_runs
    )
    if errors:
        print(f"wrk counted {errors} socket errors or non-2xx answers (see runs in the JSON)")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 2 s, 20 pods: a smoke run")
    parser.add_argument("--rounds", type=int, help="rounds per endpoint (default 5)")
    parser.add_argument("--seconds", type=int, help="seconds per wrk run (default 3)")
    parser.add_argument("--pods", type=int, help="bound pods in the cluster (default 100)")
    parser.add_argument(
        "--code",
        metavar="PATH",
        help="also run the `ptol webhook` of another checkout at PATH (e.g. a git worktree of an earlier "
        "commit), side by side with the current code",
    )
    parser.add_argument("--dir", help="keep the cluster's directory (logs) here instead of a temporary one")
    parser.add_argument(
        "--save-as",
        default="webhook_throughput",
        metavar="NAME",
        help="save to results/NAME.json (default %(default)s)",
    )
    args = parser.parse_args()
    rounds, seconds = args.rounds or (1 if args.quick else 5), args.seconds or (2 if args.quick else 3)
    pods = args.pods or (20 if args.quick else 100)
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk")

    async def prepare(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
        async with await api_client(cluster) as api:
            await populate(api, pods)
            return await record(api)

    with local_cluster(args.dir) as cluster, tempfile.TemporaryDirectory() as scratch:
        install_crd(cluster)
        bodies = {key: json.dumps(body).encode() for key, body in asyncio.run(prepare(cluster)).items()}
        decisions, runs = benchmark(cluster, bodies, Path(scratch), rounds, seconds, args.code)
        problems = log_problems(cluster.logs_dir / "ptol-webhook.log")
    rows = report(bodies, decisions, runs)
    if problems:
        print(f"ptol webhook logged {len(problems)} warnings/errors, e.g.: {problems[0][:300]}")
    path = save_results(
        args.save_as,
        {
            "settings": {
                "rounds": rounds,
                "seconds": seconds,
                "connections": CONNECTIONS,
                "wrk_threads": 1,
                "pods": pods,
                "target_ratio": TARGET,
                "theirs": code_revision(args.code) if args.code else None,
            },
            "rows": rows,
            "webhook_log_problems": problems[:20],
        },
    )
    print(f"saved to {shown(path)}")


if __name__ == "__main__":
    main()
