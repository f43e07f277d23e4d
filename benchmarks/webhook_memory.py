"""Webhook memory and time to ready with N pods in the local control plane: steady and peak RSS.

Starts a local control plane (`preemption_toleration.devcluster.LocalCluster`, with KWOK keeping its Nodes
Ready, so that node lifecycle never evicts their pods) in a temporary directory with 300 simulated Nodes,
then grows the number of pods in that one cluster: 0,
10,000 and 50,000 (150,000 with --max 150000). The pods are of realistic size: labels, annotations, three
containers with env vars, probes, requests and limits, volumes, tolerations and node affinity. Nine in ten
are bound to a Node by spec.nodeName and marked Running as a kubelet would (pods/status); one in ten waits,
Pending and Unschedulable, with a higher priority, for a scheduler that does not run (so kube-scheduler
leaves it alone). For each N, `ptol webhook` (eviction guard on, its default) runs as a child process: its
/readyz is polled and its RSS (VmRSS) sampled every 100 ms until it is ready, then for 10 s more.

Reported per N: time to ready, steady RSS (median after ready), peak RSS (VmHWM), bytes per pod above the
empty cluster's steady RSS, the mean size of a pod's JSON as the API server returns it and, side by side,
the size and time of the API server's own list of all pods, its RSS and the size of etcd's database
(etcd's default quota is 2 GiB). Targets: peak <= 1.5 x steady, and steady <=
empty-cluster RSS + 1 KB per pod. Saves benchmarks/results/webhook_memory.json. Run:

    .venv/bin/python benchmarks/webhook_memory.py [--quick] [--max 150000 | --sizes 0,2000,5000] [--dir DIR]
        [--baseline CHECKOUT --rounds 3]

--baseline compares two versions side by side: the `ptol webhook` of another checkout (an older commit, e.g. a
`git worktree`) runs against the same pods as this checkout's, the two alternately, --rounds times per N.

--quick measures N = 0 and 2,000 (about a minute). The default stops at 50,000 (about 10 minutes on two
cores): measured there, the API server holds about 8 GB of RSS for 50,000 such pods and etcd about 18 KB per
pod (two revisions each), so 150,000 needs about 24 GB of memory and more than etcd's default 2 GiB quota.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from _cluster import api_client, bounded, install_crd, local_cluster, raw, with_retries
from _common import save_results, shown
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.devcluster import LocalCluster, create_node, ensure_namespace
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.devcluster.processes import free_port
from preemption_toleration.kube.client import MERGE_PATCH
from tests.metrics import scrape, total

LADDER = (0, 10_000, 50_000, 150_000)
QUICK = (0, 2_000)
NODES, NAMESPACES, IN_FLIGHT = 300, 10, 64
PENDING_EVERY = 10  # one pod in ten is Pending, with the higher priority
LOW, HIGH = "bench-batch", "bench-urgent"
STEADY_SECONDS, SAMPLE_SECONDS = 10.0, 0.1
INSECURE = ssl.create_default_context()  # for the webhook's generated, self-signed certificate
INSECURE.check_hostname, INSECURE.verify_mode = False, ssl.CERT_NONE
MIB = 1024 * 1024


def pod_name(index: int) -> tuple[str, str]:
    return f"bench-{index % NAMESPACES}", f"worker-{index:06d}"


def container(name: str, port: int, index: int) -> dict[str, Any]:
    return {
        "name": name,
        "image": f"batch/{name}:1.{index % 7}.3",
        "imagePullPolicy": "IfNotPresent",
        "args": ["--config=/etc/app/config.yaml", "--log-level=info", f"--shard={index % 64}"],
        "ports": [{"name": f"{name[:6]}-http", "containerPort": port, "protocol": "TCP"}],
        "env": [{"name": f"APP_SETTING_{k}", "value": f"value-{k}-{index % 13}"} for k in range(6)]
        + [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/app", "readOnly": True},
            {"name": "scratch", "mountPath": "/scratch"},
            {"name": "tls", "mountPath": "/etc/tls", "readOnly": True},
        ],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": port}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": port}, "initialDelaySeconds": 15},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }


def pod_manifest(index: int, nodes: int) -> dict[str, Any]:
    namespace, name = pod_name(index)
    app = f"svc-{index % 200:03d}"
    pending = index % PENDING_EVERY == PENDING_EVERY - 1
    digest = hashlib.sha256(str(index).encode()).hexdigest()
    spec: dict[str, Any] = {
        "containers": [container("main", 8080, index), container("sidecar", 9090, index)],
        "volumes": [
            {"name": "config", "configMap": {"name": f"{app}-config"}},
            {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
            {"name": "tls", "secret": {"secretName": f"{app}-tls", "defaultMode": 0o440}},
        ],
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "spot", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 600},
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}
                    ]
                }
            }
        },
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "priorityClassName": HIGH if pending else LOW,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "fsGroup": 10001},
        "terminationGracePeriodSeconds": 30,
    }
    if pending:
        spec["schedulerName"] = "batch-scheduler"
    else:
        spec["nodeName"] = f"bench-node-{index % nodes:03d}"
    labels = {
        "app.kubernetes.io/name": app,
        "app.kubernetes.io/instance": f"{app}-prod",
        "app.kubernetes.io/component": "worker",
        "app.kubernetes.io/part-of": "batch-platform",
        "pod-template-hash": digest[:10],
        "team": f"team-{index % 40}",
    }
    annotations = {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9090",
        "checksum/config": digest,
        "kubectl.kubernetes.io/default-container": "main",
        "example.com/owner": f"team-{index % 40}@example.com",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations},
        "spec": spec,
    }


def pod_status(index: int, pod: dict[str, Any]) -> dict[str, Any]:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if "nodeName" not in pod["spec"]:
        return {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "lastTransitionTime": now,
                    "message": f"0/{NODES} nodes are available: {NODES} Insufficient nvidia.com/gpu.",
                }
            ],
        }
    digest = pod["metadata"]["annotations"]["checksum/config"]
    ip = f"10.{index // 62500 % 250 + 1}.{index // 250 % 250}.{index % 250 + 1}"
    host = f"192.168.{index % NODES // 250}.{index % NODES % 250 + 1}"
    return {  # KWOK may have marked it Running first (with its own IPs): this replaces them consistently
        "phase": "Running",
        "hostIP": host,
        "hostIPs": [{"ip": host}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": now,
        "qosClass": "Burstable",
        "conditions": [
            {"type": kind, "status": "True", "lastTransitionTime": now}
            for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
        "containerStatuses": [
            {
                "name": c["name"],
                "image": c["image"],
                "imageID": f"docker-pullable://batch/{c['name']}@sha256:{digest}",
                "containerID": f"containerd://{digest}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
            for c in pod["spec"]["containers"]
        ],
    }


async def prepare(cluster: LocalCluster, nodes: int) -> None:
    async with await api_client(cluster) as api:
        for name, value in ((LOW, 8000), (HIGH, 9000)):
            body = {"metadata": {"name": name}, "value": value, "description": "webhook_memory benchmark"}
            await client.SchedulingV1Api(api).create_priority_class(body)
        for i in range(NAMESPACES):
            await ensure_namespace(api, pod_name(i)[0])
        await bounded(range(nodes), lambda i: create_node(api, f"bench-node-{i:03d}", pods="1000"), 16)


async def populate(cluster: LocalCluster, start: int, stop: int, nodes: int) -> None:
    """Create pods start..stop-1, each followed by its status, IN_FLIGHT at a time."""
    async with await api_client(cluster, IN_FLIGHT) as api:
        core = client.CoreV1Api(api)

        async def create(index: int) -> None:
            namespace, name = pod_name(index)
            pod = pod_manifest(index, nodes)
            try:
                await with_retries(lambda: raw(core.create_namespaced_pod(namespace, pod, _preload_content=False)))
            except ApiException as error:
                if error.status != 409:  # 409: a retried create that had worked
                    raise
            patch = {"status": pod_status(index, pod)}
            await with_retries(
                lambda: raw(
                    core.patch_namespaced_pod_status(
                        name, namespace, patch, _content_type=MERGE_PATCH, _preload_content=False
                    )
                )
            )

        await bounded(range(start, stop), create, IN_FLIGHT)


async def api_figures(cluster: LocalCluster, pods: int) -> dict[str, Any]:
    """A pod's JSON as the API server returns it (mean of a few), and one list of all pods (streamed)."""
    async with await api_client(cluster) as api:
        core = client.CoreV1Api(api)
        sizes = []
        for namespace, name in map(pod_name, range(min(pods, 20))):  # one in ten of them Pending
            sizes.append(len(await raw(core.read_namespaced_pod(name, namespace, _preload_content=False))))
        started = time.monotonic()
        response = await core.list_pod_for_all_namespaces(_preload_content=False, _request_timeout=1800)
        total = 0
        async for chunk in response.content.iter_chunked(1 << 20):
            total += len(chunk)
        return {
            "pod_json_bytes": round(statistics.mean(sizes)) if sizes else None,
            "list_bytes": total,
            "list_seconds": round(time.monotonic() - started, 2),
        }


def read_kib(pid: int, *keys: str) -> list[int]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return [int(fields[key].split()[0]) for key in keys]


class Sampler(threading.Thread):
    """Samples VmRSS of `pid` every SAMPLE_SECONDS, as (monotonic time, bytes)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, int]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(SAMPLE_SECONDS):
            try:
                self.samples.append((time.monotonic(), read_kib(self.pid, "VmRSS")[0] * 1024))
            except (OSError, KeyError):
                return


def is_ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=INSECURE, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:  # refused, 503 (HTTPError), timeout
        return False


def baseline_launch(checkout: Path) -> tuple[tuple[str, ...], dict[str, str]]:
    """What runs the `ptol` of another checkout with this Python: its package first on the path, and no
    current directory on it (-P), which would otherwise put this checkout's package first."""
    return (sys.executable, "-P", "-m", "preemption_toleration"), {"PYTHONPATH": str(checkout.resolve())}


def measure_webhook(
    cluster: LocalCluster,
    pods: int,
    ready_timeout: float,
    log_name: str,
    launch: tuple[tuple[str, ...], dict[str, str]] = ((), {}),
) -> dict[str, Any]:
    port = free_port()
    launcher, env = launch
    webhook = ComponentProcess(
        "webhook",
        cluster.kubeconfig,
        cluster.logs_dir / log_name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        log_level="WARNING",
        launcher=launcher,
        env=env,
    )
    started = time.monotonic()
    webhook.start()
    assert webhook.process is not None
    sampler = Sampler(webhook.process.pid)
    sampler.start()
    try:
        while not is_ready(port):
            if not webhook.running() or time.monotonic() - started > ready_timeout:
                return {"ready_seconds": None, "problem": f"not ready (log: {webhook.log_path.name})"}
            time.sleep(SAMPLE_SECONDS)
        ready_at = time.monotonic()
        time.sleep(STEADY_SECONDS)
        page = scrape(f"https://127.0.0.1:{port}/metrics", context=INSECURE, timeout=5)
        cached = total(page, "ptol_webhook_cache_objects", kind="pods")
        peak = read_kib(webhook.process.pid, "VmHWM")[0] * 1024
    finally:
        sampler.stopped.set()
        sampler.join()
        webhook.stop()
    steady = int(statistics.median(rss for t, rss in sampler.samples if t >= ready_at))
    return {
        "ready_seconds": round(ready_at - started, 2),
        "steady_rss": steady,
        "peak_rss": peak,
        "max_sampled_rss": max(rss for _, rss in sampler.samples),
        "cached_pods": int(cached),
    }


def rss_of(cluster: LocalCluster, name: str) -> int | None:
    for component in cluster.status():
        if component.name == name and component.running:
            return read_kib(component.pid, "VmRSS")[0] * 1024
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"N = {', '.join(map(str, QUICK))} only")
    parser.add_argument("--max", type=int, default=50_000, help="largest N (default 50000; 150000 adds the last step)")
    parser.add_argument("--nodes", type=int, default=NODES, help="simulated Nodes the pods are bound to")
    parser.add_argument("--sizes", help="comma-separated N to measure, instead of the ladder up to --max")
    parser.add_argument("--ready-timeout", type=float, default=600.0, help="seconds to wait for /readyz")
    parser.add_argument("--baseline", type=Path, help="a checkout whose webhook is measured alternately with this one")
    parser.add_argument("--rounds", type=int, default=1, help="measurements per N of each checkout's webhook")
    parser.add_argument("--dir", help="cluster directory to keep (default: a temporary one)")
    parser.add_argument(
        "--save-as",
        default="webhook_memory",
        metavar="NAME",
        help="results file benchmarks/results/NAME.json, e.g. to keep a baseline run apart",
    )
    args = parser.parse_args()
    if args.sizes:
        sizes = sorted({int(n) for n in args.sizes.split(",")})
    else:
        sizes = list(QUICK) if args.quick else sorted({n for n in LADDER if n <= args.max} | {args.max})
    launches = {"current": ((), {})} | ({"baseline": baseline_launch(args.baseline)} if args.baseline else {})
    rows: list[dict[str, Any]] = []
    print(
        f"{'pods':>7} {'code':>8} {'round':>5} {'create s':>8} {'ready s':>7} {'steady MiB':>10} {'peak MiB':>8} "
        f"{'peak/st':>7} {'B/pod':>6} {'pod JSON B':>10} {'list MB':>8} {'list s':>6} {'apisrv MiB':>10} "
        f"{'etcd MB':>7}"
    )
    with local_cluster(args.dir) as cluster:
        install_crd(cluster)
        asyncio.run(prepare(cluster, args.nodes))
        created = 0
        for pods in sizes:
            started = time.monotonic()
            asyncio.run(populate(cluster, created, pods, args.nodes))
            create_seconds = round(time.monotonic() - started, 1)
            created = pods
            measured = []
            for round_number in range(1, args.rounds + 1):
                for code, launch in launches.items():  # alternately, so that the machine's load falls on both
                    row: dict[str, Any] = {"pods": pods, "code": code, "round": round_number}
                    log_name = f"webhook-{code}-{pods}-{round_number}.log"
                    measured.append(row | measure_webhook(cluster, pods, args.ready_timeout, log_name, launch))
            shared = {"create_seconds": create_seconds} | asyncio.run(api_figures(cluster, pods))
            shared["apiserver_rss"] = rss_of(cluster, "kube-apiserver")
            shared["etcd_db_bytes"] = (cluster.directory / "etcd" / "member" / "snap" / "db").stat().st_size
            for row in measured:
                row |= shared
                empty = next((r for r in rows if r["code"] == row["code"] and r["round"] == row["round"]), None)
                if row.get("steady_rss"):
                    row["peak_over_steady"] = round(row["peak_rss"] / row["steady_rss"], 2)
                    if empty and empty.get("steady_rss") and pods:
                        row["bytes_per_pod"] = round((row["steady_rss"] - empty["steady_rss"]) / pods)
                rows.append(row)
                print(
                    f"{pods:>7} {row['code']:>8} {row['round']:>5} {row['create_seconds']:>8} "
                    f"{fmt(row.get('ready_seconds')):>7} {mib(row.get('steady_rss')):>10} "
                    f"{mib(row.get('peak_rss')):>8} {fmt(row.get('peak_over_steady')):>7} "
                    f"{fmt(row.get('bytes_per_pod')):>6} {fmt(row['pod_json_bytes']):>10} "
                    f"{row['list_bytes'] / 1e6:>8.1f} {row['list_seconds']:>6} {mib(row['apiserver_rss']):>10} "
                    f"{row['etcd_db_bytes'] / 1e6:>7.0f}  {row.get('problem', '')}",
                    flush=True,
                )
            save(args, rows)  # after each N: a run stopped at a larger N keeps what it measured
    print("targets: peak <= 1.5 x steady; steady <= empty-cluster RSS + 1024 B per pod")
    for row in rows:
        if row["code"] == "current" and row["pods"] and "peak_over_steady" in row:
            print(
                f"  N={row['pods']} round {row['round']}: peak/steady {row['peak_over_steady']} "
                f"({'met' if row['peak_over_steady'] <= 1.5 else 'missed'}), {row.get('bytes_per_pod')} B/pod "
                f"({'met' if row.get('bytes_per_pod', 1 << 30) <= 1024 else 'missed'})"
            )
    if args.baseline:
        print_comparison(rows)
    print(f"saved to {shown(save(args, rows))}")


def save(args: argparse.Namespace, rows: list[dict[str, Any]]) -> Path:
    return save_results(
        args.save_as,
        {
            "nodes": args.nodes,
            "pending_fraction": 1 / PENDING_EVERY,
            "steady_seconds": STEADY_SECONDS,
            "baseline": commit_of(args.baseline) if args.baseline else None,
            "rows": rows,
        },
    )


def commit_of(checkout: Path) -> str:
    """The checkout's commit, which the results name rather than a path of this machine."""
    found = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() or checkout.name


def print_comparison(rows: list[dict[str, Any]]) -> None:
    """Per N, this checkout's median steady RSS, peak RSS and time to ready over the baseline's."""
    print("this checkout over the baseline (medians of the rounds): steady RSS, peak RSS, time to ready")
    for pods in sorted({row["pods"] for row in rows}):

        def median(code: str, key: str, pods: int = pods) -> float | None:
            values = [row[key] for row in rows if row["pods"] == pods and row["code"] == code and row.get(key)]
            return statistics.median(values) if values else None

        ratios = []
        for key in ("steady_rss", "peak_rss", "ready_seconds"):
            current, baseline = median("current", key), median("baseline", key)
            ratios.append(f"{current / baseline:.3f}x" if current and baseline else "-")
        print(f"  N={pods}: " + ", ".join(ratios))


def fmt(value: object) -> str:
    return "-" if value is None else str(value)


def mib(value: int | None) -> str:
    return "-" if value is None else f"{value / MIB:.1f}"


if __name__ == "__main__":
    main()
