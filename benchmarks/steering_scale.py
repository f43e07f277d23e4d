"""Steering at scale: the guard's answers with steering on against steering off, side by side (#43 §1).

The scenario a managed cluster meets: N simulated Nodes (KWOK) of 3 CPUs, each full with 30 pods of 100m of
the class `scale-protected` (value 100; minimum-preemptable-priority 100000, toleration -1: nobody here may
preempt them), then P pending preemptors of the class `scale-high` (value 1000, 500m each). Upstream's
plugin preempts nothing. The stock kube-scheduler tries, again and again: it picks protected victims, the
guard refuses each DisruptionTarget patch and DELETE, and with steering on each refusal asks steering for a
plan, which reads the whole cluster and declines (`no-node`).

`ptol webhook --extender off` (the guard alone, registered with the API server by URL) runs once per phase,
steering off and on in each of --rounds rounds (off first in even rounds, on first in odd ones), each phase
--seconds long with a fresh set of preemptors.
Reported per phase, from the API server's own metrics: the guard's admission time
(`apiserver_admission_webhook_admission_duration_seconds`, p50 and p99 interpolated in its buckets) and its
calls, `apiserver_admission_webhook_fail_open_count` (a late answer is an allowed DELETE); the protected pods
deleted; from a probe beside it, every 100 ms: /healthz's answer time and the guard's answer to a
scheduler's DELETE of a protected pod, sent to the webhook directly once it refused one (p50, p99, max,
how many it allowed and how many it answered other than 200); from the webhook:
plans made per second and the event loop's time they took (`ptol_steering_plan_seconds`), its CPU per second.

Targets: 0 fail-open, 0 protected pods deleted, the guard's p99 with steering on <= 1.2 x steering off,
/healthz <= 1 s throughout. Needs the control-plane binaries (`ptol dev cluster install`). Run:

    .venv/bin/python benchmarks/steering_scale.py [--nodes 1000] [--preemptors 50] [--seconds 120] [--rounds 1]

Prints a table and saves benchmarks/results/steering_scale-<nodes>.json. At 5,000 nodes (150,000 pods) the
pods take about half an hour to create on two cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from _cluster import api_client, bounded, install_crd, local_cluster, raw, with_retries
from _common import save_results, shown
from _webhook_bench import cpu_seconds, https, percentile, ptol_webhook, review
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.paths import GUARD_PATH
from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY as MIN
from preemption_toleration.core.annotations import TOLERATION_SECONDS as TOL
from preemption_toleration.devcluster import LocalCluster, create_node, ensure_namespace
from preemption_toleration.manifests.webhook_configurations import GUARD_WEBHOOK
from tests.metrics import samples, total

PODS_PER_NODE, NAMESPACES, IN_FLIGHT = 30, 10, 48
PROTECTED, HIGH = "scale-protected", "scale-high"
STEERING_NAMESPACE = "scale-steering"
PROBE_SECONDS = 0.1
WARM_UP_SECONDS = 60.0  # for the webhook's caches to hold the preemptors
SETTLE_SECONDS = 10.0  # after the preemptors are gone, before the guard stops
DURATION = "apiserver_admission_webhook_admission_duration_seconds"


def namespace_of(index: int) -> str:
    return f"scale-{index % NAMESPACES}"


def node_name(index: int) -> str:
    return f"scale-{index:05d}"


def victim_body(node: int, slot: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"prot-{node:05d}-{slot:02d}", "namespace": namespace_of(node * PODS_PER_NODE + slot)},
        "spec": {
            "nodeName": node_name(node),
            "priorityClassName": PROTECTED,
            "containers": [{"name": "c", "image": "batch/work:1", "resources": {"requests": {"cpu": "100m"}}}],
        },
    }


def preemptor_body(phase: str, index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{phase}-high-{index:03d}", "namespace": namespace_of(index)},
        "spec": {
            "priorityClassName": HIGH,
            "containers": [{"name": "c", "image": "batch/train:1", "resources": {"requests": {"cpu": "500m"}}}],
        },
    }


async def populate(api: ApiClient, nodes: int) -> None:
    core = client.CoreV1Api(api)
    scheduling = client.SchedulingV1Api(api)
    for index in range(NAMESPACES):
        await ensure_namespace(api, namespace_of(index))
    await ensure_namespace(api, STEERING_NAMESPACE)
    for name, value, marks in ((PROTECTED, 100, {MIN: "100000", TOL: "-1"}), (HIGH, 1000, {})):
        body = {"metadata": {"name": name, "annotations": marks}, "value": value}
        await raw(scheduling.create_priority_class(body, _preload_content=False))
    started = time.monotonic()
    await bounded(range(nodes), lambda n: create_node(api, node_name(n), cpu="3", memory="64Gi", pods="40"), 32)
    print(f"{nodes} nodes ready in {time.monotonic() - started:.0f} s", flush=True)
    started = time.monotonic()

    async def create(item: tuple[int, int]) -> None:
        body = victim_body(*item)
        namespace = body["metadata"]["namespace"]
        await with_retries(lambda: raw(core.create_namespaced_pod(namespace, body, _preload_content=False)))

    items = [(node, slot) for node in range(nodes) for slot in range(PODS_PER_NODE)]
    await bounded(items, create, IN_FLIGHT)
    print(f"{len(items)} protected pods in {time.monotonic() - started:.0f} s", flush=True)


async def protected_pods(api: ApiClient) -> dict[str, bool]:
    """The protected pods by name, and whether each is being deleted."""
    core = client.CoreV1Api(api)
    found: dict[str, bool] = {}
    token = None
    while True:
        page = json.loads(
            await raw(core.list_pod_for_all_namespaces(limit=5000, _continue=token, _preload_content=False))
        )
        for pod in page["items"]:
            if pod["spec"].get("priorityClassName") == PROTECTED:
                found[pod["metadata"]["name"]] = bool(pod["metadata"].get("deletionTimestamp"))
        token = page["metadata"].get("continue")
        if not token:
            return found


async def refill(api: ApiClient, nodes: int) -> int:
    """Every node full again: the protected pods a phase lost (none, when the targets are met) are made again,
    so that each phase starts from the same cluster. Returns how many."""
    core = client.CoreV1Api(api)
    present = await protected_pods(api)
    missing = [
        (node, slot)
        for node in range(nodes)
        for slot in range(PODS_PER_NODE)
        if victim_body(node, slot)["metadata"]["name"] not in present
    ]
    for item in missing:
        body = victim_body(*item)
        await until_gone(api, body["metadata"]["namespace"], body["metadata"]["name"])
        await core.create_namespaced_pod(body["metadata"]["namespace"], body)
    return len(missing)


async def until_gone(api: ApiClient, namespace: str, name: str) -> None:
    core = client.CoreV1Api(api)
    while True:
        try:
            await core.read_namespaced_pod(name, namespace)
        except ApiException as error:
            if error.status == 404:
                return
            raise
        await asyncio.sleep(0.5)


def quantile(buckets: dict[float, float], q: float) -> float:
    """Prometheus's histogram_quantile over cumulative bucket counts (by upper bound)."""
    bounds = sorted(buckets)
    count = buckets[bounds[-1]]
    if count <= 0:
        return float("nan")
    rank, previous_bound, previous_count = q * count, 0.0, 0.0
    for bound in bounds:
        if buckets[bound] >= rank:
            if bound == float("inf"):
                return previous_bound
            inside = buckets[bound] - previous_count
            return previous_bound + (bound - previous_bound) * ((rank - previous_count) / inside if inside else 1)
        previous_bound, previous_count = bound, buckets[bound]
    return bounds[-1]


def guard_buckets(text: str) -> dict[float, float]:
    found: dict[float, float] = {}
    for sample in samples(text, DURATION + "_bucket", name=GUARD_WEBHOOK):
        bound = float(sample.labels["le"])
        found[bound] = found.get(bound, 0.0) + sample.value
    return found


def apiserver_metrics(cluster: LocalCluster) -> str:
    return subprocess.run(
        cluster.kubectl_argv("get", "--raw", "/metrics"), capture_output=True, text=True, check=True
    ).stdout


def scheduler_delete(pod: dict[str, Any], node: str) -> bytes:
    """The review of kube-scheduler's DELETE of a protected pod, as the API server sends it to the guard."""
    victim = json.loads(json.dumps(pod))
    victim["metadata"]["uid"] = f"probe-{node}"
    victim["spec"].update(priority=100, nodeName=node)
    victim["status"] = {"phase": "Running", "startTime": "2026-11-27T00:00:00Z"}
    pod_kind, pods = ("", "v1", "Pod"), ("", "v1", "pods")
    scheduler = ("system:kube-scheduler", ["system:authenticated"])
    return json.dumps(review("DELETE", pod_kind, pods, scheduler, None, victim, {"kind": "DeleteOptions"})).encode()


@contextmanager
def probing(base: str, nodes: int) -> Iterator[dict[str, list[float]]]:
    """Every PROBE_SECONDS: /healthz, and the guard's answer to a scheduler's DELETE (of another node's pod
    each time, so that the guard's retry hold for one victim never applies), from the first one refused."""
    times: dict[str, list[float]] = {"healthz": [], "guard": [], "guard_allowed": [], "guard_unanswered": []}
    stop = threading.Event()
    step = 0

    def refused() -> bool:
        node = step % nodes
        body = scheduler_delete(victim_body(node, step // nodes % PODS_PER_NODE), node_name(node))
        status, answer = https(base + GUARD_PATH, body, timeout=30)
        return status == 200 and not json.loads(answer)["response"]["allowed"]

    # Measured from the first refusal on: until the webhook's caches hold a pending preemptor, the guard
    # rightly allows a DELETE that nobody could be preempting for.
    deadline = time.monotonic() + WARM_UP_SECONDS
    while not refused():
        if time.monotonic() > deadline:
            raise SystemExit(f"the guard refused no probe within {WARM_UP_SECONDS:.0f} s of the preemptors")
        time.sleep(PROBE_SECONDS)
    step += 1  # the refused victim asked again at once would be held as a scheduler's retry (about 1 s)

    def probe() -> None:
        nonlocal step
        while not stop.wait(PROBE_SECONDS):
            started = time.perf_counter()
            https(f"{base}/healthz", timeout=30)
            times["healthz"].append(time.perf_counter() - started)
            node = step % nodes
            body = scheduler_delete(victim_body(node, step // nodes % PODS_PER_NODE), node_name(node))
            started = time.perf_counter()
            status, answer = https(base + GUARD_PATH, body, timeout=30)
            times["guard"].append(time.perf_counter() - started)
            if status != 200:  # a 503 (a cache not current) or 400: the API server would fail open
                times["guard_unanswered"].append(float(status))
            elif json.loads(answer)["response"]["allowed"]:
                times["guard_allowed"].append(1.0)
            step += 1

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    try:
        yield times
    finally:
        stop.set()
        thread.join()


def webhook_figures(base: str) -> dict[str, float]:
    status, page = https(f"{base}/metrics")
    assert status == 200, page[:300]
    text = page.decode()
    return {
        "plans": total(text, "ptol_steering_plan_seconds_count"),
        "plan_seconds": total(text, "ptol_steering_plan_seconds_sum"),
        "refusals": total(text, "ptol_guard_refusals_total"),
    }


async def phase(
    cluster: LocalCluster, api: ApiClient, mode: str, label: str, args: argparse.Namespace
) -> dict[str, Any]:
    core = client.CoreV1Api(api)
    extra = ["--extender", "off", "--steering", mode, "--lease-namespace", STEERING_NAMESPACE]
    refilled = await refill(api, args.nodes)
    # listing 150,000 pods takes the webhook minutes on a busy two-core machine
    ready = 120.0 + args.nodes * PODS_PER_NODE / 250
    with ptol_webhook(cluster, register=True, log_name=f"scale-{label}.log", extra_args=extra, ready_timeout=ready) as (
        base,
        pid,
    ):
        before_api = apiserver_metrics(cluster)
        before_webhook, cpu_before = webhook_figures(base), cpu_seconds(pid)
        protected_before = await protected_pods(api)
        started = time.monotonic()
        for index in range(args.preemptors):
            body = preemptor_body(label, index)
            await core.create_namespaced_pod(body["metadata"]["namespace"], body)
        with probing(base, args.nodes) as probes:
            await asyncio.sleep(args.seconds)
        elapsed = time.monotonic() - started
        after_api = apiserver_metrics(cluster)
        after_webhook, cpu_after = webhook_figures(base), cpu_seconds(pid)
        protected_at_end = await protected_pods(api)
        bound = 0
        for index in range(args.preemptors):
            body = preemptor_body(label, index)
            pod = await core.read_namespaced_pod(body["metadata"]["name"], body["metadata"]["namespace"])
            bound += bool(pod.spec.node_name)
            await core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
        for index in range(args.preemptors):
            body = preemptor_body(label, index)
            await until_gone(api, body["metadata"]["namespace"], body["metadata"]["name"])
        # the scheduler's preemptions in flight end while the guard still answers: a DELETE let through
        # after its configuration is gone would be the benchmark's doing, not the guard's
        await asyncio.sleep(SETTLE_SECONDS)
        protected_after = await protected_pods(api)

    def lost(after: dict[str, bool], before: dict[str, bool]) -> int:
        """Pods running in `before` (not being deleted) that `after` no longer holds, or holds being deleted."""
        return sum(1 for name, deleting in before.items() if not deleting and after.get(name, True))

    before, after = guard_buckets(before_api), guard_buckets(after_api)
    delta = {bound: after.get(bound, 0.0) - before.get(bound, 0.0) for bound in after}
    fail_open = total(after_api, "apiserver_admission_webhook_fail_open_count", name=GUARD_WEBHOOK) - total(
        before_api, "apiserver_admission_webhook_fail_open_count", name=GUARD_WEBHOOK
    )
    plans = after_webhook["plans"] - before_webhook["plans"]
    row = {
        "phase": label,
        "steering": mode,
        "seconds": round(elapsed, 1),
        "guard_calls": delta.get(float("inf"), 0.0),
        "guard_p50_ms": round(1000 * quantile(delta, 0.5), 1) if delta else None,
        "guard_p99_ms": round(1000 * quantile(delta, 0.99), 1) if delta else None,
        "fail_open": fail_open,
        "protected_deleted": lost(protected_at_end, protected_before),
        # a preemptor deleted while the scheduler preempts for it: the guard finds no pending preemptor then
        "protected_deleted_in_teardown": lost(protected_after, protected_at_end),
        "refilled_before": refilled,
        "preemptors_bound": bound,
        "probe_guard_p50_ms": round(1000 * statistics.median(probes["guard"]), 1),
        "probe_guard_p99_ms": round(1000 * percentile(probes["guard"], 99), 1),
        "probe_guard_max_ms": round(1000 * max(probes["guard"]), 1),
        "probe_guard_allowed": len(probes["guard_allowed"]),
        "probe_guard_unanswered": sorted({int(status) for status in probes["guard_unanswered"]}) or None,
        "probe_guard_unanswered_count": len(probes["guard_unanswered"]),
        "healthz_p99_ms": round(1000 * percentile(probes["healthz"], 99), 1),
        "healthz_max_ms": round(1000 * max(probes["healthz"]), 1),
        "plans_per_s": round(plans / elapsed, 2),
        "plan_loop_s_per_plan": round((after_webhook["plan_seconds"] - before_webhook["plan_seconds"]) / plans, 3)
        if plans
        else None,
        "guard_refusals": after_webhook["refusals"] - before_webhook["refusals"],
        "webhook_cpu_per_s": round((cpu_after - cpu_before) / elapsed, 2),
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--preemptors", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--dir", help="keep the cluster's directory (logs) here")
    args = parser.parse_args()

    rows: list[dict[str, Any]] = []
    with local_cluster(args.dir) as cluster:
        install_crd(cluster)

        async def run() -> None:
            api = await api_client(cluster, connections=IN_FLIGHT)
            try:
                await populate(api, args.nodes)
                for round_ in range(args.rounds):
                    # off first in even rounds, on first in odd ones: a drift of the cluster over the run
                    # (its store growing, the machine's other load) weighs on both alike
                    for mode in ("off", "on") if round_ % 2 == 0 else ("on", "off"):
                        rows.append(await phase(cluster, api, mode, f"r{round_}-{mode}", args))
            finally:
                await api.close()

        asyncio.run(run())
        release = cluster.kubernetes_version
    on = [row for row in rows if row["steering"] == "on"]
    off = [row for row in rows if row["steering"] == "off"]
    ratio = statistics.median(r["guard_p99_ms"] or 0 for r in on) / max(
        statistics.median(r["guard_p99_ms"] or 0 for r in off), 1e-9
    )
    probe_ratio = statistics.median(r["probe_guard_p99_ms"] for r in on) / max(
        statistics.median(r["probe_guard_p99_ms"] for r in off), 1e-9
    )
    summary = {
        "kubernetes": release,
        "nodes": args.nodes,
        "pods": args.nodes * PODS_PER_NODE,
        "preemptors": args.preemptors,
        "guard_p99_on_over_off": round(ratio, 2),
        "probe_guard_p99_on_over_off": round(probe_ratio, 2),
        "fail_open": sum(r["fail_open"] for r in rows),
        "protected_deleted": sum(r["protected_deleted"] for r in rows),
        "healthz_max_ms": max(r["healthz_max_ms"] for r in rows),
    }
    print(json.dumps(summary, indent=1))
    path = save_results(f"steering_scale-{args.nodes}", {"summary": summary, "phases": rows})
    print(f"saved {shown(path)}")


if __name__ == "__main__":
    main()
