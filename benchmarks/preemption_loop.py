"""The scheduler's retry loop against a protected victim, with the guard alone and with the extender.

With asynchronous preemption (beta, on by default since Kubernetes 1.33) a victim the guard refuses sends
its preemptor straight back to the scheduling queue, and the scheduler tries again at once. This script
measures that loop on the local control plane (1.37.2 by default; `PTOL_KUBERNETES_VERSION` picks another):
one node, one victim whose class tolerates preemption below priority 10000 for 10 minutes, and one pending
preemptor of priority 9000 that fits only in the victim's place. For `--seconds` (60) per phase it counts
the guard's refusals, the scheduler's attempts (its own metrics), the API server's requests and the
scheduler's CPU time. Phases, side by side in one run, each on a fresh node, victim and preemptor:

- idle: no preemptor (what the control plane does anyway, to subtract);
- guard, answered at once: `ptol webhook --retry-hold-seconds 0`;
- guard, retries held: the default `--retry-hold-seconds 1`;
- with the extender: the scheduler configured with our extender, which never proposes the protected victim.

Needs the control-plane binaries (`ptol dev cluster install`). Run:

    .venv/bin/python benchmarks/preemption_loop.py [--seconds S]

Prints a table and saves it to benchmarks/results/preemption_loop.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from _cluster import api_client, local_cluster
from _common import save_results, shown
from _webhook_bench import cpu_seconds, https, install_crd, ptol_webhook
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY as MIN
from preemption_toleration.core.annotations import TOLERATION_SECONDS as TOL
from preemption_toleration.devcluster import LocalCluster, create_node, ensure_namespace
from preemption_toleration.manifests.scheduler_extender import scheduler_extender_of
from preemption_toleration.manifests.webhook_configurations import GUARD_NAME
from tests.builders import pod
from tests.metrics import total

NAMESPACE = "loop"
CLASSES = {"high": (9000, {}), "protected-10min": (8000, {MIN: "10000", TOL: "600"})}
METRICS_READER = "bench-metrics-reader"


def _kubectl(cluster: LocalCluster, *args: str, input: str | None = None) -> str:
    return subprocess.run(cluster.kubectl_argv(*args), input=input, capture_output=True, text=True, check=True).stdout


def scheduler_token(cluster: LocalCluster) -> str:
    """A token allowed to read the scheduler's /metrics (which authorizes through the API server)."""
    manifests = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": METRICS_READER, "namespace": NAMESPACE}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": METRICS_READER},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": METRICS_READER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": METRICS_READER},
            "subjects": [{"kind": "ServiceAccount", "name": METRICS_READER, "namespace": NAMESPACE}],
        },
    ]
    _kubectl(cluster, "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests}))
    return _kubectl(cluster, "create", "token", METRICS_READER, "-n", NAMESPACE).strip()


class Probe:
    """Counters of the scheduler, the API server and the guard, read before and after a phase."""

    def __init__(self, cluster: LocalCluster, token: str) -> None:
        self.cluster = cluster
        self.token = token

    def _scheduler_metrics(self) -> str:
        import ssl
        import urllib.request

        port = json.loads((self.cluster.directory / "cluster.json").read_text())["ports"]["scheduler"]
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        request = urllib.request.Request(
            f"https://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.read().decode()

    def read(self, guard: str | None) -> dict[str, float]:
        scheduler = self._scheduler_metrics()
        apiserver = _kubectl(self.cluster, "get", "--raw", "/metrics")
        [pid] = [status.pid for status in self.cluster.status() if status.name == "kube-scheduler"]
        figures = {
            "scheduler_attempts": total(scheduler, "scheduler_schedule_attempts_total"),
            "preemption_attempts": total(scheduler, "scheduler_preemption_attempts_total"),
            "scheduler_cpu_s": cpu_seconds(pid) if pid else 0.0,
            "apiserver_requests": total(apiserver, "apiserver_request_total"),
            "guard_requests": 0.0,
            "guard_refusals": 0.0,
        }
        if guard is not None:
            status, text = https(f"{guard}/metrics")
            if status == 200:
                page = text.decode()
                figures["guard_requests"] = total(page, "ptol_webhook_requests_total", endpoint="guard")
                figures["guard_refusals"] = total(page, "ptol_guard_refusals_total")
        return figures


async def prepare(api: ApiClient) -> None:
    await ensure_namespace(api, NAMESPACE)
    for name, (value, notes) in CLASSES.items():
        await client.SchedulingV1Api(api).create_priority_class(
            {"metadata": {"name": name, "annotations": notes}, "value": value}
        )


def pinned_pod(name: str, class_name: str, node: str) -> dict[str, Any]:
    """A pod of 2 CPUs kept to the phase's node, deleted at once when preempted."""
    return pod(name, class_name=class_name, namespace=None, pinned_to=node, cpu="2", grace_seconds=0)


async def start_loop(api: ApiClient, phase: int, with_preemptor: bool) -> tuple[str, str]:
    """A node of 2 CPUs, the protected victim bound on it, and (unless idle) the preemptor: (victim, node)."""
    core = client.CoreV1Api(api)
    node = f"loop-node-{phase}"
    await create_node(api, node, cpu="2", memory="8Gi", pods="110")
    victim = f"victim-{phase}"
    await core.create_namespaced_pod(NAMESPACE, pinned_pod(victim, "protected-10min", node))
    for _ in range(300):
        found = await core.read_namespaced_pod(victim, NAMESPACE)
        if found.status.phase == "Running":
            break
        await asyncio.sleep(0.1)
    else:
        raise SystemExit(f"{victim} did not run within 30 s")
    if with_preemptor:
        await core.create_namespaced_pod(NAMESPACE, pinned_pod(f"preemptor-{phase}", "high", node))
    return victim, node


async def end_loop(api: ApiClient, phase: int) -> dict[str, Any]:
    """Deletes the phase's pods and node; what became of the victim and the preemptor."""
    core = client.CoreV1Api(api)
    victim = await core.read_namespaced_pod(f"victim-{phase}", NAMESPACE)
    outcome: dict[str, Any] = {
        "victim_running": victim.status.phase == "Running" and victim.metadata.deletion_timestamp is None,
        "victim_disruption_target": any(c.type == "DisruptionTarget" for c in victim.status.conditions or []),
    }
    try:
        preemptor = await core.read_namespaced_pod(f"preemptor-{phase}", NAMESPACE)
        outcome["preemptor_bound"] = bool(preemptor.spec.node_name)
        await core.delete_namespaced_pod(f"preemptor-{phase}", NAMESPACE, grace_period_seconds=0)
    except client.exceptions.ApiException as error:
        if error.status != 404:
            raise
    await core.delete_namespaced_pod(f"victim-{phase}", NAMESPACE, grace_period_seconds=0)
    await client.CoreV1Api(api).delete_node(f"loop-node-{phase}")
    return outcome


def measure(
    cluster: LocalCluster,
    probe: Probe,
    phase: int,
    label: str,
    seconds: int,
    webhook: Callable[[], AbstractContextManager[tuple[str, int] | None]],
    with_preemptor: bool = True,
) -> dict[str, Any]:
    async def run(action: Callable[[ApiClient], Any]) -> Any:
        async with await api_client(cluster) as api:
            return await action(api)

    with webhook() as served:
        guard = served[0] if served else None
        asyncio.run(run(lambda api: start_loop(api, phase, with_preemptor)))
        time.sleep(5)  # the first attempts, and the victim's own start, are not the steady loop
        before, started = probe.read(guard), time.monotonic()
        time.sleep(seconds)
        after, elapsed = probe.read(guard), time.monotonic() - started
        outcome = asyncio.run(run(lambda api: end_loop(api, phase)))
    rates = {key: round((after[key] - before[key]) / elapsed, 2) for key in after}
    row = {"phase": label, "seconds": round(elapsed, 1), "per_second": rates, **outcome}
    print(
        f"{label:<28} {rates['guard_refusals']:>9.2f} {rates['scheduler_attempts']:>9.2f} "
        f"{rates['preemption_attempts']:>10.2f} {rates['apiserver_requests']:>9.1f} "
        f"{100 * rates['scheduler_cpu_s']:>8.1f}%  victim {'running' if outcome['victim_running'] else 'GONE'}"
        f"{', DisruptionTarget' if outcome['victim_disruption_target'] else ''}",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60, help="seconds measured per phase (default 60)")
    parser.add_argument("--dir", help="keep the cluster's directory (logs) here instead of a temporary one")
    args = parser.parse_args()

    with local_cluster(args.dir) as cluster:
        install_crd(cluster)

        async def setup() -> None:
            async with await api_client(cluster) as api:
                await prepare(api)

        asyncio.run(setup())
        probe = Probe(cluster, scheduler_token(cluster))

        def webhook(hold: str) -> Callable[[], AbstractContextManager[tuple[str, int] | None]]:
            return lambda: ptol_webhook(cluster, register=True, extra_args=("--retry-hold-seconds", hold))

        print(f"Kubernetes {cluster.kubernetes_version}; rates per second over {args.seconds} s per phase")
        print(f"{'phase':<28} {'refusals':>9} {'attempts':>9} {'preemption':>10} {'API reqs':>9} {'sched CPU':>9}")
        rows = [
            measure(cluster, probe, 0, "idle (no preemptor)", args.seconds, lambda: nullcontext(None), False),
            measure(cluster, probe, 1, "guard, answered at once", args.seconds, webhook("0")),
            measure(cluster, probe, 2, "guard, retries held 1 s", args.seconds, webhook("1")),
        ]

        def extended() -> AbstractContextManager[tuple[str, int] | None]:
            return _extended(cluster)

        rows.append(measure(cluster, probe, 3, "guard and extender", args.seconds, extended))
        version = cluster.kubernetes_version
    path = save_results("preemption_loop", {"kubernetes": version, "seconds": args.seconds, "phases": rows})
    print(f"saved to {shown(path)}")


class _extended(AbstractContextManager[tuple[str, int] | None]):
    """`ptol webhook` registered, and the scheduler restarted with its extender entry (then without)."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.webhook = ptol_webhook(cluster, register=True)

    def __enter__(self) -> tuple[str, int] | None:
        served = self.webhook.__enter__()
        guard = json.loads(_kubectl(self.cluster, "get", "validatingwebhookconfiguration", GUARD_NAME, "-o", "json"))
        self.cluster.restart_scheduler([scheduler_extender_of(guard)])
        return served

    def __exit__(self, *exc: object) -> None:
        self.cluster.restart_scheduler([])
        self.webhook.__exit__(None, None, None)


if __name__ == "__main__":
    main()
