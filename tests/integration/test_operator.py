"""The operator against the real API server: what a cluster admin sees after `kubectl apply`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.processes import free_port
from tests.integration.components import OperatorProcess, install_crd
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import (
    REACTION_SECONDS,
    START_SECONDS,
    eventually,
    past_the_second_of,
    unique_name,
)
from tests.integration.objects import (
    MIN,
    TOL,
    apply,
    apply_class_and_policy,
    class_manifest,
    described_events,
    ours,
    policy_manifest,
    read_class,
    read_policy,
    ready,
    wait_annotations,
    wait_ready,
)
from tests.metrics import by_label, scrape, total

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

RESYNC_SECONDS = 3
OPERATOR_COMPONENT = "preemption-toleration-operator"
METRICS_PORT = free_port()


@pytest.fixture(scope="module")
def operator(cluster: LocalCluster) -> Iterator[OperatorProcess]:
    install_crd(cluster)
    process = OperatorProcess(
        cluster, "--resync-seconds", str(RESYNC_SECONDS), "--metrics", f"127.0.0.1:{METRICS_PORT}"
    )
    process.start()
    yield process
    process.stop()


@pytest.fixture
async def cleanup(api: ApiClient) -> AsyncIterator[list[tuple[str, str]]]:
    """Objects a test created, deleted afterwards: ("pc" | "ptp", name), each policy waited for until gone."""
    created: list[tuple[str, str]] = []
    yield created
    for kind, name in reversed(created):
        try:
            if kind == "ptp":
                await client.CustomObjectsApi(api).delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)
            else:
                await client.SchedulingV1Api(api).delete_priority_class(name)
        except ApiException as error:
            if error.status != 404:
                raise
    for kind, name in created:
        if kind == "ptp":
            await eventually(
                lambda name=name: read_policy(api, name), lambda found: found is None, what=f"policy {name} gone"
            )


async def test_policy_is_applied_and_nothing_else_changes(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    pc, ptp = unique_name("low-non-preempted"), unique_name("policy")
    cleanup += [("pc", pc), ("ptp", ptp)]
    apply(kubectl, class_manifest(pc, labels={"team": "ml"}, annotations={"example.com/owner": "ml-team"}))
    before = await read_class(api, pc)
    apply(
        kubectl,
        policy_manifest(ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 10000, "tolerationSeconds": -1}),
    )

    after = await wait_annotations(api, pc, {MIN: "10000", TOL: "-1"})
    assert after["metadata"]["labels"] == before["metadata"]["labels"] == {"team": "ml"}
    assert after["metadata"]["annotations"]["example.com/owner"] == "ml-team"
    assert after["description"] == before["description"] and after["value"] == 8000

    policy = await wait_ready(api, ptp, "True", "Applied")
    assert policy["status"]["observedGeneration"] == policy["metadata"]["generation"]
    assert policy["status"]["priorityClasses"] == [
        {"name": pc, "minimumPreemptablePriority": 10000, "tolerationSeconds": -1}
    ]
    table = kubectl("get", "ptp", ptp).stdout.splitlines()
    assert table[0].split() == ["NAME", "TARGET", "MINIMUM", "TOLERATION", "READY", "REASON", "AGE"]
    assert table[1].split()[:6] == [ptp, pc, "10000", "-1", "True", "Applied"]


async def test_policy_changes_and_removal_of_a_field_and_deletion(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    pc, ptp = unique_name("low-10min"), unique_name("policy")
    cleanup += [("pc", pc), ("ptp", ptp)]
    apply(kubectl, class_manifest(pc, annotations={"keep": "me"}))
    apply(
        kubectl,
        policy_manifest(ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 10000, "tolerationSeconds": 600}),
    )
    await wait_annotations(api, pc, {MIN: "10000", TOL: "600"})

    apply(
        kubectl,
        policy_manifest(ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 9500, "tolerationSeconds": 60}),
    )
    await wait_annotations(api, pc, {MIN: "9500", TOL: "60"})

    apply(kubectl, policy_manifest(ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 9500}))
    await wait_annotations(api, pc, {MIN: "9500"})
    policy = await eventually(
        lambda: read_policy(api, ptp),
        lambda p: p["status"].get("observedGeneration") == 3,
        timeout=REACTION_SECONDS,
        what="status of generation 3",
    )
    assert ready(policy)[:2] == ("True", "Applied")
    assert policy["status"]["priorityClasses"] == [{"name": pc, "minimumPreemptablePriority": 9500}]

    kubectl("delete", "ptp", ptp, "--wait=true", f"--timeout={REACTION_SECONDS}s")
    released = await wait_annotations(api, pc, {})
    left = released["metadata"]["annotations"]
    left.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    assert left == {"keep": "me"}
    assert await read_policy(api, ptp) is None


async def test_missing_class_then_created_then_deleted(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    pc, ptp = unique_name("later"), unique_name("policy")
    cleanup += [("pc", pc), ("ptp", ptp)]
    apply(kubectl, policy_manifest(ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 10000}))
    policy = await wait_ready(api, ptp, "False", "PriorityClassNotFound")
    assert pc in ready(policy)[2]

    apply(kubectl, class_manifest(pc))
    await wait_annotations(api, pc, {MIN: "10000"})
    await wait_ready(api, ptp, "True", "Applied")

    kubectl("delete", "priorityclass", pc)
    await wait_ready(api, ptp, "False", "PriorityClassNotFound")


async def test_selector_governs_classes_that_gain_the_label_and_releases_those_that_lose_it(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    tier = unique_name("tier")
    first, second, ptp = unique_name("batch-a"), unique_name("batch-b"), unique_name("policy")
    cleanup += [("pc", first), ("pc", second), ("ptp", ptp)]
    apply(kubectl, class_manifest(first, labels={"tier": tier}))
    apply(kubectl, class_manifest(second))
    apply(
        kubectl,
        policy_manifest(
            ptp,
            {
                "priorityClassSelector": {"matchLabels": {"tier": tier}},
                "minimumPreemptablePriority": 10000,
                "tolerationSeconds": 600,
            },
        ),
    )
    await wait_annotations(api, first, {MIN: "10000", TOL: "600"})
    assert ours(await read_class(api, second)) == {}

    kubectl("label", "priorityclass", second, f"tier={tier}")
    await wait_annotations(api, second, {MIN: "10000", TOL: "600"})
    policy = await eventually(
        lambda: read_policy(api, ptp),
        lambda p: len(p["status"]["priorityClasses"]) == 2,
        timeout=REACTION_SECONDS,
        what="status listing both classes",
    )
    assert sorted(c["name"] for c in policy["status"]["priorityClasses"]) == sorted([first, second])
    assert ready(policy)[:2] == ("True", "Applied")

    kubectl("label", "priorityclass", first, "tier-")
    await wait_annotations(api, first, {})
    await eventually(
        lambda: read_policy(api, ptp),
        lambda p: [c["name"] for c in p["status"]["priorityClasses"]] == [second],
        timeout=REACTION_SECONDS,
        what="status lists only the labelled class",
    )


async def test_hand_changes_are_put_back(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    pc, ptp = unique_name("guarded"), unique_name("policy")
    cleanup += [("pc", pc), ("ptp", ptp)]
    apply_class_and_policy(kubectl, pc, ptp)
    await wait_annotations(api, pc, {MIN: "10000", TOL: "-1"})

    kubectl("annotate", "--overwrite", "priorityclass", pc, f"{MIN}=9000")
    await wait_annotations(api, pc, {MIN: "10000", TOL: "-1"})
    kubectl("annotate", "priorityclass", pc, f"{TOL}-")
    await wait_annotations(api, pc, {MIN: "10000", TOL: "-1"})


async def test_two_policies_on_one_class_older_wins_without_flapping(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    pc, older, newer = unique_name("contested"), unique_name("older"), unique_name("newer")
    cleanup += [("pc", pc), ("ptp", older), ("ptp", newer)]
    apply_class_and_policy(kubectl, pc, older)
    await past_the_second_of((await wait_ready(api, older, "True", "Applied"))["metadata"]["creationTimestamp"])
    apply(
        kubectl,
        policy_manifest(newer, {"priorityClassName": pc, "minimumPreemptablePriority": 5, "tolerationSeconds": 5}),
    )

    policy = await wait_ready(api, newer, "False", "Conflict")
    assert f'PreemptionTolerationPolicy "{older}"' in ready(policy)[2]
    settled = await wait_annotations(api, pc, {MIN: "10000", TOL: "-1"})
    await _resyncs_run(3)
    assert (await read_class(api, pc))["metadata"]["resourceVersion"] == settled["metadata"]["resourceVersion"]
    assert ready(await read_policy(api, older))[:2] == ("True", "Applied")


async def test_gitops_server_side_apply_without_the_annotations_keeps_them(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    pc, ptp = unique_name("gitops"), unique_name("policy")
    cleanup += [("pc", pc), ("ptp", ptp)]
    manifest = class_manifest(pc, labels={"owner": "gitops"}, description="from git")
    kubectl("apply", "--server-side", "--field-manager=gitops", "-f", "-", input=manifest)
    apply(
        kubectl,
        policy_manifest(ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 10000, "tolerationSeconds": 600}),
    )
    await wait_annotations(api, pc, {MIN: "10000", TOL: "600"})

    changed = class_manifest(pc, labels={"owner": "gitops", "rev": "2"}, description="from git")
    result = kubectl("apply", "--server-side", "--field-manager=gitops", "-f", "-", input=changed)
    assert "conflict" not in (result.stdout + result.stderr).lower()
    after = await read_class(api, pc)
    assert after["metadata"]["labels"] == {"owner": "gitops", "rev": "2"}
    assert ours(after) == {MIN: "10000", TOL: "600"}
    managers = {entry["manager"] for entry in after["metadata"]["managedFields"]}
    assert {"gitops", "preemption-toleration-operator"} <= managers


async def test_restarted_operator_writes_nothing_when_state_matches(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    pc, ptp = unique_name("steady"), unique_name("policy")
    cleanup += [("pc", pc), ("ptp", ptp)]
    apply(kubectl, class_manifest(pc))
    apply(kubectl, policy_manifest(ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 10000}))
    await wait_annotations(api, pc, {MIN: "10000"})
    policy = await wait_ready(api, ptp, "True", "Applied")
    class_version = (await read_class(api, pc))["metadata"]["resourceVersion"]
    policy_status = policy["status"]

    operator.stop()
    operator.start()
    # Ready: the restarted process (its counters start at 0) has reconciled everything twice, once on
    # resuming the policies and once more at a resync, both with the caches listed.
    restarted = await eventually(
        _reconciles_since_start,
        lambda figures: figures.get("reconciles", 0) >= 2,
        timeout=START_SECONDS,
        what="two reconciles of the restarted operator",
    )
    assert (restarted["writes"], restarted["status"]) == (0, 0)
    assert (await read_class(api, pc))["metadata"]["resourceVersion"] == class_version
    assert (await read_policy(api, ptp))["status"] == policy_status


async def test_invalid_policy_that_slipped_past_admission_is_reported(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    ptp = unique_name("invalid")
    cleanup.append(("ptp", ptp))
    apply(
        kubectl,
        policy_manifest(
            ptp,
            # an unknown field: the CRD keeps it for the webhook (its own rules would refuse e.g. two targets)
            {"priorityClassName": "x", "minimumPreemptablePriority": 1, "tolerationSecond": 5},
        ),
    )
    policy = await wait_ready(api, ptp, "False", "Invalid")
    assert "unknown field spec.tolerationSecond" in ready(policy)[2]
    assert operator.process is not None and operator.process.poll() is None


async def test_kubectl_describe_shows_the_events_of_the_policy_and_of_the_class(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    pc, ptp = unique_name("evented"), unique_name("policy")
    cleanup += [("pc", pc), ("ptp", ptp)]
    apply(kubectl, policy_manifest(ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 10000}))
    await wait_ready(api, ptp, "False", "PriorityClassNotFound")
    apply(kubectl, class_manifest(pc))
    await wait_ready(api, ptp, "True", "Applied")

    async def described(kind: str, name: str) -> list[tuple[str, str, str, str]]:
        return described_events(kubectl, kind, name)

    not_found = (
        "Warning",
        "PriorityClassNotFound",
        OPERATOR_COMPONENT,
        f"PriorityClass {pc} does not exist; the policy is applied when it is created.",
    )
    applied = (
        "Normal",
        "Applied",
        OPERATOR_COMPONENT,
        f"Applied minimum-preemptable-priority=10000 to PriorityClass {pc}.",
    )
    await eventually(
        lambda: described("ptp", ptp),
        lambda rows: not_found in rows and applied in rows,
        timeout=REACTION_SECONDS,
        what=f"the Events under kubectl describe ptp {ptp}",
    )

    kubectl("delete", "ptp", ptp, "--wait=true", f"--timeout={REACTION_SECONDS}s")
    released = (
        "Normal",
        "Released",
        OPERATOR_COMPONENT,
        "Removed the toleration annotations: no policy governs this class any more.",
    )
    await eventually(
        lambda: described("priorityclass", pc),
        lambda rows: released in rows,
        timeout=REACTION_SECONDS,
        what=f"the Events under kubectl describe priorityclass {pc}",
    )


async def test_two_replicas_with_peering_only_one_writes(
    api: ApiClient, cluster: LocalCluster, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    operator.stop()  # the standalone one would write regardless of peering
    ports = {"active": free_port(), "standby": free_port()}
    peered = ("--peering", "preemption-toleration", "--resync-seconds", "2")
    active = OperatorProcess(
        cluster,
        *peered,
        "--priority",
        "200",
        "--metrics",
        f"127.0.0.1:{ports['active']}",
        log_name="operator-active.log",
    )
    standby = OperatorProcess(
        cluster,
        *peered,
        "--priority",
        "100",
        "--metrics",
        f"127.0.0.1:{ports['standby']}",
        log_name="operator-standby.log",
    )
    pc, ptp = unique_name("peered"), unique_name("policy")
    cleanup += [("pc", pc), ("ptp", ptp)]
    try:
        working = "Resuming operations after the pause"  # kopf: this replica is the active one
        active.start()
        await eventually(
            lambda: asyncio.to_thread(active.log),
            lambda log: working in log,
            timeout=START_SECONDS,
            what="the active replica working",
        )
        standby.start()
        # its first resync has found the active replica in the peering: it watches, and leaves the work
        await eventually(
            lambda: asyncio.to_thread(standby.log),
            lambda log: "resync paused" in log,
            timeout=START_SECONDS,
            what="the standby replica standing by",
        )
        apply(kubectl, class_manifest(pc))
        apply(kubectl, policy_manifest(ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 10000}))
        await wait_annotations(api, pc, {MIN: "10000"})
        await eventually(
            lambda: asyncio.to_thread(active.log),
            lambda log: " applied" in log,
            timeout=REACTION_SECONDS,
            what="the active replica logging its write",
        )
        assert working not in standby.log() and " applied" not in standby.log()
        # one resync task per replica: the active one reconciles each period, the standby leaves it alone
        active_resyncs = await _resyncs_run(1, ports["active"])
        standby_resyncs = await eventually(
            lambda: _resyncs(ports["standby"]),
            lambda resyncs: resyncs.get("standby", 0) >= 1,
            timeout=REACTION_SECONDS,
            what="the standby replica's resync standing by",
        )
        assert "standby" not in active_resyncs, active_resyncs
        assert "ran" not in standby_resyncs, standby_resyncs
        assert "a live peer of the same or a higher priority" in standby.log()

        active.stop()  # a clean exit leaves the peering: the standby takes over
        apply(kubectl, policy_manifest(ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 9999}))
        await wait_annotations(api, pc, {MIN: "9999"})
        # the write can be seen in the API a moment before the standby has logged it
        await eventually(
            lambda: asyncio.to_thread(standby.log),
            lambda log: working in log and " applied" in log,
            timeout=REACTION_SECONDS,
            what="the standby replica working and writing",
        )
        await _resyncs_run(1, ports["standby"])  # the new active replica's
        assert "resync resumed" in standby.log()
    finally:
        active.stop()
        standby.stop()
        operator.start()


async def test_explain_reads_the_cluster(
    api: ApiClient,
    cluster: LocalCluster,
    kubectl: Kubectl,
    operator: OperatorProcess,
    cleanup: list,
    namespace: str,
    make_node: MakeNode,
    tmp_path: Path,
) -> None:
    pc, ptp, high = unique_name("explained"), unique_name("policy"), unique_name("unannotated")
    cleanup += [("pc", pc), ("ptp", ptp), ("pc", high)]
    apply_class_and_policy(kubectl, pc, ptp)
    apply(kubectl, class_manifest(high, 9000))
    await wait_annotations(api, pc, {MIN: "10000", TOL: "-1"})
    node = (await make_node()).metadata.name

    def pod(name: str, class_name: str, **spec: str) -> dict[str, Any]:
        containers = [{"name": "c", "image": "pause"}]
        return {"metadata": {"name": name}, "spec": {"priorityClassName": class_name, "containers": containers, **spec}}

    core = client.CoreV1Api(api)
    await core.create_namespaced_pod(namespace, pod("p", pc, nodeName=node))
    # a preemptor that stays pending: no scheduler has this name, so nothing preempts for it
    await core.create_namespaced_pod(namespace, pod("waiting", high, schedulerName="nobody"))
    # kubectl's flags as a plugin takes them: --context picks the cluster (the current context is elsewhere)
    kubeconfig = yaml.safe_load(cluster.kubeconfig.read_text())
    real_context = kubeconfig["current-context"]
    kubeconfig["clusters"].append({"name": "elsewhere", "cluster": {"server": "https://127.0.0.1:1"}})
    kubeconfig["contexts"].append({"name": "elsewhere", "context": {"cluster": "elsewhere", "user": "nobody"}})
    kubeconfig["current-context"] = "elsewhere"
    two_contexts = tmp_path / "kubeconfig"
    two_contexts.write_text(yaml.safe_dump(kubeconfig))

    def explain(*args: str, context: str | None = None) -> str:
        chosen = ["--kubeconfig", str(cluster.kubeconfig)]
        if context:
            chosen = ["--kubeconfig", str(two_contexts), "--context", context]
        result = subprocess.run(
            [sys.executable, "-m", "preemption_toleration", "explain", *args, *chosen],
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout.strip()

    assert explain("pod", f"{namespace}/p") == (
        f'pod {namespace}/p (PriorityClass {pc}, priority 8000) (PreemptionTolerationPolicy "{ptp}"): refuses '
        "priorities 8001 to 9999 forever; priorities >= 10000 may preempt it now."
    )
    facts = json.loads(explain("priorityclass", pc, "-o", "json"))
    assert (facts["policy"], facts["protection"], facts["refusedPriorities"]) == (
        ptp,
        "Forever",
        {"from": 8001, "to": 9999},
    )
    # the pending preemptor: its class has no toleration (no invented minimum), and p tolerates it
    said = explain("pod", "waiting", "-n", namespace, context=real_context).splitlines()
    assert said[0] == (
        f"pod {namespace}/waiting (PriorityClass {high}, priority 9000): not protected: PriorityClass {high} has "
        "no preemption toleration; any higher priority with preemptionPolicy PreemptLowerPriority may preempt it now."
    )
    assert said[1].startswith("It is pending; ") and "of lower priority tolerate" in said[1]  # (others' pods too)
    assert f"  {namespace}/p (PriorityClass {pc}, priority 8000): forever" in said[2:]
    facts = json.loads(explain("pod", f"{namespace}/waiting", "-o", "json"))
    assert "minimumPreemptablePriority" not in facts and facts["toleration"] is False
    assert {"name": f"{namespace}/p", "priorityClassName": pc, "priority": 8000, "protection": "Forever"} in facts[
        "toleratedBy"
    ]
    # a PodGroup where the API server serves none (no GenericWorkload here): said, exit 1
    missing = subprocess.run(
        [sys.executable, "-m", "preemption_toleration", "explain", "podgroup", f"{namespace}/train"]
        + ["--kubeconfig", str(cluster.kubeconfig)],
        capture_output=True,
        text=True,
    )
    assert (missing.returncode, missing.stderr.strip()) == (
        1,
        f"podgroup {namespace}/train: not found (or the API server serves no PodGroups)",
    )


async def test_metrics_count_what_the_operator_did(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    pc, ptp = unique_name("measured"), unique_name("policy")
    cleanup += [("pc", pc), ("ptp", ptp)]
    apply(kubectl, class_manifest(pc))
    apply(kubectl, policy_manifest(ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 10000}))
    await wait_annotations(api, pc, {MIN: "10000"})

    text = await asyncio.to_thread(_scrape)
    assert total(text, "ptol_operator_writes_total", action="applied", result="ok") >= 1
    assert "ok" in by_label(text, "ptol_operator_reconciles_total", "result")


def _scrape(port: int = METRICS_PORT) -> str:
    return scrape(f"http://127.0.0.1:{port}/metrics")


async def _resyncs(port: int) -> dict[str, float]:
    """An operator's resync periods by outcome (ran, standby, failed)."""
    return by_label(await asyncio.to_thread(_scrape, port), "ptol_operator_resyncs_total", "outcome")


async def _resyncs_run(count: int, port: int = METRICS_PORT) -> dict[str, float]:
    """Returns once `count` more resyncs of the operator serving /metrics on `port` have reconciled (a reconcile
    under way counts: with 2, one started and ended after this call), with its resyncs by outcome."""
    before = (await _resyncs(port)).get("ran", 0)
    return await eventually(
        lambda: _resyncs(port),
        lambda resyncs: resyncs.get("ran", 0) >= before + count,
        timeout=REACTION_SECONDS + count * RESYNC_SECONDS,
        what=f"{count} more resyncs run",
    )


async def _reconciles_since_start() -> dict[str, float]:
    """The operator's figures with its successful reconciles; empty while its metrics do not answer yet."""
    try:
        return _figures(await asyncio.to_thread(_scrape))
    except OSError:
        return {}


async def _operator_figures() -> dict[str, float]:
    return _figures(await asyncio.to_thread(_scrape))


def _figures(text: str) -> dict[str, float]:
    return {
        "reconciles": total(text, "ptol_operator_reconciles_total", result="ok"),
        "writes": total(text, "ptol_operator_writes_total"),
        "status": total(text, "ptol_operator_status_patches_total"),
    }


async def test_a_burst_of_policies_is_written_once_per_class(
    api: ApiClient, kubectl: Kubectl, operator: OperatorProcess, cleanup: list
) -> None:
    """Ten selector policies of three classes each, applied at once: thirty class writes, no more, however
    far the operator's watch caches lag behind its own writes; a resync afterwards writes nothing."""
    label = unique_name("burst")
    classes = [f"{label}-{i}" for i in range(30)]
    policies = [f"{label}-p{i}" for i in range(10)]
    cleanup += [("pc", name) for name in classes] + [("ptp", name) for name in policies]
    for i, name in enumerate(classes):
        apply(kubectl, class_manifest(name, labels={label: f"t{i // 3}"}))
    # quiet first: what earlier tests left behind (releases, deletions) is done
    before = await eventually(_figures_across_a_resync, _idle, timeout=START_SECONDS, what="the operator idle")
    manifests = [
        json.loads(
            policy_manifest(
                name,
                {
                    "priorityClassSelector": {"matchLabels": {label: f"t{i}"}},
                    "minimumPreemptablePriority": 10000,
                    "tolerationSeconds": 600,
                },
            )
        )
        for i, name in enumerate(policies)
    ]
    apply(kubectl, json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests}))

    for name in classes:
        await wait_annotations(api, name, {MIN: "10000", TOL: "600"})
    for name in policies:
        await wait_ready(api, name, "True", "Applied")
    await _resyncs_run(2)  # a whole resync, which must find nothing to write
    after = await _operator_figures()
    writes, patches = after["writes"] - before[1]["writes"], after["status"] - before[1]["status"]
    assert writes == len(classes)
    assert patches <= 2 * len(policies)
    events = await client.CoreV1Api(api).list_namespaced_event("default")
    applied = [e for e in events.items if e.involved_object.name in policies and e.reason == "Applied"]
    assert sum(event.count or 1 for event in applied) == len(classes)  # one Event per class written


def _idle(pair: tuple[dict[str, float], dict[str, float]]) -> bool:
    """Nothing written across a whole resync (which reconciles, and finds nothing to write)."""
    return all(pair[0][key] == pair[1][key] for key in ("writes", "status"))


async def _figures_across_a_resync() -> tuple[dict[str, float], dict[str, float]]:
    first = await _operator_figures()
    await _resyncs_run(2)
    return first, await _operator_figures()
