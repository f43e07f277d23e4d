"""Kueue's preemption held to the toleration contract by the boost (`ptol run --kueue on`, docs/tasks/kueue.md):
Kueue's own search passes a protected Job by and takes another, as upstream's plugin makes the scheduler do. The
boost is written once a pending Workload may take the protected one: a new one's creation waits for it.

Each test has a ClusterQueue of 4 CPUs (`withinClusterQueue: LowerPriority`) and a node of 16, so quota, not
room, makes Kueue preempt; each Job's pods keep running on KWOK's node until Kueue evicts the Job.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.kueue import FEATURE_GATES
from preemption_toleration.kueue.plan import FIELD_MANAGER
from preemption_toleration.records.workload import PRIORITY_BOOST
from tests.integration.components import RunProcess, ptol_run
from tests.integration.conftest import Kubectl
from tests.integration.helpers import past_the_second_of, unique_name
from tests.integration.kueue_objects import (
    cluster_queue,
    conditions,
    flavor,
    kueue_objects,
    local_queue,
    queue_with_a_node,
    running_job,
    suspends,
    until,
    workload_of,
)
from tests.integration.objects import MIN, TOL, apply, class_manifest, policy_manifest
from tests.metrics import scrape, total

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

FOREVER, WINDOW_SECONDS = "-1", 20
LONG_WINDOW_SECONDS = 45  # for two replicas starting on a loaded machine (CI runs other suites beside)


@pytest.fixture(scope="module")
def kueue_run(kueue_cluster: LocalCluster) -> Iterator[RunProcess]:
    with ptol_run(kueue_cluster, "--kueue", "on") as process:
        yield process


@pytest.fixture(scope="module")
def classes(kueue_cluster: LocalCluster, kueue_kubectl: Kubectl) -> Iterator[dict[str, str]]:
    """PriorityClasses: two of 8000 (one protected from below 10000 for ever, one for WINDOW_SECONDS), a plain
    one of 8000, and preemptors of 9000, 9999 (the minimum - 1, which the boost raises the protected to) and
    10000."""
    suffix = unique_name("k")
    roles = ("protected", "window", "long-window", "plain", "high", "edge", "critical")
    names = {role: f"{role}-{suffix}" for role in roles}
    specs = {
        "protected": (8000, {MIN: "10000", TOL: FOREVER}),
        "window": (8000, {MIN: "10000", TOL: str(WINDOW_SECONDS)}),
        "long-window": (8000, {MIN: "10000", TOL: str(LONG_WINDOW_SECONDS)}),
        "plain": (8000, {}),
        "high": (9000, {}),
        "edge": (9999, {}),
        "critical": (10000, {}),
    }
    manifests = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": names[role], "annotations": annotations},
            "value": value,
        }
        for role, (value, annotations) in specs.items()
    ]
    kueue_kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(m) for m in manifests))
    yield names
    kueue_kubectl("delete", "priorityclass", *names.values(), "--ignore-not-found", check=False)


@pytest.fixture
async def queue(kueue_cluster: LocalCluster, kueue_kubectl: Kubectl) -> AsyncIterator[tuple[str, str]]:
    """A namespace with a LocalQueue of a ClusterQueue of 4 CPUs that preempts lower priorities within
    itself, and a node of 16 CPUs: (namespace, queue)."""
    preemption = {"withinClusterQueue": "LowerPriority"}
    async with queue_with_a_node(kueue_cluster, kueue_kubectl, "4", "16", preemption) as (namespace, name, _):
        yield namespace, name


def submit(kubectl: Kubectl, namespace: str, queue: str, name: str, priority_class: str, cpus: int) -> None:
    """A Job of `cpus` pods of 1 CPU each, queued to `queue`, whose pods run until it is evicted."""
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(running_job(name, queue, priority_class, cpus)))


def workload(kubectl: Kubectl, namespace: str, job: str) -> dict[str, Any] | None:
    return workload_of(kubectl, namespace, job)


def admitted(kubectl: Kubectl, namespace: str, job: str) -> bool:
    state = conditions(workload(kubectl, namespace, job))
    return state.get("Admitted") == "True" and state.get("Evicted") != "True"


def evicted(kubectl: Kubectl, namespace: str, job: str) -> bool:
    return conditions(workload(kubectl, namespace, job)).get("Evicted") == "True"


def boost(kubectl: Kubectl, namespace: str, job: str) -> str | None:
    return ((workload(kubectl, namespace, job) or {}).get("metadata", {}).get("annotations") or {}).get(PRIORITY_BOOST)


def running(kubectl: Kubectl, namespace: str, job: str, pods: int) -> bool:
    found = json.loads(kubectl("get", "pods", "-n", namespace, "-l", f"job-name={job}", "-o", "json").stdout)
    return sum(p["status"].get("phase") == "Running" for p in found["items"]) == pods


def admitted_and_running(kubectl: Kubectl, namespace: str, job: str, pods: int) -> None:
    until(f"{job} admitted", lambda: admitted(kubectl, namespace, job))
    until(f"{job}'s {pods} pods running", lambda: running(kubectl, namespace, job, pods))


def protected(kubectl: Kubectl, namespace: str, queue: str, job: str, priority_class: str, cpus: int) -> None:
    """A Job of a class protected from below 10000 submitted, admitted and running (boosted to 9999 once a pending
    Workload may take it)."""
    submit(kubectl, namespace, queue, job, priority_class, cpus)
    admitted_and_running(kubectl, namespace, job, cpus)


def tried(kubectl: Kubectl, namespace: str, job: str) -> None:
    """Waits until Kueue tried the Job's Workload and left it pending (QuotaReserved=False)."""
    until(
        f"Kueue's try of {job}", lambda: conditions(workload(kubectl, namespace, job)).get("QuotaReserved") == "False"
    )


def plain_then_protected(kubectl: Kubectl, namespace: str, queue: str, classes: dict[str, str], cpus: int) -> None:
    """A plain Job of 8000, then a protected one ("kept"), each of `cpus` pods, in `queue`: of equal priorities
    Kueue takes the last admitted first, so unboosted the protected Job would be its victim."""
    submit(kubectl, namespace, queue, "plain", classes["plain"], cpus)
    admitted_and_running(kubectl, namespace, "plain", cpus)
    protected(kubectl, namespace, queue, "kept", classes["protected"], cpus)


def high_takes_the_plain_job(kubectl: Kubectl, namespace: str, queue: str, classes: dict[str, str], cpus: int) -> None:
    """A Job of 9000 (below the protected minimum) of `cpus` pods in `queue` admitted, Kueue preempting the plain
    Job and passing the protected one by."""
    submit(kubectl, namespace, queue, "high", classes["high"], cpus)
    until("the high Job admitted", lambda: admitted(kubectl, namespace, "high"))
    assert evicted(kubectl, namespace, "plain"), "Kueue preempted the unprotected Job"
    assert admitted(kubectl, namespace, "kept") and not evicted(kubectl, namespace, "kept")


def boosts(server: RunProcess, outcome: str) -> float:
    """`ptol_kueue_boosts_total` of `outcome`, as the server's /metrics says it."""
    return total(scrape(f"{server.metrics_base}/metrics"), "ptol_kueue_boosts_total", outcome=outcome)


def events_of(kubectl: Kubectl, namespace: str, reason: str, name: str | None = None) -> list[str]:
    """The messages of the Events of `reason` in `namespace` (about the object `name`: any)."""
    found = json.loads(kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    return [
        event["message"]
        for event in found
        if event.get("reason") == reason and name in (None, event["involvedObject"].get("name"))
    ]


async def test_kueue_passes_a_protected_job_by_and_preempts_an_unprotected_one_instead(
    kueue_run: RunProcess, kueue_kubectl: Kubectl, classes: dict[str, str], queue: tuple[str, str]
) -> None:
    namespace, name = queue
    plain_then_protected(kueue_kubectl, namespace, name, classes, 2)
    time.sleep(2)  # what the server would write, written
    assert boost(kueue_kubectl, namespace, "kept") is None, "no pending Workload may take it: no boost written"
    assert boosts(kueue_run, "applied") == 0
    high_takes_the_plain_job(kueue_kubectl, namespace, name, classes, 2)
    assert boost(kueue_kubectl, namespace, "kept") == "1999", "boosted for the high Job"
    assert boost(kueue_kubectl, namespace, "plain") is None, "an unprotected Job is not boosted"
    assert boosts(kueue_run, "applied") >= 1, "counted on /metrics"
    assert "kueue workload's creation held for the boosts it needs" in kueue_run.log(), "written before it existed"


async def test_a_preemptor_at_the_minimum_preempts_the_protected_job(
    kueue_run: RunProcess, kueue_kubectl: Kubectl, classes: dict[str, str], queue: tuple[str, str]
) -> None:
    namespace, name = queue
    protected(kueue_kubectl, namespace, name, "kept", classes["protected"], 4)
    submit(kueue_kubectl, namespace, name, "critical", classes["critical"], 4)  # 10000: the minimum
    until("the critical Job admitted", lambda: admitted(kueue_kubectl, namespace, "critical"))
    assert evicted(kueue_kubectl, namespace, "kept")
    until("the evicted Job's boost removed", lambda: boost(kueue_kubectl, namespace, "kept") is None)


async def test_below_the_minimum_the_protected_job_stays_and_the_preemptor_waits(
    kueue_run: RunProcess, kueue_kubectl: Kubectl, classes: dict[str, str], queue: tuple[str, str]
) -> None:
    namespace, name = queue
    protected(kueue_kubectl, namespace, name, "kept", classes["protected"], 4)
    submit(kueue_kubectl, namespace, name, "high", classes["high"], 4)
    tried(kueue_kubectl, namespace, "high")  # and found no victim it may take
    assert not admitted(kueue_kubectl, namespace, "high")
    assert admitted(kueue_kubectl, namespace, "kept") and not evicted(kueue_kubectl, namespace, "kept")
    assert boost(kueue_kubectl, namespace, "kept") == "1999"


async def test_when_the_window_ends_the_waiting_job_is_admitted_within_seconds(
    kueue_run: RunProcess, kueue_kubectl: Kubectl, classes: dict[str, str], queue: tuple[str, str]
) -> None:
    namespace, name = queue
    protected(kueue_kubectl, namespace, name, "kept", classes["window"], 4)
    submit(kueue_kubectl, namespace, name, "high", classes["high"], 4)
    tried(kueue_kubectl, namespace, "high")  # and found no victim it may take
    assert not admitted(kueue_kubectl, namespace, "high"), "the window holds"
    # Kueue parks the high Job as inadmissible; only a nudge makes it try again when the window ends
    try:
        until(
            "the high Job admitted after the window",
            lambda: admitted(kueue_kubectl, namespace, "high"),
            WINDOW_SECONDS + 15,
        )
    except AssertionError as error:
        found = {job: workload(kueue_kubectl, namespace, job) for job in ("kept", "high")}
        shown = {
            job: ((w or {}).get("metadata", {}).get("annotations"), (w or {}).get("status", {}).get("conditions"))
            for job, w in found.items()
        }
        raise AssertionError(f"{error}: {json.dumps(shown, indent=1)}") from None
    assert evicted(kueue_kubectl, namespace, "kept")
    assert boost(kueue_kubectl, namespace, "kept") is None
    assert boosts(kueue_run, "removed") >= 1 and boosts(kueue_run, "nudged") >= 1, "counted on /metrics"


async def test_a_policy_applied_while_the_job_runs_protects_it_at_once(
    kueue_run: RunProcess, kueue_kubectl: Kubectl, classes: dict[str, str], queue: tuple[str, str]
) -> None:
    namespace, name = queue
    klass = unique_name("governed")
    apply(kueue_kubectl, class_manifest(klass))
    try:
        submit(kueue_kubectl, namespace, name, "governed", klass, 4)
        admitted_and_running(kueue_kubectl, namespace, "governed", 4)
        assert boost(kueue_kubectl, namespace, "governed") is None, "no toleration: no boost"
        spec = {"priorityClassName": klass, "minimumPreemptablePriority": 10000, "tolerationSeconds": -1}
        apply(kueue_kubectl, policy_manifest(klass, spec))
        until("the policy applied", lambda: ready(kueue_kubectl, klass))
        time.sleep(1)  # the server's caches see the class's annotations
        submit(kueue_kubectl, namespace, name, "high", classes["high"], 4)
        tried(kueue_kubectl, namespace, "high")  # and found no victim it may take
        assert admitted(kueue_kubectl, namespace, "governed") and not evicted(kueue_kubectl, namespace, "governed")
        assert boost(kueue_kubectl, namespace, "governed") == "1999"
    finally:
        kueue_kubectl("delete", "ptp,priorityclass", klass, "--ignore-not-found", check=False)


def workload_priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def ready(kubectl: Kubectl, policy: str) -> str | None:
    """The message of the policy's Ready condition once it is True."""
    found = json.loads(kubectl("get", "ptp", policy, "-o", "json").stdout)
    conditions = {c["type"]: c for c in found.get("status", {}).get("conditions") or []}
    ready = conditions.get("Ready") or {}
    return ready.get("message") if ready.get("status") == "True" else None


def workload_name(kubectl: Kubectl, namespace: str, job: str) -> str:
    return str((workload(kubectl, namespace, job) or {})["metadata"]["name"])


def explain_workload(cluster: LocalCluster, namespace: str, name: str) -> str:
    """What `ptol explain workload` prints of the Workload."""
    argv = [sys.executable, "-m", "preemption_toleration", "explain", "workload", f"{namespace}/{name}"]
    argv += ["--kubeconfig", str(cluster.kubeconfig)]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


async def test_a_workload_priority_class_governed_by_a_policy_protects_its_jobs(
    kueue_cluster: LocalCluster, kueue_run: RunProcess, kueue_kubectl: Kubectl, queue: tuple[str, str]
) -> None:
    """A policy of `priorityClassKind: WorkloadPriorityClass`: the operator writes the toleration on Kueue's class,
    and the Jobs whose Workloads take their priority from it are kept from preemptors below its minimum."""
    namespace, name = queue
    protected, high = unique_name("wpc-protected"), unique_name("wpc-high")
    kueue_kubectl(
        "apply",
        "-f",
        "-",
        input="\n---\n".join(json.dumps(workload_priority_class(*c)) for c in ((protected, 8000), (high, 9000))),
    )
    try:
        spec = {
            "priorityClassKind": "WorkloadPriorityClass",
            "priorityClassName": protected,
            "minimumPreemptablePriority": 10000,
            "tolerationSeconds": -1,
        }
        apply(kueue_kubectl, policy_manifest(protected, spec))
        message = until("the policy applied", lambda: ready(kueue_kubectl, protected))
        assert message.startswith(f"Applied to WorkloadPriorityClass {protected}: "), message
        found = json.loads(kueue_kubectl("get", "workloadpriorityclass", protected, "-o", "json").stdout)
        annotations = found["metadata"].get("annotations") or {}
        assert (annotations.get(MIN), annotations.get(TOL)) == ("10000", "-1")
        assert kueue_kubectl("get", "priorityclass", protected, check=False).returncode != 0, "no PriorityClass made"

        job = running_job("kept", name, "", 4, workload_priority_class=protected)
        kueue_kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(job))
        admitted_and_running(kueue_kubectl, namespace, "kept", 4)
        ref = (workload(kueue_kubectl, namespace, "kept") or {})["spec"]["priorityClassRef"]
        assert (ref["kind"], ref["name"]) == ("WorkloadPriorityClass", protected), "Kueue took the class's priority"
        said = explain_workload(kueue_cluster, namespace, workload_name(kueue_kubectl, namespace, "kept"))
        assert "below 10000 for ever: the boost it needs is 1999" in said, said
        assert "once a pending Workload may take this one below its minimum" in said, said
        preemptor = running_job("high", name, "", 4, workload_priority_class=high)
        kueue_kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(preemptor))
        tried(kueue_kubectl, namespace, "high")  # and found no victim it may take
        assert not admitted(kueue_kubectl, namespace, "high")
        assert admitted(kueue_kubectl, namespace, "kept") and not evicted(kueue_kubectl, namespace, "kept")
        assert boost(kueue_kubectl, namespace, "kept") == "1999"
        said = explain_workload(kueue_cluster, namespace, workload_name(kueue_kubectl, namespace, "kept"))
        assert f"priority 8000 (from WorkloadPriorityClass {protected})." in said, said
        assert "effective priority 9999 in Kueue" in said and "below 10000 for ever" in said, said
    finally:
        kueue_kubectl("delete", "ptp", protected, "--ignore-not-found", check=False)
        kueue_kubectl("delete", "workloadpriorityclass", protected, high, "--ignore-not-found", check=False)


@pytest.fixture
async def cohort(kueue_cluster: LocalCluster, kueue_kubectl: Kubectl) -> AsyncIterator[tuple[str, str, str]]:
    """Two ClusterQueues of one cohort and one flavor: a lender of 4 CPUs that reclaims them from any priority
    (`reclaimWithinCohort: Any`), and a borrower of none, each with a LocalQueue in one namespace, and a node of 16
    CPUs: (namespace, lender's queue, borrower's queue)."""
    namespace, name = unique_name("kueue"), unique_name("cohort")
    lender, borrower = f"{name}-lender", f"{name}-borrower"
    manifests = [
        flavor(name),
        cluster_queue(lender, name, "4", {"reclaimWithinCohort": "Any"}, cohort=name),
        cluster_queue(borrower, name, "0", cohort=name),
        local_queue(lender, namespace),
        local_queue(borrower, namespace),
    ]
    async with kueue_objects(kueue_cluster, kueue_kubectl, namespace, "16", manifests, lender):
        yield namespace, lender, borrower


async def test_under_reclaim_within_cohort_any_no_priority_protects_and_the_backstop_says_so(
    kueue_run: RunProcess, kueue_kubectl: Kubectl, classes: dict[str, str], cohort: tuple[str, str, str]
) -> None:
    """`reclaimWithinCohort: Any` (docs/contract.md, "Kueue"): Kueue takes back borrowed quota from any priority, so
    the boost cannot keep a protected Job that borrows; its eviction is reported on its Workload, not refused."""
    namespace, lender, borrower = cohort
    protected(kueue_kubectl, namespace, borrower, "kept", classes["protected"], 4)  # on the lender's quota
    submit(kueue_kubectl, namespace, lender, "reclaim", classes["plain"], 4)  # 8000: far below the minimum
    until("the lender's Job admitted", lambda: admitted(kueue_kubectl, namespace, "reclaim"))
    assert evicted(kueue_kubectl, namespace, "kept"), "Kueue reclaimed its quota from the protected Job"
    reason = conditions(workload(kueue_kubectl, namespace, "kept")).get("Preempted")
    assert reason == "True"
    told = until("the backstop's Event", lambda: events_of(kueue_kubectl, namespace, "PreemptionWouldBeRefused"))
    assert "(InCohortReclamation)" in told[0] and "of effective priority 8000" in told[0], told
    until("the evicted Job's boost removed", lambda: boost(kueue_kubectl, namespace, "kept") is None)


@pytest.fixture
async def newer_equal_queue(kueue_cluster: LocalCluster, kueue_kubectl: Kubectl) -> AsyncIterator[tuple[str, str, str]]:
    """A ClusterQueue of 4 CPUs that preempts lower priorities, and equal ones queued later, within itself
    (`withinClusterQueue: LowerOrNewerEqualPriority`), with two LocalQueues in one namespace, one of them held
    (`stopPolicy: Hold`), and a node of 16 CPUs: (namespace, queue, held queue)."""
    namespace, name = unique_name("kueue"), unique_name("newer")
    held = f"{name}-held"
    manifests = [
        flavor(name),
        cluster_queue(name, name, "4", {"withinClusterQueue": "LowerOrNewerEqualPriority"}),
        local_queue(name, namespace),
        local_queue(held, namespace, cluster_queue=name, held=True),
    ]
    async with kueue_objects(kueue_cluster, kueue_kubectl, namespace, "16", manifests, name):
        yield namespace, name, held


async def test_under_lower_or_newer_equal_priority_the_boost_keeps_the_protected_job_from_lower_priorities(
    kueue_run: RunProcess,
    kueue_kubectl: Kubectl,
    classes: dict[str, str],
    newer_equal_queue: tuple[str, str, str],
) -> None:
    namespace, name, _ = newer_equal_queue
    plain_then_protected(kueue_kubectl, namespace, name, classes, 2)
    high_takes_the_plain_job(kueue_kubectl, namespace, name, classes, 2)


async def test_under_lower_or_newer_equal_priority_an_older_preemptor_at_the_minimum_less_one_is_reported(
    kueue_run: RunProcess,
    kueue_kubectl: Kubectl,
    classes: dict[str, str],
    newer_equal_queue: tuple[str, str, str],
) -> None:
    """The limit docs/contract.md states: the boost raises a protected Workload to its minimum - 1, which
    `LowerOrNewerEqualPriority` lets a preemptor of exactly that priority preempt when it was queued first. Kueue
    evicts the protected Job; the backstop reports it on the Workload."""
    namespace, name, held = newer_equal_queue
    submit(kueue_kubectl, namespace, held, "edge", classes["edge"], 4)  # 9999, queued first but held
    queued = until("the held Job's Workload", lambda: workload(kueue_kubectl, namespace, "edge"))
    await past_the_second_of(queued["metadata"]["creationTimestamp"])  # the protected one queued later
    protected(kueue_kubectl, namespace, name, "kept", classes["protected"], 4)
    kueue_kubectl("patch", "localqueue", "-n", namespace, held, "--type=merge", "-p", '{"spec":{"stopPolicy":"None"}}')
    until("the older preemptor admitted", lambda: admitted(kueue_kubectl, namespace, "edge"))
    assert evicted(kueue_kubectl, namespace, "kept"), "Kueue took the protected Job, of equal effective priority"
    told = until("the backstop's Event", lambda: events_of(kueue_kubectl, namespace, "PreemptionWouldBeRefused"))
    assert "(InClusterQueue)" in told[0] and "of effective priority 9999" in told[0], told


@pytest.fixture
async def borrowing_cohort(kueue_cluster: LocalCluster, kueue_kubectl: Kubectl) -> AsyncIterator[tuple[str, str, str]]:
    """Three ClusterQueues of 2 CPUs each in one cohort and one flavor: a preemptor's queue that reclaims from any
    priority (`reclaimWithinCohort: Any`) and may preempt while it borrows (`borrowWithinCohort: LowerPriority`,
    `maxPriorityThreshold: 9500`), a borrower's queue, and a lender without a LocalQueue; a node of 16 CPUs:
    (namespace, preemptor's queue, borrower's queue)."""
    namespace, name = unique_name("kueue"), unique_name("borrow")
    preemptor, borrower, lender = f"{name}-preemptor", f"{name}-borrower", f"{name}-lender"
    borrowing = {"policy": "LowerPriority", "maxPriorityThreshold": 9500}
    preemption = {"reclaimWithinCohort": "Any", "borrowWithinCohort": borrowing}
    manifests = [
        flavor(name),
        cluster_queue(preemptor, name, "2", preemption, cohort=name),
        cluster_queue(borrower, name, "2", cohort=name),
        cluster_queue(lender, name, "2", cohort=name),
        local_queue(preemptor, namespace),
        local_queue(borrower, namespace),
    ]
    async with kueue_objects(kueue_cluster, kueue_kubectl, namespace, "16", manifests, preemptor):
        yield namespace, preemptor, borrower


async def test_a_preemptor_that_must_borrow_passes_a_protected_job_by_under_borrow_within_cohort(
    kueue_run: RunProcess,
    kueue_kubectl: Kubectl,
    classes: dict[str, str],
    borrowing_cohort: tuple[str, str, str],
) -> None:
    """`borrowWithinCohort` (docs/contract.md, "Kueue"): while it borrows, a preemptor takes only Workloads below its
    own effective priority and at or below the threshold, by their effective priority: the boosted Job (9999) is
    neither, so Kueue takes the unprotected Job of the borrowing queue instead, even under `reclaimWithinCohort:
    Any`, where no priority would protect a Job from a preemptor that did not borrow."""
    namespace, preemptor, borrower = borrowing_cohort
    plain_then_protected(kueue_kubectl, namespace, borrower, classes, 2)  # the protected Job borrowing
    high_takes_the_plain_job(kueue_kubectl, namespace, preemptor, classes, 4)  # 2 CPUs more than its queue's own


def fair_share_shown(kubectl: Kubectl, cluster_queue: str) -> bool:
    """Whether Kueue writes the ClusterQueue's fair share (`status.fairSharing`): only with fair sharing on."""
    found = json.loads(kubectl("get", "clusterqueue", cluster_queue, "-o", "json").stdout)
    return "fairSharing" in found.get("status", {})


async def test_under_fair_sharing_the_boost_keeps_the_protected_job_as_under_classical_preemption(
    kueue_cluster: LocalCluster,
    kueue_run: RunProcess,
    kueue_kubectl: Kubectl,
    classes: dict[str, str],
    queue: tuple[str, str],
) -> None:
    """Kueue with preemption by fair sharing (its `fairSharing` configuration) filters its candidates by the same
    effective priority (docs/contract.md, "Kueue"): the protected Job is passed by, the plain one taken."""
    namespace, name = queue
    kueue_run.stop()
    kueue_cluster.restart_kueue(fair_sharing=True)
    try:
        kueue_run.start()
        until("Kueue's webhook suspending the queue's Jobs", lambda: suspends(kueue_kubectl, namespace, name))
        until("the ClusterQueue's fair share in its status", lambda: fair_share_shown(kueue_kubectl, name))
        plain_then_protected(kueue_kubectl, namespace, name, classes, 2)
        high_takes_the_plain_job(kueue_kubectl, namespace, name, classes, 2)
    finally:
        kueue_run.stop()
        kueue_cluster.restart_kueue()
        kueue_run.start()


async def test_a_boost_outliving_a_stopped_server_is_removed_when_it_starts(
    kueue_run: RunProcess, kueue_kubectl: Kubectl, classes: dict[str, str], queue: tuple[str, str]
) -> None:
    """The server stopped mid-window: Kueue keeps the boost meanwhile (the Job protected longer than its window,
    as with the guard down), and the server, started again, removes it and lets the waiting Job in."""
    namespace, name = queue
    protected(kueue_kubectl, namespace, name, "kept", classes["window"], 4)
    submit(kueue_kubectl, namespace, name, "high", classes["high"], 4)
    tried(kueue_kubectl, namespace, "high")
    kueue_run.stop()
    try:
        time.sleep(WINDOW_SECONDS + 2)
        assert boost(kueue_kubectl, namespace, "kept") == "1999" and not admitted(kueue_kubectl, namespace, "high")
    finally:
        kueue_run.start()
    until("the boost left behind removed", lambda: boost(kueue_kubectl, namespace, "kept") is None)
    until("the high Job admitted", lambda: admitted(kueue_kubectl, namespace, "high"))


def boost_managers(kubectl: Kubectl, namespace: str, job: str) -> list[str]:
    """The field managers whose managedFields entry holds the boost annotation."""
    name = workload_name(kubectl, namespace, job)
    found = json.loads(kubectl("get", "workload", "-n", namespace, name, "-o", "json", "--show-managed-fields").stdout)
    entries = found["metadata"].get("managedFields") or []
    key = f"f:{PRIORITY_BOOST}"
    return [
        e["manager"] for e in entries if key in e.get("fieldsV1", {}).get("f:metadata", {}).get("f:annotations", {})
    ]


async def test_two_replicas_boost_as_one_and_agree_when_the_window_ends(
    kueue_cluster: LocalCluster,
    kueue_run: RunProcess,
    kueue_kubectl: Kubectl,
    classes: dict[str, str],
    queue: tuple[str, str],
) -> None:
    """The chart's two webhook replicas (`ptol run --webhook-replicas 2`): both plan every Workload, the boost is
    one annotation under one field manager, the window holds the preemptor off, and its end lets it in."""
    namespace, name = queue
    kueue_run.stop()
    try:
        with ptol_run(kueue_cluster, "--kueue", "on", "--webhook-replicas", "2"):
            protected(kueue_kubectl, namespace, name, "kept", classes["long-window"], 4)
            submit(kueue_kubectl, namespace, name, "high", classes["high"], 4)
            # asked at once: the window runs from the pods' scheduling, then the boost is removed
            until("one boost under one field manager", lambda: boost_managers(kueue_kubectl, namespace, "kept"))
            assert boost_managers(kueue_kubectl, namespace, "kept") == [FIELD_MANAGER]
            tried(kueue_kubectl, namespace, "high")
            assert not admitted(kueue_kubectl, namespace, "high"), "the window holds with two replicas"
            until(
                "the high Job admitted after the window",
                lambda: admitted(kueue_kubectl, namespace, "high"),
                LONG_WINDOW_SECONDS + 20,
            )
            assert evicted(kueue_kubectl, namespace, "kept")
            until("the evicted Job's boost removed", lambda: boost(kueue_kubectl, namespace, "kept") is None)
    finally:
        kueue_run.start()


async def test_with_kueues_gate_off_no_boost_is_written_and_the_workload_says_why(
    kueue_cluster: LocalCluster,
    kueue_run: RunProcess,
    kueue_kubectl: Kubectl,
    classes: dict[str, str],
    queue: tuple[str, str],
) -> None:
    """Kueue ignores the boost with its PriorityBoost gate off: the server, started beside such a Kueue, finds it
    out, writes nothing and says so on the Workload it would have protected and on the policy that governs its
    class (its PriorityBoost condition, beside the operator's Ready), never half. Kueue then preempts the
    protected Job for one below its minimum, which the backstop reports on the Workload (not refused). With the
    gate on again, the policy's condition says every boost is written."""
    namespace, name = queue
    governed = unique_name("gated")
    spec = {"priorityClassName": governed, "minimumPreemptablePriority": 10000, "tolerationSeconds": -1}
    apply(kueue_kubectl, class_manifest(governed))
    apply(kueue_kubectl, policy_manifest(governed, spec))
    until("the policy applied", lambda: ready(kueue_kubectl, governed))
    kueue_run.stop()
    kueue_cluster.restart_kueue({**FEATURE_GATES, "PriorityBoost": False})
    restored = False
    try:
        kueue_run.start()
        submit(kueue_kubectl, namespace, name, "kept", governed, 4)
        admitted_and_running(kueue_kubectl, namespace, "kept", 4)
        said = until("the Warning Event", lambda: events_of(kueue_kubectl, namespace, "PriorityBoostNotWritten"))
        assert "Kueue's PriorityBoost feature gate is off" in said[0]
        assert boost(kueue_kubectl, namespace, "kept") is None
        condition = until("the policy's condition", lambda: boost_condition(kueue_kubectl, governed, "False"))
        assert condition["reason"] == "PriorityBoostGateOff", condition
        assert "Kueue may preempt 1 Workload of this policy's classes below their minimum" in condition["message"]
        assert f"ptol explain workload {namespace}/" in condition["message"], condition
        assert ready(kueue_kubectl, governed), "the operator's Ready stands beside it"
        told = until(
            "the policy's Event", lambda: events_of(kueue_kubectl, "default", "PriorityBoostGateOff", name=governed)
        )
        assert "Kueue may preempt" in told[0], "a Warning Event on the policy"

        submit(kueue_kubectl, namespace, name, "high", classes["high"], 4)  # 9000: below the minimum
        until("the high Job admitted", lambda: admitted(kueue_kubectl, namespace, "high"))
        assert evicted(kueue_kubectl, namespace, "kept"), "without the boost, Kueue preempts the protected Job"
        told = until("the backstop's Event", lambda: events_of(kueue_kubectl, namespace, "PreemptionWouldBeRefused"))
        assert f"for Workload {namespace}/" in told[0] and "of effective priority 9000" in told[0], told
        assert "below 10000, for ever" in told[0], told
        evictions = scrape(f"{kueue_run.metrics_base}/metrics")
        assert total(evictions, "ptol_kueue_protected_evictions_total", protection="Forever") >= 1
        said = explain_workload(kueue_cluster, namespace, workload_name(kueue_kubectl, namespace, "kept"))
        assert "The server said it did not write the boost (PriorityBoostNotWritten): Kueue's PriorityBoost" in said
        assert "The server reported (PreemptionWouldBeRefused): Kueue preempted this Workload" in said, said

        kueue_run.stop()
        kueue_cluster.restart_kueue()
        restored = True
        kueue_run.start()
        condition = until("the condition cleared", lambda: boost_condition(kueue_kubectl, governed, "True"))
        assert condition["reason"] == "BoostsWritten", condition

        kueue_run.stop()  # Kueue support turned off: the operator drops the condition nothing writes any more
        try:
            with ptol_run(kueue_cluster):
                until(
                    "the condition dropped",
                    lambda: not any(boost_condition(kueue_kubectl, governed, s) for s in ("True", "False")),
                )
                assert ready(kueue_kubectl, governed)
        finally:
            kueue_run.start()
    finally:
        if not restored:
            kueue_run.stop()
            kueue_cluster.restart_kueue()
            kueue_run.start()
        kueue_kubectl("delete", "ptp,priorityclass", governed, "--ignore-not-found", check=False)


def boost_condition(kubectl: Kubectl, policy: str, status: str) -> dict[str, Any] | None:
    """The policy's PriorityBoost condition, once its status is `status`."""
    found = json.loads(kubectl("get", "ptp", policy, "-o", "json").stdout)
    for condition in found.get("status", {}).get("conditions") or []:
        if condition["type"] == "PriorityBoost" and condition["status"] == status:
            return dict(condition)
    return None
