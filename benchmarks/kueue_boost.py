"""Kueue's boost at work (`ptol run --kueue on`), on a local control plane with Kueue (`--feature kueue`).

1. **Admission.** How long Kueue takes to admit N Jobs (one pod of 1 CPU each, whose pods keep running) of a
   protected class, queued at once by one `kubectl apply`, into a ClusterQueue with room for all: from the apply to
   the last Workload admitted, in three settings: without the webhook server (off); with it (on), where no pending
   Workload may take the protected ones, so no boost is needed; and with it where a Job of 9000 waits in a held
   LocalQueue of the same ClusterQueue before the apply (threatened), so that every admitted Job is boosted. A
   fourth, `base` (`--settings off,base,on`), runs the server with `--kueue off`: what the project costs without its
   Kueue part (its pod cache, its webhooks). Each round runs them in a rotated order so that a drift of the machine
   weighs on all; reported: each round, with what the API server counted meanwhile (writes by resource, each
   webhook's calls and mean time), the medians and their ratios to off (target: at most 1.1), and the boosts
   written. In the off and on settings, once the Jobs are admitted, a Job of 9000 is queued: from its apply to its
   Workload created (with the server, its creation waits for the boosts of the thousand Jobs it threatens, at most 5
   s).
2. **A window's end.** A Job of a class protected for WINDOW seconds fills a ClusterQueue of 4 CPUs; a Job of a
   priority below the minimum waits (Kueue found no victim); from the end of the window (the last pod's
   PodScheduled time + WINDOW, as the server reads it) to the waiting Job admitted, polled every 0.1 s, in
   --trials trials.

Saves benchmarks/results/kueue_boost.json. Run (Kueue is built the first time, about 8 minutes):

    .venv/bin/python benchmarks/kueue_boost.py [--jobs 1000] [--rounds 3] [--trials 5] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _cluster import local_cluster
from _common import save_results, shown
from _webhook_bench import cpu_seconds

from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY, TOLERATION_SECONDS
from preemption_toleration.devcluster import LocalCluster
from tests.integration.components import RunProcess, install_crd
from tests.integration.kueue_objects import running_job
from tests.metrics import samples, total

KUEUE_API = "kueue.x-k8s.io/v1beta2"
WINDOW = 10  # seconds of the window trials' toleration
NODE_CPUS = 200


def kubectl(cluster: LocalCluster, *args: str, input: str | None = None) -> str:
    found = subprocess.run(cluster.kubectl_argv(*args), input=input, text=True, capture_output=True, check=False)
    if found.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {found.stderr.strip()}")
    return found.stdout


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    kubectl(cluster, "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


def priority_class(name: str, value: int, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "annotations": annotations or {}},
        "value": value,
    }


def queue(name: str, cpus: int) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {"matchLabels": {"bench-queue": name}},
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "bench", "resources": [{"name": "cpu", "nominalQuota": str(cpus)}]}],
                }
            ],
        },
    }


def held_threat(cluster: LocalCluster, namespace: str, cluster_queue: str) -> None:
    """A Job of 9000 (below the protected minimum) pending in a held LocalQueue of `cluster_queue`: it may take
    any protected Job Kueue admits, so each is boosted, but Kueue never tries it."""
    apply(
        cluster,
        {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": {"name": "held", "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue, "stopPolicy": "Hold"},
        },
        running_job("threat", "held", "bench-high", 1, namespace),
    )
    until(
        "the held Job's Workload",
        lambda: any(w["metadata"]["name"].startswith("job-threat") for w in workloads(cluster, namespace)),
        60,
        every=0.1,
    )


def namespace_with_queue(cluster: LocalCluster, namespace: str, cluster_queue: str) -> None:
    apply(
        cluster,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "labels": {"bench-queue": cluster_queue}},
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue},
        },
    )


def job(name: str, namespace: str, priority_class: str, pods: int) -> dict[str, Any]:
    return running_job(name, "lq", priority_class, pods, namespace)


def workloads(cluster: LocalCluster, namespace: str) -> list[dict[str, Any]]:
    return json.loads(kubectl(cluster, "get", "workloads", "-n", namespace, "-o", "json"))["items"]


def condition(workload: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in workload.get("status", {}).get("conditions", []) if c["type"] == kind), None)


def is_admitted(workload: dict[str, Any]) -> bool:
    admitted = condition(workload, "Admitted")
    return admitted is not None and admitted["status"] == "True"


def until(what: str, check: Any, timeout: float, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(every)
    raise RuntimeError(f"{what}: not within {timeout:.0f} s")


def delete_namespace(cluster: LocalCluster, namespace: str) -> None:
    # the Jobs first: the namespace controller, finding content left behind a finalizer, backs off for minutes
    kubectl(cluster, "delete", "jobs", "--all", "-n", namespace, "--wait=true", "--timeout=300s")
    kubectl(cluster, "delete", "namespace", namespace, "--wait=true", "--timeout=300s")


def admitted_count(cluster: LocalCluster, cluster_queue: str) -> int:
    """The ClusterQueue's admitted Workloads, as Kueue counts them in its status (one small object to read, where
    listing a thousand Workloads every second would load the API server more than what is measured)."""
    text = kubectl(cluster, "get", "clusterqueue", cluster_queue, "-o", "jsonpath={.status.admittedWorkloads}")
    return int(text or 0)


def cpu_by_process(cluster: LocalCluster, server: RunProcess | None) -> dict[str, float]:
    """CPU seconds used so far by each control-plane process, Kueue's manager and the webhook server."""
    pids = {status.name: status.pid for status in cluster.status() if status.running and status.pid}
    if server is not None and server.process is not None:
        pids["ptol"] = server.process.pid
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


WEBHOOK_DURATION = "apiserver_admission_webhook_admission_duration_seconds"


def api_counters(cluster: LocalCluster) -> dict[str, float]:
    """The API server's requests by resource and verb (`requests workloads PATCH`), and its calls of each
    admission webhook by name and operation with their seconds (`webhook NAME CREATE calls`, `... seconds`): read
    before and after each admission, what each setting asked of it."""
    text = kubectl(cluster, "get", "--raw", "/metrics")
    found: dict[str, float] = {}

    def add(key: str, value: float) -> None:
        found[key] = found.get(key, 0.0) + value

    for sample in samples(text, "apiserver_request_total"):
        add(f"requests {sample.labels.get('resource', '')} {sample.labels.get('verb', '')}", sample.value)
    for suffix, what in (("_count", "calls"), ("_sum", "seconds")):
        for sample in samples(text, WEBHOOK_DURATION + suffix):
            add(f"webhook {sample.labels.get('name')} {sample.labels.get('operation')} {what}", sample.value)
    return found


def counted(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """What changed between two readings of `api_counters`, the unchanged left out."""
    return {key: round(value - before.get(key, 0.0), 3) for key, value in after.items() if value != before.get(key)}


def admission_round(
    cluster: LocalCluster, n: int, label: str, timeout: float, server: RunProcess | None, threatened: bool = False
) -> tuple[float, dict[str, float], float | None, dict[str, float], float]:
    """Seconds from one `kubectl apply` of n protected Jobs to the last Workload admitted, the CPU seconds each
    process used meanwhile, unless `threatened` (a Job that may take them waits from the start, `held_threat`)
    the seconds from the apply of such a Job once they are admitted to its Workload created (with the server,
    its creation waits for their boosts), what the API server counted meanwhile (`api_counters`), and the
    boosts the server wrote by the last admission."""
    namespace = f"admit-{label}"
    namespace_with_queue(cluster, namespace, "bench-admit")
    if threatened:
        held_threat(cluster, namespace, "bench-admit")
    jobs = [job(f"j{i:04d}", namespace, "bench-protected", 1) for i in range(n)]
    requests = api_counters(cluster)
    before = cpu_by_process(cluster, server)
    started = time.monotonic()
    apply(cluster, *jobs)
    until(f"{n} Workloads admitted", lambda: admitted_count(cluster, "bench-admit") >= n, timeout, every=0.25)
    seconds = time.monotonic() - started
    after = cpu_by_process(cluster, server)
    requests = counted(requests, api_counters(cluster))
    boosts = boosts_applied(server) if server is not None else 0.0
    threat_seconds = None
    if not threatened:
        threat_started = time.monotonic()
        held_threat(cluster, namespace, "bench-admit")
        threat_seconds = time.monotonic() - threat_started
    delete_namespace(cluster, namespace)
    until("the ClusterQueue emptied", lambda: admitted_count(cluster, "bench-admit") == 0, timeout)
    cpu = {name: round(after[name] - before.get(name, 0.0), 1) for name in after}
    return seconds, cpu, threat_seconds, requests, boosts


def shown_requests(requests: dict[str, float]) -> str:
    """The API server's counts an admission changed most: writes by resource, and each webhook's calls with
    their mean time."""
    writes = sorted(
        ((key, value) for key, value in requests.items() if key.startswith("requests ") and " WATCH" not in key),
        key=lambda item: -item[1],
    )[:8]
    hooks = []
    for key, calls in requests.items():
        if key.startswith("webhook ") and key.endswith(" calls") and calls:
            spent = requests.get(key.removesuffix(" calls") + " seconds", 0.0)
            hooks.append(
                f"{key.removeprefix('webhook ').removesuffix(' calls')} {calls:.0f} ({spent / calls * 1000:.1f} ms)"
            )
    return (
        ", ".join(f"{key.removeprefix('requests ')} {value:.0f}" for key, value in writes)
        + "; webhooks: "
        + ", ".join(hooks)
    )


def boosts_applied(server: RunProcess) -> float:
    import urllib.request

    with urllib.request.urlopen(f"{server.metrics_base}/metrics", timeout=5) as answer:
        return total(answer.read().decode(), "ptol_kueue_boosts_total", outcome="applied")


def window_trial(cluster: LocalCluster, trial: int) -> float:
    """Seconds from a window's end to the Job that waited on it admitted."""
    namespace = f"window-{trial}"
    until("the window's ClusterQueue empty", lambda: admitted_count(cluster, "bench-window") == 0, 120)
    namespace_with_queue(cluster, namespace, "bench-window")
    apply(cluster, job("kept", namespace, "bench-window", 4))
    until("the kept Job admitted", lambda: is_admitted(workload_of(cluster, namespace, "kept") or {}), 120)
    apply(cluster, job("waiting", namespace, "bench-high", 4))  # its creation waits for the kept Job's boost
    until("the kept Job's boost", lambda: _boost(cluster, namespace, "kept") is not None, 120)

    def tried() -> bool:
        found = workload_of(cluster, namespace, "waiting")
        reserved = condition(found, "QuotaReserved") if found else None
        return reserved is not None and reserved["status"] == "False"

    until("Kueue's try of the waiting Job", tried, 60)

    def scheduled_times() -> list[datetime]:
        pods = json.loads(kubectl(cluster, "get", "pods", "-n", namespace, "-l", "job-name=kept", "-o", "json"))
        return [
            datetime.fromisoformat(c["lastTransitionTime"].replace("Z", "+00:00"))
            for pod in pods["items"]
            for c in pod["status"].get("conditions", [])
            if c["type"] == "PodScheduled" and c["status"] == "True"
        ]

    scheduled = until("the kept Job's 4 pods scheduled", lambda: len(found := scheduled_times()) == 4 and found, 60)
    end = max(scheduled).timestamp() + WINDOW
    until(
        "the waiting Job admitted",
        lambda: is_admitted(workload_of(cluster, namespace, "waiting") or {}),
        WINDOW + 120,
        every=0.1,
    )
    seconds = datetime.now(UTC).timestamp() - end
    delete_namespace(cluster, namespace)
    return seconds


def workload_of(cluster: LocalCluster, namespace: str, job_name: str) -> dict[str, Any] | None:
    return next(
        (
            w
            for w in workloads(cluster, namespace)
            if any(o.get("name") == job_name for o in w["metadata"].get("ownerReferences", []))
        ),
        None,
    )


def _boost(cluster: LocalCluster, namespace: str, job_name: str) -> str | None:
    found = workload_of(cluster, namespace, job_name) or {}
    return (found.get("metadata", {}).get("annotations") or {}).get("kueue.x-k8s.io/priority-boost")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each setting (off and on)")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument(
        "--settings", default="off,on,threatened", help="the admission settings to run, comma-separated (off first)"
    )
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--dir", help="keep the cluster's directory (logs) here")
    args = parser.parse_args()
    nodes = -(-args.jobs // NODE_CPUS) + 1
    with local_cluster(args.dir, features=("kueue",)) as cluster:
        install_crd(cluster)
        protected = {MINIMUM_PREEMPTABLE_PRIORITY: "10000", TOLERATION_SECONDS: "-1"}
        window = {MINIMUM_PREEMPTABLE_PRIORITY: "10000", TOLERATION_SECONDS: str(WINDOW)}
        apply(
            cluster,
            priority_class("bench-protected", 8000, protected),
            priority_class("bench-window", 8000, window),
            priority_class("bench-high", 9000),
            {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "bench"}},
            queue("bench-admit", args.jobs),
            queue("bench-window", 4),
            *(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": f"bench-{i}"},
                    "status": {
                        "allocatable": {"cpu": str(NODE_CPUS), "memory": "1Ti", "pods": "1000"},
                        "capacity": {"cpu": str(NODE_CPUS), "memory": "1Ti", "pods": "1000"},
                    },
                }
                for i in range(nodes)
            ),
        )
        kubectl(cluster, "wait", "--for=condition=Ready", "node", "--all", "--timeout=120s")
        rounds: list[dict[str, Any]] = []
        settings = tuple(args.settings.split(","))
        for round_index in range(args.rounds):
            order = settings[round_index % len(settings) :] + settings[: round_index % len(settings)]
            for setting in order:
                label = f"{setting}-{round_index}"
                if setting != "off":
                    server = RunProcess(cluster, "--kueue", "off" if setting == "base" else "on")
                    server.start()
                    try:
                        threatened = setting == "threatened"
                        seconds, cpu, held, requests, admitting = admission_round(
                            cluster, args.jobs, label, args.timeout, server, threatened
                        )
                        boosts = boosts_applied(server)
                    finally:
                        server.stop()
                else:
                    seconds, cpu, held, requests, admitting = admission_round(
                        cluster, args.jobs, label, args.timeout, None
                    )
                    boosts = 0.0
                rounds.append(
                    {
                        "setting": setting,
                        "round": round_index,
                        "seconds": seconds,
                        "boosts": boosts,
                        "boosts_while_admitting": admitting,
                        "cpu": cpu,
                        "api_server": requests,
                        "threat_created_seconds": held,
                    }
                )
                print(
                    f"round {round_index} {setting:>10}: {args.jobs} Jobs admitted in {seconds:6.1f} s"
                    + (f", {admitting:.0f} boosts written by then, {boosts:.0f} in all" if setting != "off" else "")
                    + (f"; a threatening Job's Workload created {held:.2f} s after its apply" if held else "")
                    + "; CPU s: "
                    + ", ".join(f"{name} {value:.1f}" for name, value in sorted(cpu.items())),
                    flush=True,
                )
                print(f"  API server meanwhile: {shown_requests(requests)}", flush=True)
        medians = {
            setting: statistics.median(r["seconds"] for r in rounds if r["setting"] == setting) for setting in settings
        }
        off = medians["off"]
        print(
            "median: "
            + ", ".join(f"{setting} {seconds:.1f} s ({seconds / off:.2f} x)" for setting, seconds in medians.items())
            + " (target for on: <= 1.1 x)"
        )
        trials: list[float] = []
        server = RunProcess(cluster, "--kueue", "on")
        server.start()
        try:
            for trial in range(args.trials):
                seconds = window_trial(cluster, trial)
                trials.append(seconds)
                print(
                    f"window trial {trial}: the waiting Job admitted {seconds:.2f} s after the window's end", flush=True
                )
        finally:
            server.stop()
        if trials:
            print(f"window's end to admission: median {statistics.median(trials):.2f} s, max {max(trials):.2f} s")
    path = save_results(
        "kueue_boost",
        {
            "jobs": args.jobs,
            "admission_rounds": rounds,
            "admission_median_seconds": medians,
            "admission_ratios_to_off": {setting: seconds / off for setting, seconds in medians.items()},
            "window_seconds": WINDOW,
            "window_end_to_admitted_seconds": trials,
        },
    )
    print(f"saved to {shown(path)}")


if __name__ == "__main__":
    main()
