"""Differential harness: the same random preemption scenarios, run three ways on the live control plane.

- extender: the stock kube-scheduler with our extender (`ptol webhook`, the scheduler restarted with its
  extender entry): the reference, upstream's plugin's victim choice;
- guard: the guard alone (`--extender off`), as on a managed cluster;
- steering: the guard alone with steering (`--extender off --steering on`).

Each scenario (seeded) has 2 to 4 nodes of its own (CPU, memory, an extended resource `example.com/gpu`,
a zone label, sometimes a taint), filled with victims of protected, time-limited (some expired, some not)
and plain classes at several priorities, some under a PodDisruptionBudget, and one preemptor (nodeSelector,
required node affinity, tolerations, sometimes a GPU) that fits nowhere without preemption. Some pods ask
their CPU and memory at pod level (`spec.resources`, PodLevelResources), and in some scenarios one plain
victim is terminating when the preemptor comes (a finalizer holds it until RELEASE_SECONDS after the
preemptor's creation): the scheduler counts it as a victim and skips its DELETE. In some scenarios a second
preemptor, the same as the first, comes right after it: the scheduler serves them in queue order, and where
both preempt on one node, both are nominated to it (the guard and steering must take the first). Scenarios run
concurrently, each in a namespace and on nodes of its own. For each way and scenario it records the
preemptor's node (or pending after --wait seconds), the victims deleted, the protected ones among them (must
be none), those deleted in vain (not on a preemptor's final node), and the first preemptor's time to binding.

Agreement with the reference: the same node and the same victims; or a tie under the scheduler's node
ordering (`pickOneNodeForPreemption`, computed from the scenario with the project's own victim choice), when
the victims on the node chosen are the ones upstream chooses there. With a second preemptor: the same nodes
for both (either may be where the other is: they are the same pod) and the same victims, ties not allowed.
Counted apart, as `past ref.`, and as agreeing: where the reference, with two identical preemptors,
deleted a victim in vain (the stock scheduler nominated both to the room for one, see `past_reference`)
and the way deleted the same victims and bound a preemptor on each of their nodes.

Needs the control-plane binaries (`ptol dev cluster install`). Run (the suite's tests use other seeds):

    .venv/bin/python benchmarks/steering_agreement.py --scenarios 300 --seed 7

Prints a table and saves it to benchmarks/results/steering_agreement-<release>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from _cluster import api_client, bounded, install_crd, local_cluster
from _common import save_results, shown
from _webhook_bench import ptol_webhook
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY as MIN
from preemption_toleration.core.annotations import TOLERATION_SECONDS as TOL
from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.nodes import wait_node_schedulable
from preemption_toleration.extender.decisions import ExemptionCheck
from preemption_toleration.extender.victims import NodeVictims, select_victims
from preemption_toleration.inventory.budgets import BudgetIndex, split_by_budget_violation
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.kube.client import API_ERRORS
from preemption_toleration.manifests.scheduler_extender import scheduler_extender_of
from preemption_toleration.manifests.webhook_configurations import GUARD_NAME
from preemption_toleration.records.node import node_record
from preemption_toleration.records.priority_class import class_view
from preemption_toleration.steering.plan import eligible, pick_node

GPU = "example.com/gpu"
TOLERATION_SECONDS = 300
HOLD = "example.com/hold"  # the finalizer that keeps a terminating victim until the harness releases it
RELEASE_SECONDS = 2.0
POD_LEVEL_SHARE = 0.2  # of victims and of preemptors that ask CPU and memory at pod level
TERMINATING_SHARE = 0.15  # of scenarios with a terminating victim
TWIN_SHARE = 0.15  # of scenarios with a second preemptor
PREEMPTORS = ("preemptor", "preemptor-2")
# class -> (value, annotations)
CLASSES: dict[str, tuple[int, dict[str, str]]] = {
    "h-plain-1000": (1000, {}),
    "h-plain-1100": (1100, {}),
    "h-plain-1200": (1200, {}),
    "h-prot-1000": (1000, {MIN: "5000", TOL: "-1"}),
    "h-prot-1100": (1100, {MIN: "5000", TOL: "-1"}),
    "h-lim-1000": (1000, {MIN: "5000", TOL: str(TOLERATION_SECONDS)}),
    "h-lim-1100": (1100, {MIN: "5000", TOL: str(TOLERATION_SECONDS)}),
    "h-pre": (2000, {}),
}
WAYS = {
    "extender": ["--extender", "on"],
    "guard": ["--extender", "off"],
    "steering": ["--extender", "off", "--steering", "on"],
}


@dataclass
class Victim:
    name: str
    node: str
    klass: str
    cpu_m: int
    gpu: int
    memory_mi: int
    scheduled_ago: int  # seconds before the preemptor's creation
    started_after: int  # seconds after its scheduling
    group: str | None = None  # label grp=<group>, under the scenario's budget
    pod_level: bool = False  # CPU and memory asked in spec.resources, not by the container
    terminating: bool = False  # deleted before the preemptor comes, held by a finalizer until released

    def protected(self) -> bool:
        """Tolerates the preemptor (priority 2000, below every minimum) when the preemptor is created."""
        if "prot" in self.klass:
            return True
        return "lim" in self.klass and self.scheduled_ago < TOLERATION_SECONDS


@dataclass
class NodeSpec:
    name: str
    cpu_m: int
    memory_mi: int
    gpu: int
    zone: str
    tainted: bool


@dataclass
class Scenario:
    index: int
    nodes: list[NodeSpec]
    victims: list[Victim]
    preemptor_cpu_m: int
    preemptor_memory_mi: int
    preemptor_gpu: int
    zone: str | None  # nodeSelector
    hosts: list[str] | None  # required node affinity on these hosts
    tolerates: bool
    budget_allowed: int | None  # the budget over grp=a, when there is one
    preemptor_pod_level: bool = False
    twin: bool = False  # a second preemptor, the same, created right after the first

    def preemptors(self) -> tuple[str, ...]:
        return PREEMPTORS if self.twin else PREEMPTORS[:1]


def generate(rng: random.Random, index: int) -> Scenario:
    nodes = [
        NodeSpec(
            name=f"n{i}",
            cpu_m=rng.choice((2000, 3000, 4000)),
            memory_mi=rng.choice((4096, 8192)),
            gpu=rng.choice((0, 0, 2)),
            zone=rng.choice("ab"),
            tainted=rng.random() < 0.2,
        )
        for i in range(rng.randint(2, 4))
    ]
    victims: list[Victim] = []
    budgeted = rng.random() < 0.3
    for node in nodes:
        left, gpus, memory_left = node.cpu_m, node.gpu, node.memory_mi
        while left > 0:
            cpu = min(left, rng.choice((500, 1000, 1000, 1500)))
            memory = min(memory_left, rng.choice((256, 512, 1024, 2048)))
            memory_left -= memory
            gpu = 1 if gpus and rng.random() < 0.5 else 0
            gpus -= gpu
            klass = rng.choice([name for name in CLASSES if name != "h-pre"])
            expired = rng.random() < 0.5
            ago = (TOLERATION_SECONDS + 300 if expired else 60) + rng.randint(0, 200)
            group = "a" if budgeted and rng.random() < 0.5 else None
            victims.append(
                Victim(f"v{len(victims)}", node.name, klass, cpu, gpu, memory, ago, rng.randint(0, 30), group)
            )
            left -= cpu
    target = rng.choice(nodes)
    preemptor_cpu = rng.choice([c for c in (500, 1000, 1500, 2000) if c <= target.cpu_m])
    wants_gpu = target.gpu > 0 and rng.random() < 0.3
    # drawn from a generator of their own, so that the scenarios of a seed keep their shapes from before
    features = random.Random(f"features-{index}")
    for victim in victims:
        victim.pod_level = features.random() < POD_LEVEL_SHARE
    plain = [victim for victim in victims if "plain" in victim.klass and not victim.group]
    if plain and features.random() < TERMINATING_SHARE:
        features.choice(plain).terminating = True
    members = sum(1 for victim in victims if victim.group)
    preemptor_pod_level = features.random() < POD_LEVEL_SHARE
    return Scenario(
        index=index,
        nodes=nodes,
        victims=victims,
        preemptor_cpu_m=preemptor_cpu,
        preemptor_memory_mi=rng.choice((256, 1024, 2048)),
        preemptor_gpu=1 if wants_gpu else 0,
        zone=target.zone if rng.random() < 0.3 else None,
        hosts=sorted({target.name, *rng.sample([n.name for n in nodes], k=min(2, len(nodes)))})
        if rng.random() < 0.3
        else None,
        tolerates=target.tainted or rng.random() < 0.3,
        budget_allowed=rng.choice((0, 1)) if members else None,
        preemptor_pod_level=preemptor_pod_level,
        twin=features.random() < TWIN_SHARE,  # drawn last: the scenarios without one keep their shapes
    )


# --- objects ---------------------------------------------------------------------------------------------


def node_name(scenario: Scenario, way: str, node: str) -> str:
    return f"h{scenario.index}-{way}-{node}"


def node_body(scenario: Scenario, way: str, node: NodeSpec) -> dict[str, Any]:
    name = node_name(scenario, way, node.name)
    capacity = {"cpu": f"{node.cpu_m}m", "memory": f"{node.memory_mi}Mi", "pods": "110"}
    if node.gpu:
        capacity[GPU] = str(node.gpu)
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "zone": node.zone,
                "scenario": f"h{scenario.index}-{way}",
            },
        },
        "spec": {"taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}] if node.tainted else []},
        "status": {"capacity": capacity, "allocatable": capacity},
    }
    return body


def requests(cpu_m: int, gpu: int, memory_mi: int, pod_level: bool = False) -> dict[str, Any]:
    """A container's resources: CPU, memory and the GPU; only the GPU with `pod_level` (see `pod_resources`)."""
    wanted: dict[str, str] = {} if pod_level else {"cpu": f"{cpu_m}m", "memory": f"{memory_mi}Mi"}
    if gpu:
        wanted[GPU] = str(gpu)
    return {"requests": wanted, "limits": {GPU: str(gpu)} if gpu else {}}


def with_pod_level(spec: dict[str, Any], cpu_m: int, memory_mi: int) -> dict[str, Any]:
    """CPU and memory asked for the pod as a whole (an extended resource cannot be)."""
    spec["resources"] = {"requests": {"cpu": f"{cpu_m}m", "memory": f"{memory_mi}Mi"}}
    return spec


TOLERATE_DEDICATED = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]


def victim_body(scenario: Scenario, way: str, victim: Victim) -> dict[str, Any]:
    resources = requests(victim.cpu_m, victim.gpu, victim.memory_mi, victim.pod_level)
    spec: dict[str, Any] = {
        "priorityClassName": victim.klass,
        "nodeSelector": {"kubernetes.io/hostname": node_name(scenario, way, victim.node)},
        "tolerations": TOLERATE_DEDICATED,
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "pause", "resources": resources}],
    }
    if victim.pod_level:
        with_pod_level(spec, victim.cpu_m, victim.memory_mi)
    metadata: dict[str, Any] = {"name": victim.name, "labels": {"grp": victim.group} if victim.group else {}}
    if victim.terminating:
        metadata["finalizers"] = [HOLD]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def preemptor_body(scenario: Scenario, way: str, name: str = PREEMPTORS[0]) -> dict[str, Any]:
    expressions = [{"key": "scenario", "operator": "In", "values": [f"h{scenario.index}-{way}"]}]
    if scenario.hosts:
        hosts = [node_name(scenario, way, host) for host in scenario.hosts]
        expressions.append({"key": "kubernetes.io/hostname", "operator": "In", "values": hosts})
    spec: dict[str, Any] = {
        "priorityClassName": "h-pre",
        "terminationGracePeriodSeconds": 0,
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": expressions}]
                }
            }
        },
        "containers": [
            {
                "name": "c",
                "image": "pause",
                "resources": requests(
                    scenario.preemptor_cpu_m,
                    scenario.preemptor_gpu,
                    scenario.preemptor_memory_mi,
                    scenario.preemptor_pod_level,
                ),
            }
        ],
    }
    if scenario.preemptor_pod_level:
        with_pod_level(spec, scenario.preemptor_cpu_m, scenario.preemptor_memory_mi)
    if scenario.zone:
        spec["nodeSelector"] = {"zone": scenario.zone}
    if scenario.tolerates:
        spec["tolerations"] = TOLERATE_DEDICATED
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


# --- the project's own prediction, for ties ----------------------------------------------------------------


def _slim_json(body: dict[str, Any], node: str | None, scheduled: datetime | None, started: datetime | None) -> dict:
    pod = json.loads(json.dumps(body))
    pod["metadata"].update(
        namespace="h", uid=f"uid-{pod['metadata']['name']}", creationTimestamp="2026-01-01T00:00:00Z"
    )
    pod["spec"]["priority"] = CLASSES[pod["spec"]["priorityClassName"]][0]
    status: dict[str, Any] = {"phase": "Running" if node else "Pending", "conditions": []}
    if node:
        pod["spec"]["nodeName"] = node
        status["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": _rfc(scheduled)}]
        status["startTime"] = _rfc(started)
    pod["status"] = status
    return pod


def _rfc(moment: datetime | None) -> str:
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def predicted_ties(scenario: Scenario, way: str, now: datetime) -> tuple[set[str], dict[str, set[str]]]:
    """The nodes tied for the scheduler's pick (by this project's model of upstream's choice), and the
    victims upstream chooses on each candidate node."""
    pods = []
    for victim in scenario.victims:
        scheduled = now - timedelta(seconds=victim.scheduled_ago)
        pod = _slim_json(
            victim_body(scenario, way, victim),
            node_name(scenario, way, victim.node),
            scheduled,
            scheduled + timedelta(seconds=victim.started_after),
        )
        if victim.terminating:
            pod["metadata"]["deletionTimestamp"] = _rfc(now)
        pods.append(pod)
    preemptor_json = _slim_json(preemptor_body(scenario, way), None, None, None)
    index = PodIndex.of([*pods, preemptor_json])
    classes = {
        name: {"metadata": {"name": name, "annotations": notes}, "value": value}
        for name, (value, notes) in CLASSES.items()
    }
    nodes = {node_name(scenario, way, n.name): node_record(node_body(scenario, way, n)) for n in scenario.nodes}
    budgets = []
    if scenario.budget_allowed is not None:
        budgets.append(
            {
                "metadata": {"name": "b", "namespace": "h"},
                "spec": {"selector": {"matchLabels": {"grp": "a"}}},
                "status": {"disruptionsAllowed": scenario.budget_allowed},
            }
        )
    view = ClusterView(
        index, nodes, {name: class_view(body) for name, body in classes.items()}, BudgetIndex.of(budgets)
    )
    preemptor = index.get(("h", "preemptor"))
    assert preemptor is not None
    exempt = ExemptionCheck(preemptor, view, now)
    candidates: dict[str, NodeVictims] = {}
    for name, node in nodes.items():
        if not eligible(preemptor, node):
            continue
        chosen = select_victims(
            preemptor.priority,
            dict(preemptor.requests),
            index.on_node(name),
            [],
            node.allocatable,
            exempt,
            lambda found: split_by_budget_violation(found, view.budgets),
        )
        if chosen is not None:
            candidates[name] = chosen
    if not candidates:
        return set(), {}
    best = pick_node(candidates)
    tied = {name for name, found in candidates.items() if _score(found) == _score(candidates[best])}
    return tied, {name: {pod.name for pod in found.victims} for name, found in candidates.items()}


def _score(found: NodeVictims) -> tuple[int, ...]:
    top = found.victims[0].priority
    return (
        found.num_pdb_violations,
        top,
        sum(pod.priority for pod in found.victims),
        len(found.victims),
        min(pod.started or 0 for pod in found.victims if pod.priority == top),
    )


# --- running one scenario ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    node: str | None = None  # the scenario's node name ("n0"), None: pending
    twin_node: str | None = None  # the second preemptor's, where there is one
    deleted: set[str] = field(default_factory=set)
    protected_deleted: set[str] = field(default_factory=set)
    in_vain: set[str] = field(default_factory=set)
    seconds: float | None = None
    error: str | None = None


async def _status_times(api: ApiClient, namespace: str, name: str, scheduled: datetime, started: datetime) -> None:
    core = client.CoreV1Api(api)
    for _ in range(20):
        pod = api.sanitize_for_serialization(await core.read_namespaced_pod(name, namespace))
        conditions = [c for c in pod["status"].get("conditions") or [] if c["type"] != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": _rfc(scheduled)})
        pod["status"]["conditions"] = conditions
        pod["status"]["startTime"] = _rfc(started)
        try:
            await core.replace_namespaced_pod_status(name, namespace, pod)
            return
        except ApiException as error:
            if error.status != 409:
                raise
        await asyncio.sleep(0.2)


async def _until(probe: Any, check: Any, timeout: float, interval: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = await probe()
        if check(found) or time.monotonic() > deadline:
            return found
        await asyncio.sleep(interval)


async def run_scenario(api: ApiClient, scenario: Scenario, way: str, wait: float) -> Outcome:
    core = client.CoreV1Api(api)
    namespace = f"h{scenario.index}-{way}"
    await core.create_namespace({"metadata": {"name": namespace}})
    try:
        for node in scenario.nodes:
            await core.create_node(node_body(scenario, way, node))
        for node in scenario.nodes:
            await wait_node_schedulable(api, node_name(scenario, way, node.name))
        for victim in scenario.victims:
            await core.create_namespaced_pod(namespace, victim_body(scenario, way, victim))

        async def bound() -> list[Any]:
            return (await core.list_namespaced_pod(namespace)).items

        pods = await _until(
            bound, lambda items: len(items) == len(scenario.victims) and all(p.spec.node_name for p in items), 60
        )
        if not all(p.spec.node_name for p in pods):
            return Outcome(error="victims not all bound")
        now = datetime.now(UTC)
        for victim in scenario.victims:
            scheduled = now - timedelta(seconds=victim.scheduled_ago)
            await _status_times(
                api, namespace, victim.name, scheduled, scheduled + timedelta(seconds=victim.started_after)
            )
        if scenario.budget_allowed is not None:
            members = sum(1 for victim in scenario.victims if victim.group)
            policy = client.PolicyV1Api(api)
            await policy.create_namespaced_pod_disruption_budget(
                namespace,
                {
                    "metadata": {"name": "b"},
                    "spec": {
                        "minAvailable": members - scenario.budget_allowed,
                        "selector": {"matchLabels": {"grp": "a"}},
                    },
                },
            )
            await _until(
                lambda: policy.read_namespaced_pod_disruption_budget("b", namespace),
                lambda pdb: pdb.status is not None and pdb.status.current_healthy == members,
                60,
            )
        held = [victim.name for victim in scenario.victims if victim.terminating]
        for name in held:
            await core.delete_namespaced_pod(name, namespace)  # terminating until its finalizer is released
        await asyncio.sleep(1.0)  # every cache (the scheduler's, ours) has the victims' times
        created = time.monotonic()
        for name in scenario.preemptors():
            await core.create_namespaced_pod(namespace, preemptor_body(scenario, way, name))
        releasing = asyncio.create_task(_release(api, namespace, held, RELEASE_SECONDS))

        async def preemptor() -> Any:
            return await core.read_namespaced_pod(PREEMPTORS[0], namespace)

        found = await _until(preemptor, lambda pod: bool(pod.spec.node_name), wait)
        outcome = Outcome()
        if found.spec.node_name:
            outcome.seconds = time.monotonic() - created
            outcome.node = found.spec.node_name.rsplit("-", 1)[-1]
        if scenario.twin:

            async def twin() -> Any:
                return await core.read_namespaced_pod(PREEMPTORS[1], namespace)

            second = await _until(
                twin, lambda pod: bool(pod.spec.node_name), max(0.0, created + wait - time.monotonic())
            )
            outcome.twin_node = second.spec.node_name.rsplit("-", 1)[-1] if second.spec.node_name else None
        left = {
            p.metadata.name
            for p in (await core.list_namespaced_pod(namespace)).items
            if not p.metadata.deletion_timestamp
        }
        await releasing
        by_name = {victim.name: victim for victim in scenario.victims if not victim.terminating}
        outcome.deleted = {name for name in by_name if name not in left}
        outcome.protected_deleted = {name for name in outcome.deleted if by_name[name].protected()}
        outcome.in_vain = {
            name for name in outcome.deleted if by_name[name].node not in {outcome.node, outcome.twin_node}
        }
        return outcome
    except (*API_ERRORS, AssertionError) as error:  # a scenario that fails to set up is reported, not fatal
        return Outcome(error=f"{type(error).__name__}: {str(error)[:200]}")
    finally:
        await _cleanup(api, scenario, way, namespace)


async def _release(api: ApiClient, namespace: str, names: list[str], after: float) -> None:
    """The finalizers of the terminating victims removed, `after` seconds on: they are gone then."""
    await asyncio.sleep(after)
    core = client.CoreV1Api(api)
    for name in names:
        try:
            await core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})
        except ApiException as error:
            if error.status != 404:
                raise


async def _cleanup(api: ApiClient, scenario: Scenario, way: str, namespace: str) -> None:
    core = client.CoreV1Api(api)
    held = [victim.name for victim in scenario.victims if victim.terminating]
    try:
        await _release(api, namespace, held, 0)  # a scenario that failed before its release
    except ApiException:
        pass
    for node in scenario.nodes:
        try:
            await core.delete_node(node_name(scenario, way, node.name))
        except ApiException:
            pass
    try:
        await core.delete_namespace(namespace)
    except ApiException:
        pass


# --- the three ways --------------------------------------------------------------------------------------------


@contextmanager
def way_running(cluster: LocalCluster, way: str) -> Iterator[None]:
    with ptol_webhook(cluster, register=True, log_name=f"harness-{way}.log", extra_args=WAYS[way]):
        if way == "extender":
            guard = json.loads(
                subprocess.run(
                    cluster.kubectl_argv("get", "validatingwebhookconfiguration", GUARD_NAME, "-o", "json"),
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
            )
            cluster.restart_scheduler([scheduler_extender_of(guard)])
        try:
            yield
        finally:
            if way == "extender":
                cluster.restart_scheduler([])


async def setup_classes(api: ApiClient) -> None:
    scheduling = client.SchedulingV1Api(api)
    for name, (value, notes) in CLASSES.items():
        body = {"metadata": {"name": name, "annotations": notes}, "value": value}
        try:
            await scheduling.create_priority_class(body)
        except ApiException as error:
            if error.status != 409:
                raise


def _placed(outcome: Outcome) -> list[str]:
    """Where the preemptors went, whichever of two identical ones went where (the scheduler may serve the
    second first when the first's attempt is in backoff)."""
    return sorted(str(node) for node in (outcome.node, outcome.twin_node))


def past_reference(scenario: Scenario, reference: Outcome, outcome: Outcome) -> bool:
    """With two identical preemptors, the reference deleted a victim in vain: the stock scheduler nominated
    both to a node with room for one (its asynchronous preemption for the second ran before the first's
    nomination was recorded) and counts each against the other there, a race the scheduler running
    upstream's plugin has too; one of them then stays pending, or binds where the other's victims made room.
    This way deleted the same victims, none in vain: a preemptor is bound on each of their nodes."""
    if not scenario.twin or not reference.in_vain or outcome.in_vain or outcome.deleted != reference.deleted:
        return False
    where = {victim.node for victim in scenario.victims if victim.name in reference.deleted}
    return where <= {outcome.node, outcome.twin_node}


def agreement(
    scenario: Scenario, reference: Outcome, outcome: Outcome, ties: set[str], choices: dict[str, set[str]]
) -> bool:
    if _placed(outcome) == _placed(reference) and outcome.deleted == reference.deleted:
        return True
    if past_reference(scenario, reference, outcome):
        return True
    if scenario.twin or outcome.node is None or reference.node is None:
        return False
    in_tie = {f"h{scenario.index}-extender-{outcome.node}", f"h{scenario.index}-extender-{reference.node}"} <= ties
    on_node = {name for name in outcome.deleted}
    held = {victim.name for victim in scenario.victims if victim.terminating}  # gone by the harness, not counted
    return in_tie and on_node == choices.get(f"h{scenario.index}-extender-{outcome.node}", set()) - held


def summary(way: str, scenarios: list[Scenario], results: dict[str, list[Outcome]], ties: list[Any]) -> dict[str, Any]:
    outcomes = results[way]
    reference = results["extender"]
    agreed = [
        agreement(s, r, o, t, c)
        for s, r, o, (t, c) in zip(scenarios, reference, outcomes, ties, strict=True)
        if not o.error and not r.error
    ]
    seconds = [o.seconds for o in outcomes if o.seconds is not None]
    return {
        "way": way,
        "scenarios": len([o for o in outcomes if not o.error]),
        "errors": len([o for o in outcomes if o.error]),
        "agreement": sum(agreed) / len(agreed) if agreed else None,
        "past_reference": sum(
            1
            for s, r, o in zip(scenarios, reference, outcomes, strict=True)
            if not o.error and not r.error and way != "extender" and past_reference(s, r, o)
        ),
        "bound": sum(1 for o in outcomes if o.node is not None),
        "protected_deleted": sum(len(o.protected_deleted) for o in outcomes),
        "deleted_in_vain": sum(len(o.in_vain) for o in outcomes),
        "median_seconds_to_bind": statistics.median(seconds) if seconds else None,
        "two_preemptors": sum(1 for s, o in zip(scenarios, outcomes, strict=True) if s.twin and not o.error),
        "both_bound": sum(1 for s, o in zip(scenarios, outcomes, strict=True) if s.twin and o.node and o.twin_node),
        "both_on_one_node": sum(
            1 for s, o in zip(scenarios, outcomes, strict=True) if s.twin and o.node and o.node == o.twin_node
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=12)
    parser.add_argument("--wait", type=float, default=30.0, help="seconds a preemptor may stay pending")
    parser.add_argument("--ways", default="extender,guard,steering")
    parser.add_argument("--only", type=int, nargs="*", help="run only these scenarios (their indexes)")
    parser.add_argument("--cluster-dir", help="keep the control plane (and the components' logs) here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    scenarios = [generate(rng, index) for index in range(args.scenarios)]
    run_only = set(args.only or range(args.scenarios))
    ways = args.ways.split(",")
    assert ways[0] == "extender", "the reference runs first"
    results: dict[str, list[Outcome]] = {}
    with local_cluster(args.cluster_dir) as cluster:
        install_crd(cluster)

        async def prepare() -> None:
            async with await api_client(cluster) as api:
                await setup_classes(api)

        asyncio.run(prepare())
        for way in ways:
            started = time.monotonic()
            with way_running(cluster, way):

                async def run_all(way: str = way) -> list[Outcome]:
                    found: list[Outcome | None] = [None] * len(scenarios)
                    async with await api_client(cluster) as api:

                        async def one(scenario: Scenario) -> None:
                            found[scenario.index] = await run_scenario(api, scenario, way, args.wait)

                        await bounded([s for s in scenarios if s.index in run_only], one, args.concurrency)
                    return [outcome or Outcome(error="not run") for outcome in found]

                results[way] = asyncio.run(run_all())
            print(f"{way}: {len(scenarios)} scenarios in {time.monotonic() - started:.0f} s", flush=True)
        version = cluster.kubernetes_version
    now = datetime.now(UTC)
    ties = [predicted_ties(scenario, "extender", now) for scenario in scenarios]
    rows = [summary(way, scenarios, results, ties) for way in ways]
    print(
        f"{'way':<10} {'agree':>7} {'bound':>6} {'protected':>10} {'in vain':>8} {'median s':>9} {'errors':>7}"
        f" {'two preemptors: both bound, on one node':>42} {'past ref.':>10}"
    )
    for row in rows:
        agree = "-" if row["agreement"] is None else f"{100 * row['agreement']:.1f}%"
        median = "-" if row["median_seconds_to_bind"] is None else f"{row['median_seconds_to_bind']:.1f}"
        print(
            f"{row['way']:<10} {agree:>7} {row['bound']:>6} {row['protected_deleted']:>10} "
            f"{row['deleted_in_vain']:>8} {median:>9} {row['errors']:>7}"
            f" {row['two_preemptors']:>23}: {row['both_bound']}, {row['both_on_one_node']}"
            f" {row['past_reference']:>10}"
        )
    disagreements = [
        {
            "scenario": s.index,
            "way": way,
            "reference": vars(results["extender"][s.index]) | {},
            "got": vars(results[way][s.index]),
        }
        for way in ways[1:]
        for s in scenarios
        if not results[way][s.index].error
        and not agreement(s, results["extender"][s.index], results[way][s.index], *ties[s.index])
    ]
    if args.only:
        print(json.dumps(disagreements, default=sorted, indent=1))
        return  # a few scenarios, to look into: the saved figures stay those of a whole run
    path = save_results(
        f"steering_agreement-{version}",
        {
            "kubernetes": version,
            "seed": args.seed,
            "scenarios": args.scenarios,
            "wait_seconds": args.wait,
            "rows": rows,
            "disagreements": json.loads(json.dumps(disagreements, default=sorted)),
        },
    )
    print(f"saved to {shown(path)}")


if __name__ == "__main__":
    main()
