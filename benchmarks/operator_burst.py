"""Operator burst convergence for 10 x 30, 100 x 300 and 1,000 x 3,000: time, class writes, status patches, Events.

For each size P x C, in a fresh local control plane (`preemption_toleration.devcluster.LocalCluster`): C
PriorityClasses are created first, labelled `team: t<i mod P>`; then `ptol operator --metrics` starts and settles;
then P selector policies (`priorityClassSelector.matchLabels: {team: t<i>}`) are created at once, 64 requests in
flight. Measured: the time until converged (every class carries the desired annotations and every policy's Ready
condition is True/Applied with observedGeneration == generation; followed by a watch of each, which costs the API
server less than listing them would), the time until quiet (its last class write or status patch before --settle
seconds without any: a converged state can still be rewritten), the class writes (ptol_operator_writes_total) and
status patches (ptol_operator_status_patches_total) over the burst, and the Events about our classes and policies
(stored in the namespace `default`), counted once their number has not grown for --settle seconds after quiet:
Events are posted off the writes' path and may trail them; "events s" is when the last of them was seen (polled
every second; "at quiet": none came after). Then the operator is restarted and the writes it makes once resumed
are counted. The API server's own count of the write requests over the burst (apiserver_request_total, by verb and
resource: the operator's, kopf's and the benchmark's creates) is shown too, and the CPU seconds the operator and
each control-plane process used from the burst's start until it was quiet.

With --floor, the same cluster then measures what the burst's requests cost the API server alone, with the
operator stopped: C other classes are created (floor-NNNN), then, timed, P other policies as the burst creates
them (64 in flight), and the requests the operator sends for them, sent by the benchmark itself as the
operator sent them: C server-side applies of the annotations the operator wrote (copied from burst-0000),
each with one Event, 16 of each in flight, then P status patches (copied from burst-0000's status), 16 in
flight. "floor s" is their time; "/ floor" is converged over it (both count from the first policy's creation):
on a machine whose 2 cores the API server and etcd already fill, the floor, not the operator, sets the
convergence.

Targets: one write per class that needs a change (writes == C), <= 2 status patches per policy, one Event
per real change (none dropped), all posted by the time the operator is quiet ("at quiet"), 100 x 300
converged in <= 5 s and 1,000 x 3,000 in <= 30 s, no write after a restart.
A size that does not converge within --timeout is reported as "not converged" with how far it got.
Saves benchmarks/results/operator_burst.json. Run:

    .venv/bin/python benchmarks/operator_burst.py [--quick] [--sizes 10x30,100x300] [--timeout 120] [--floor]
        [--code PATH] [--save-as NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import aiohttp
from _cluster import api_client, bounded, install_crd, local_cluster, raw, with_retries
from _common import save_results, shown
from _webhook_bench import cpu_seconds
from kubernetes_asyncio import client

from preemption_toleration.api.policy import GROUP, KIND, PLURAL, VERSION
from preemption_toleration.api.resources import priority_class_ref
from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY, TOLERATION_SECONDS
from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.devcluster.processes import free_port
from preemption_toleration.kube.client import APPLY_PATCH, MERGE_PATCH
from preemption_toleration.kube.events import event_body
from preemption_toleration.operator.reconciler import WRITE_CONCURRENCY
from tests.builders import policy, priority_class
from tests.metrics import samples, scrape, total

SIZES = ((10, 30), (100, 300), (1000, 3000))
QUICK = ((10, 30),)
TIME_TARGETS = {(100, 300): 5.0, (1000, 3000): 30.0}
LABEL = "bench=operator-burst"
MINIMUM, TOLERATION = 10000, 600
DESIRED = {MINIMUM_PREEMPTABLE_PRIORITY: str(MINIMUM), TOLERATION_SECONDS: str(TOLERATION)}
IN_FLIGHT, POLL_SECONDS, EVENTS_POLL_SECONDS = 64, 0.5, 1.0


async def create_classes(cluster: LocalCluster, policies: int, classes: int, prefix: str = "burst") -> None:
    async with await api_client(cluster, IN_FLIGHT) as api:
        scheduling = client.SchedulingV1Api(api)

        async def create(i: int) -> None:
            body = priority_class(
                f"{prefix}-{i:04d}", 8000, labels={"team": f"t{i % policies}", "bench": "operator-burst"}
            )
            await with_retries(lambda: raw(scheduling.create_priority_class(body, _preload_content=False)))

        await bounded(range(classes), create, IN_FLIGHT)


async def create_policies(cluster: LocalCluster, policies: int, prefix: str = "burst") -> None:
    async with await api_client(cluster, IN_FLIGHT) as api:
        custom = client.CustomObjectsApi(api)

        async def create(i: int) -> None:
            spec = {
                "priorityClassSelector": {"matchLabels": {"team": f"t{i}"}},
                "minimumPreemptablePriority": MINIMUM,
                "tolerationSeconds": TOLERATION,
            }
            body = policy(f"{prefix}-{i:04d}", spec)
            await with_retries(
                lambda: raw(custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, body, _preload_content=False))
            )

        await bounded(range(policies), create, IN_FLIGHT)


def policy_converged(policy: dict[str, Any]) -> bool:
    status = policy.get("status") or {}
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    return (
        bool(ready)
        and ready[0].get("status") == "True"
        and ready[0].get("reason") == "Applied"
        and status.get("observedGeneration") == policy["metadata"].get("generation")
    )


def class_converged(priority_class: dict[str, Any]) -> bool:
    annotations = priority_class["metadata"].get("annotations") or {}
    return all(annotations.get(key) == value for key, value in DESIRED.items())


Take = Callable[[dict[str, Any]], None]


class Convergence:
    """Which classes and burst policies are converged, followed by one watch of each kind in a thread of its own
    (until 2026-11-28 this benchmark listed both every half second, on the API server the burst waits on):
    `done` counts them, `converged_at` is when all were (time.monotonic), None until then; `problems` says what
    stopped the thread, `restarts` counts the watches the API server ended. `stop` ends it, before the restart
    and the floor."""

    def __init__(self, cluster: LocalCluster, total: tuple[int, int]) -> None:
        self.cluster, self.total = cluster, total
        self.classes: dict[str, bool] = {}
        self.policies: dict[str, bool] = {}
        self.converged_at: float | None = None
        self.problems: list[str] = []
        self.restarts: dict[str, int] = {}  # watches the API server ended, by kind
        self.listed = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def start(self) -> None:
        self._thread.start()
        if not self.listed.wait(timeout=60):
            raise RuntimeError(f"the convergence watches did not start: {self.problems}")

    def stop(self) -> None:
        if self._loop is not None and self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(timeout=10)

    @property
    def done(self) -> tuple[int, int]:
        return sum(self.classes.values()), sum(self.policies.values())

    async def _run(self) -> None:
        self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
        try:
            await self._follow()
        except asyncio.CancelledError:
            pass
        except Exception as error:  # noqa: BLE001 - reported with the row, not lost in a thread
            self.problems.append(f"{type(error).__name__}: {error}")

    async def _follow(self) -> None:
        async with await api_client(self.cluster, 4) as api:
            scheduling, custom = client.SchedulingV1Api(api), client.CustomObjectsApi(api)

            def classes(**kwargs: Any) -> Awaitable[aiohttp.ClientResponse]:
                return scheduling.list_priority_class(label_selector=LABEL, _preload_content=False, **kwargs)

            def policies(**kwargs: Any) -> Awaitable[aiohttp.ClientResponse]:
                return custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, _preload_content=False, **kwargs)

            class_rv, policy_rv = await self._list(classes, self._class), await self._list(policies, self._policy)
            self.listed.set()
            await asyncio.gather(
                self._follow_kind("priorityclasses", classes, self._class, class_rv),
                self._follow_kind(PLURAL, policies, self._policy, policy_rv),
            )

    async def _list(self, call: Callable[..., Awaitable[aiohttp.ClientResponse]], take: Take) -> str:
        listed = json.loads(await raw(call()))
        for item in listed["items"]:
            take(item)
        self._check()
        return str(listed["metadata"]["resourceVersion"])

    async def _follow_kind(
        self, kind: str, call: Callable[..., Awaitable[aiohttp.ClientResponse]], take: Take, version: str
    ) -> None:
        """Watches from `version`; when the API server ends the watch (it closes one that reads too slowly, as
        this thread may while the burst fills both cores), lists again and watches from there."""
        while True:
            response = await call(watch=True, resource_version=version, timeout_seconds=3600, _request_timeout=3600)
            seen = 0
            try:
                async for line in response.content:
                    event = json.loads(line)
                    seen += 1
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        take(event["object"])
                        self._check()
                    elif event.get("type") == "ERROR":
                        break
            except (TimeoutError, aiohttp.ClientError):
                pass
            self.restarts[kind] = self.restarts.get(kind, 0) + 1
            version = await self._list(call, take)

    def _check(self) -> None:
        if self.converged_at is None and self.done == self.total:
            self.converged_at = time.monotonic()

    def _class(self, item: dict[str, Any]) -> None:
        self.classes[item["metadata"]["name"]] = class_converged(item)

    def _policy(self, item: dict[str, Any]) -> None:
        if item["metadata"]["name"].startswith("burst-"):
            self.policies[item["metadata"]["name"]] = policy_converged(item)


async def our_events(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
    """Events (all namespaces) about PriorityClasses or policies named burst-*, by uid."""
    async with await api_client(cluster) as api:
        items = json.loads(await raw(client.CoreV1Api(api).list_event_for_all_namespaces(_preload_content=False)))[
            "items"
        ]
    return {
        e["metadata"]["uid"]: e
        for e in items
        if e["involvedObject"].get("kind") in ("PriorityClass", KIND)
        and e["involvedObject"].get("name", "").startswith("burst-")
    }


async def burst_writes(cluster: LocalCluster) -> tuple[dict[str, str], dict[str, Any]]:
    """What the operator wrote for burst-0000: the annotations on its class, and its status."""
    async with await api_client(cluster) as api:
        scheduling, custom = client.SchedulingV1Api(api), client.CustomObjectsApi(api)
        written = json.loads(await raw(scheduling.read_priority_class("burst-0000", _preload_content=False)))
        found = await raw(
            custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, "burst-0000", _preload_content=False)
        )
    annotations = {
        key: value
        for key, value in written["metadata"]["annotations"].items()
        if key in DESIRED or "preemption-toleration" in key
    }
    return annotations, json.loads(found)["status"]


async def floor_seconds(cluster: LocalCluster, policies: int, classes: int) -> float:
    """The time the burst's requests take the API server alone, sent as the operator sends them (see --floor);
    the classes written are new ones, made before the clock starts (the operator is stopped: none is governed),
    and the policies are created once it has, as the burst's are."""
    await create_classes(cluster, policies, classes, prefix="floor")
    annotations, status = await burst_writes(cluster)
    started = time.monotonic()
    await create_policies(cluster, policies, prefix="floor")
    async with await api_client(cluster, IN_FLIGHT) as api:
        scheduling, custom, core = client.SchedulingV1Api(api), client.CustomObjectsApi(api), client.CoreV1Api(api)

        async def apply(i: int) -> None:
            body = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"floor-{i:04d}", "annotations": annotations},
            }
            await raw(
                scheduling.patch_priority_class(
                    f"floor-{i:04d}",
                    body,
                    field_manager="floor",
                    force=True,
                    _content_type=APPLY_PATCH,
                    _preload_content=False,
                )
            )

        async def post_event(i: int) -> None:
            ref = priority_class_ref(f"floor-{i:04d}", "")
            body = event_body(ref, "Normal", "Applied", "floor", "operator-burst-floor", datetime.now(UTC))
            await raw(core.create_namespaced_event(body["metadata"]["namespace"], body, _preload_content=False))

        async def patch_status(i: int) -> None:
            await raw(
                custom.patch_cluster_custom_object_status(
                    GROUP,
                    VERSION,
                    PLURAL,
                    f"floor-{i:04d}",
                    {"status": status},
                    _content_type=MERGE_PATCH,
                    _preload_content=False,
                )
            )

        await asyncio.gather(
            bounded(range(classes), apply, WRITE_CONCURRENCY), bounded(range(classes), post_event, WRITE_CONCURRENCY)
        )
        await bounded(range(policies), patch_status, WRITE_CONCURRENCY)
        return round(time.monotonic() - started, 2)


WRITE_VERBS = ("POST", "PUT", "PATCH", "APPLY", "DELETE")


def written_requests(cluster: LocalCluster) -> Counter[str]:
    """The API server's count of the requests that write (its apiserver_request_total), by verb and resource:
    "APPLY priorityclasses", "PATCH preemptiontolerationpolicies/status"."""
    text = subprocess.run(
        cluster.kubectl_argv("get", "--raw", "/metrics"), capture_output=True, text=True, check=True
    ).stdout
    found: Counter[str] = Counter()
    for sample in samples(text, "apiserver_request_total"):
        labels = sample.labels
        if labels.get("verb") in WRITE_VERBS:
            resource = labels["resource"] + (f"/{labels['subresource']}" if labels.get("subresource") else "")
            found[f"{labels['verb']} {resource}"] += int(sample.value)
    return found


def summarize_events(events: list[dict[str, Any]]) -> dict[str, Any]:
    def source(event: dict[str, Any]) -> str:
        return str(event.get("reportingComponent") or (event.get("source") or {}).get("component") or "?")

    return {
        "total": len(events),
        "by_reason": dict(Counter(str(e.get("reason")) for e in events)),
        "by_component": dict(Counter(map(source, events))),
        "namespaces": sorted({e["metadata"]["namespace"] for e in events}),
    }


class Operator:
    """`ptol operator --metrics` as a child process, and its counters."""

    def __init__(self, cluster: LocalCluster, run: str, code: str | None = None) -> None:
        self.port = free_port()
        # another checkout's package first on the path, and not this one's (-P: no working directory on it)
        launcher = (sys.executable, "-P", "-m", "preemption_toleration") if code else ()
        self.process = ComponentProcess(
            "operator",
            cluster.kubeconfig,
            cluster.logs_dir / f"operator-{run}.log",
            "--metrics",
            f"127.0.0.1:{self.port}",
            launcher=launcher,
            env={"PYTHONPATH": code} if code else None,
        )

    def counters(self) -> dict[str, float]:
        text = scrape(f"http://127.0.0.1:{self.port}/metrics", timeout=5)
        return {
            "writes": total(text, "ptol_operator_writes_total", result="ok"),
            "failed_writes": total(text, "ptol_operator_writes_total", result="failed"),
            "status_patches": total(text, "ptol_operator_status_patches_total"),
            "reconciles": total(text, "ptol_operator_reconciles_total"),
        }

    def start_and_settle(self, quiet: float, timeout: float, need_reconcile: bool = False) -> bool:
        """Start; True once /metrics answers and the reconcile count has not moved for `quiet` seconds
        (after at least one reconcile when `need_reconcile`)."""
        self.process.start()
        deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
        while time.monotonic() < deadline and self.process.running():
            time.sleep(0.25)
            try:
                reconciles = self.counters()["reconciles"]
            except OSError:
                continue
            if reconciles != last:
                last, since = reconciles, time.monotonic()
            elif time.monotonic() - since >= quiet and (reconciles > 0 or not need_reconcile):
                return True
        return False


def follow_burst(
    convergence: Convergence, operator: Operator, started: float, args: argparse.Namespace
) -> dict[str, Any]:
    """Poll until converged and then quiet (writes and status patches unchanged for --settle seconds), or
    until --timeout: when it converged, when the operator stopped writing, and how far it got."""
    found: dict[str, Any] = {}
    counts, last_change = (-1.0, -1.0), started
    while time.monotonic() - started < args.timeout:
        if not operator.process.running():
            return found | {"problem": f"operator exited (log: {operator.process.log_path.name})"}
        if "converged_seconds" not in found and convergence.converged_at is not None:
            found["converged_seconds"] = round(convergence.converged_at - started, 2)
        try:
            now = operator.counters()
        except OSError:
            now = {"writes": -1.0, "status_patches": -1.0}
        if (now["writes"], now["status_patches"]) != counts:
            counts, last_change = (now["writes"], now["status_patches"]), time.monotonic()
        elif "converged_seconds" in found and time.monotonic() - last_change >= args.settle:
            found["quiet_seconds"] = round(last_change - started, 2)
            break
        time.sleep(POLL_SECONDS)
    found["classes_done"], found["policies_done"] = convergence.done
    convergence.stop()
    found["convergence_watches_restarted"] = convergence.restarts
    if "converged_seconds" not in found and convergence.problems:
        found["problem"] = "; ".join(convergence.problems)
    return found


def follow_events(
    cluster: LocalCluster, before: dict[str, dict[str, Any]], started: float, args: argparse.Namespace
) -> dict[str, Any]:
    """The Events of the burst (those not in `before`) once their number has not grown for --settle seconds
    (or --timeout has passed since `started`): how many there were at first (when the operator was quiet),
    when the last was seen (None: none came after), and a summary of them all."""

    def burst() -> list[dict[str, Any]]:
        return [event for uid, event in asyncio.run(our_events(cluster)).items() if uid not in before]

    events, since, last_seen = burst(), time.monotonic(), None
    at_quiet = len(events)
    while time.monotonic() - since < args.settle and time.monotonic() - started < args.timeout:
        time.sleep(EVENTS_POLL_SECONDS)
        now = burst()
        if len(now) > len(events):
            events, since = now, time.monotonic()
            last_seen = round(since - started, 2)
    return {"events_at_quiet": at_quiet, "events_seconds": last_seen, "events": summarize_events(events)}


def cpu_by_process(cluster: LocalCluster, operator: Operator) -> dict[str, float]:
    """The CPU seconds (user and system) used so far by the operator and by each control-plane process."""
    pids = {status.name: status.pid for status in cluster.status() if status.running}
    assert operator.process.process is not None
    pids["operator"] = operator.process.process.pid
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def run_size(policies: int, classes: int, args: argparse.Namespace) -> dict[str, Any]:
    row: dict[str, Any] = {"policies": policies, "classes": classes}
    with local_cluster() as cluster:
        install_crd(cluster)
        asyncio.run(create_classes(cluster, policies, classes))
        operator = Operator(cluster, "burst", args.code)
        try:
            if not operator.start_and_settle(quiet=2.0, timeout=120):
                return row | {"problem": "operator not ready"}
            before, events_before = operator.counters(), asyncio.run(our_events(cluster))
            convergence = Convergence(cluster, (classes, policies))
            convergence.start()
            requests_before, cpu_before = written_requests(cluster), cpu_by_process(cluster, operator)
            started = time.monotonic()
            asyncio.run(create_policies(cluster, policies))
            row["create_seconds"] = round(time.monotonic() - started, 2)
            row |= follow_burst(convergence, operator, started, args)
            if "problem" in row:
                return row
            after, cpu_after = operator.counters(), cpu_by_process(cluster, operator)
            row |= {key: after[key] - before[key] for key in after}
            row["cpu_seconds"] = {name: round(cpu_after[name] - cpu_before[name], 1) for name in cpu_after}
            row |= follow_events(cluster, events_before, started, args)
            row["written_requests"] = dict(sorted((written_requests(cluster) - requests_before).items()))
            events_after = asyncio.run(our_events(cluster))
            if "converged_seconds" not in row:
                return row
            operator.process.stop()
            operator = Operator(cluster, "restart", args.code)
            if not operator.start_and_settle(quiet=args.settle, timeout=max(120, args.timeout), need_reconcile=True):
                return row | {"problem": "operator not resumed after restart"}
            restart = operator.counters()
            row["restart"] = {
                "writes": restart["writes"],
                "status_patches": restart["status_patches"],
                "reconciles": restart["reconciles"],
                "events": len(set(asyncio.run(our_events(cluster))) - set(events_after)),
            }
            if args.floor:
                operator.process.stop()
                row["floor_seconds"] = asyncio.run(floor_seconds(cluster, policies, classes))
        finally:
            operator.process.stop()
    return row


def floor_columns(row: dict[str, Any]) -> str:
    floor, converged = row.get("floor_seconds"), row.get("converged_seconds")
    return f"{floor:>7} {converged / floor:>7.2f} " if floor and converged else ""


def parse_sizes(text: str) -> list[tuple[int, int]]:
    sizes = []
    for item in text.split(","):
        policies, _, classes = item.strip().partition("x")
        sizes.append((int(policies), int(classes)))
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 x 30 only")
    parser.add_argument("--sizes", type=parse_sizes, help="POLICIESxCLASSES,... (default 10x30,100x300,1000x3000)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per size before 'not converged'")
    parser.add_argument(
        "--settle",
        type=float,
        default=5.0,
        help="seconds without a write or status patch "
        "after which the operator counts as done (after the burst and after the restart)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also time the burst's requests sent by the benchmark, the operator stopped (the API server's floor)",
    )
    parser.add_argument(
        "--code",
        metavar="PATH",
        help="run the operator of this checkout of the project (e.g. a git worktree of an earlier commit), for a "
        "run side by side with the current code",
    )
    parser.add_argument(
        "--save-as",
        default="operator_burst",
        metavar="NAME",
        help="results file benchmarks/results/NAME.json, e.g. to keep a baseline run apart",
    )
    args = parser.parse_args()
    sizes = args.sizes or (QUICK if args.quick else SIZES)
    print(
        f"{'size':>11} {'converged s':>11} {'quiet s':>7} {'writes':>6} {'/class':>6} {'patches':>7} "
        f"{'/policy':>7} {'events':>6} {'/change':>7} {'events s':>8} {'reconciles':>10} {'restart writes':>14}"
        + (f" {'floor s':>7} {'/ floor':>7}" if args.floor else "")
    )
    rows = []
    for policies, classes in sizes:
        row = run_size(policies, classes, args)
        rows.append(row)
        converged = row.get("converged_seconds") or (
            f"not ({row.get('classes_done', 0)}/{classes} classes, {row.get('policies_done', 0)}/{policies} policies)"
            if "classes_done" in row
            else row.get("problem")
        )
        events = (row.get("events") or {}).get("total", 0)
        print(
            f"{policies:>5} x {classes:<5} {converged!s:>11} {row.get('quiet_seconds', '-')!s:>7} "
            f"{row.get('writes', 0):>6.0f} "
            f"{row.get('writes', 0) / classes:>6.2f} {row.get('status_patches', 0):>7.0f} "
            f"{row.get('status_patches', 0) / policies:>7.2f} {events:>6} {events / classes:>7.2f} "
            f"{row.get('events_seconds') or 'at quiet'!s:>8} "
            f"{row.get('reconciles', 0):>10.0f} {(row.get('restart') or {}).get('writes', '-')!s:>14} "
            + floor_columns(row)
            + f"{row.get('problem', '')}",
            flush=True,
        )
        if row.get("convergence_watches_restarted"):
            print(f"{'':>13}watches of this benchmark the API server ended: {row['convergence_watches_restarted']}")
        if row.get("cpu_seconds"):
            print(f"{'':>13}CPU seconds from the burst's start to quiet: {row['cpu_seconds']}")
            if row.get("writes"):
                per_write = row["cpu_seconds"]["operator"] / row["writes"] * 1000
                print(f"{'':>13}the operator's CPU per class write: {per_write:.2f} ms")
        if row.get("written_requests"):
            print(f"{'':>13}writes the API server counted (the benchmark's creates too): {row['written_requests']}")
        if row.get("events"):
            print(
                f"{'':>13}{row['events_at_quiet']} events when quiet; by reason {row['events']['by_reason']}, "
                f"by component {row['events']['by_component']}, in {row['events']['namespaces']}"
            )
    print(
        "targets: writes/class = 1; status patches/policy <= 2; events/change = 1; events s = at quiet; "
        "restart writes = 0; " + "; ".join(f"{p} x {c} converged <= {s:.0f} s" for (p, c), s in TIME_TARGETS.items())
    )
    path = save_results(args.save_as, {"timeout_seconds": args.timeout, "settle_seconds": args.settle, "rows": rows})
    print(f"saved to {shown(path)}")


if __name__ == "__main__":
    main()
