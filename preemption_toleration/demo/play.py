"""Plays the demo: a local control plane, `ptol run` (with the scheduler calling its extender), the samples,
and four preemption stories told as they happen. Every step is named, so a failure says which step failed
and where the logs are."""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY, TOLERATION_SECONDS
from preemption_toleration.demo import objects
from preemption_toleration.devcluster import LocalCluster, create_node, ensure_namespace, ensure_toolchain
from preemption_toleration.devcluster.components import ComponentError, ComponentProcess
from preemption_toleration.logs import REGISTERED
from preemption_toleration.manifests.crd import crd_manifest
from preemption_toleration.manifests.scheduler_extender import scheduler_extender_of
from preemption_toleration.manifests.webhook_configurations import GUARD_NAME
from preemption_toleration.validation.documents import load_documents

Say = Callable[[str], None]
REFUSED_WAIT_SECONDS = 10


def _status_message(error: ApiException) -> str:
    """The message of the API's Status body, as kubectl prints it."""
    try:
        return str(json.loads(error.body or "{}").get("message") or error.reason)
    except ValueError:
        return str(error.body or error.reason)


class StepFailed(Exception):
    def __init__(self, step: str, problem: str) -> None:
        super().__init__(f"{step}: {problem}")
        self.step = step
        self.problem = problem


@dataclass
class DemoSettings:
    directory: Path
    once: bool = False
    guarantee_seconds: int = 20
    samples: Path | None = None
    results: list[list[str]] = field(default_factory=list)


async def _until(probe: Callable[[], Awaitable[Any]], check: Callable[[Any], bool], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if check(value):
            return value
        if time.monotonic() > deadline:
            raise StepFailed(what, f"not reached within {timeout:.0f} s")
        await asyncio.sleep(1)


class Demo:
    def __init__(self, settings: DemoSettings, say: Say) -> None:
        self.settings = settings
        self.say = say
        self.cluster = LocalCluster(settings.directory)
        self.components = ComponentProcess(
            "run", self.cluster.kubeconfig, self.cluster.logs_dir / "ptol-run.log", "--resync-seconds", "5"
        )
        self.api: ApiClient | None = None

    @property
    def core(self) -> client.CoreV1Api:
        assert self.api is not None
        return client.CoreV1Api(self.api)

    # ----------------------------------------------------------------- setup

    def start_components(self) -> None:
        since = self.components.start()
        try:
            self.components.wait_for(REGISTERED, since, timeout=90)
        except ComponentError as error:
            raise StepFailed("starting ptol run", str(error)) from error

    def stop_components(self) -> None:
        self.components.stop()

    async def configure_scheduler(self) -> None:
        """kube-scheduler restarted with `ptol run`'s extender, as config/scheduler configures it."""
        assert self.api is not None
        guard = await client.AdmissionregistrationV1Api(self.api).read_validating_webhook_configuration(GUARD_NAME)
        entry = scheduler_extender_of(self.api.sanitize_for_serialization(guard))
        self.say(f"Restarting kube-scheduler with the extender at {entry['urlPrefix']} (ignorable, TLS).")
        # On this (the main) thread: the scheduler process is tied to the thread that starts it.
        self.cluster.restart_scheduler([entry])

    def _extender_left_out(self, preemptor: str) -> list[str]:
        """The extender's log lines that left a node out for this preemptor."""
        return [
            line
            for line in self.components.log().splitlines()
            if "extender node decision" in line and f"{objects.NAMESPACE}/{preemptor}" in line and '"dropped"' in line
        ]

    async def install_crd(self) -> None:
        assert self.api is not None
        extensions = client.ApiextensionsV1Api(self.api)
        try:
            await extensions.create_custom_resource_definition(crd_manifest())
        except ApiException as error:
            if error.status != 409:
                raise
        name = crd_manifest()["metadata"]["name"]
        await _until(
            lambda: extensions.read_custom_resource_definition(name),
            lambda crd: any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or []),
            60,
            "the CRD being established",
        )

    def _read_samples(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        directory = self.settings.samples
        if directory is None or not directory.is_dir():
            self.say(f"No samples directory ({directory}); applying the demo's own classes and policies only.")
            return [], []
        documents: list[Any] = []
        for path in sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml", ".json")):
            loaded, problems = load_documents(path.read_text(), str(path))
            if problems:
                raise StepFailed("reading the samples", problems[0].render())
            documents += [document.content for document in loaded]
        classes, policies = objects.sample_objects(documents)
        self.say(
            f"Applying the samples in {directory} ({len(classes)} PriorityClasses, {len(policies)} "
            "policies), then the demo's own."
        )
        return classes, policies

    async def apply_samples(self) -> None:
        assert self.api is not None
        await ensure_namespace(self.api, objects.NAMESPACE)
        await create_node(self.api, objects.NODE, cpu="3")
        sample_classes, sample_policies = self._read_samples()
        scheduling = client.SchedulingV1Api(self.api)
        demo_classes = [objects.priority_class(name, value) for name, value in objects.CLASSES.items()]
        for body in sample_classes + demo_classes:
            try:
                await scheduling.create_priority_class(body)
            except ApiException as error:
                if error.status != 409:  # a sample may already define a class of the demo
                    raise
        custom = client.CustomObjectsApi(self.api)
        policies = sample_policies + objects.policies(self.settings.guarantee_seconds)
        for body in policies:
            await _until(functools.partial(self._create_policy, custom, body), bool, 60, "applying the policies")
        names = [policy["metadata"]["name"] for policy in policies]
        rows = await _until(
            lambda: self._policy_rows(custom, names),
            lambda rows: all(row[4] != "-" for row in rows),
            60,
            "the operator reporting on every policy",
        )
        self.say(
            "\nPreemptionTolerationPolicies (kubectl get ptp):\n"
            + objects.render_table(["NAME", "TARGET", "MINIMUM", "TOLERATION", "READY", "REASON"], rows)
        )
        await _until(
            self._annotations,
            lambda rows: all(row[2] != "-" for row in rows if row[0] in ("low-non-preempted", "low-guaranteed")),
            60,
            "the operator annotating the classes",
        )
        self.say(
            "\nPriorityClasses and their toleration annotations (by a policy, or by hand in the samples):\n"
            + objects.render_table(
                ["CLASS", "VALUE", "MINIMUM-PREEMPTABLE", "TOLERATION-SECONDS"], await self._annotations()
            )
        )

    async def _policy_rows(self, custom: client.CustomObjectsApi, names: list[str]) -> list[list[str]]:
        return [
            objects.policy_row(await custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, name)) for name in names
        ]

    async def show_a_refused_mistake(self) -> None:
        assert self.api is not None
        self.say('\nA mistake in a manifest is refused at once, with its fix (a class with "10k"):')
        try:
            await client.SchedulingV1Api(self.api).create_priority_class(objects.mistake())
        except ApiException as error:
            message = _status_message(error)
            if "admission webhook" not in message:
                raise StepFailed("showing a refused mistake", f"refused, but not by our webhook: {message}") from error
            self.say(f"   {message}")
            return
        raise StepFailed("showing a refused mistake", 'the webhook let a class with "10k" through')

    async def _create_policy(self, custom: client.CustomObjectsApi, body: dict[str, Any]) -> bool:
        try:
            await custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, body)
        except ApiException as error:
            if error.status == 404:
                return False  # the new API is not served yet
            if error.status != 409:
                raise
        return True

    async def _annotations(self) -> list[list[str]]:
        """Every class but the system ones, highest value first."""
        listed = (await client.SchedulingV1Api(self.api).list_priority_class()).items
        rows = []
        for pc in sorted(listed, key=lambda pc: (-pc.value, pc.metadata.name)):
            if pc.metadata.name.startswith("system-"):
                continue
            annotations = pc.metadata.annotations or {}
            rows.append(
                [
                    pc.metadata.name,
                    str(pc.value),
                    annotations.get(MINIMUM_PREEMPTABLE_PRIORITY, "-"),
                    annotations.get(TOLERATION_SECONDS, "-"),
                ]
            )
        return rows

    # ----------------------------------------------------------------- the stories

    async def _node_of(self, name: str) -> str | None | bool:
        """The pod's node, None while pending, False once it is gone."""
        try:
            node: str | None = (await self.core.read_namespaced_pod(name, objects.NAMESPACE)).spec.node_name
            return node
        except ApiException as error:
            if error.status == 404:
                return False
            raise

    async def _run_pod(self, name: str, class_name: str, wait_bound: bool = True, cpu: str = "2") -> None:
        await self.core.create_namespaced_pod(objects.NAMESPACE, objects.pod(name, class_name, cpu))
        if wait_bound:
            await _until(lambda: self._node_of(name), lambda node: bool(node), 60, f"{name} being scheduled")

    async def _clear(self) -> None:
        await self.core.delete_collection_namespaced_pod(objects.NAMESPACE, grace_period_seconds=0)
        await _until(
            lambda: self.core.list_namespaced_pod(objects.NAMESPACE),
            lambda pods: not pods.items,
            60,
            "clearing the demo's pods",
        )

    def _result(self, story: str, victim: str, preemptor: str, outcome: str, started: float) -> None:
        self.settings.results.append([story, victim, preemptor, outcome, f"{time.monotonic() - started:.0f} s"])

    async def story_forever(self) -> None:
        self.say("\n1. low-non-preempted: only priority >= 10000 may preempt it, forever.")
        started = time.monotonic()
        await self._run_pod("train-a", "low-non-preempted")
        self.say("   train-a (low-non-preempted, 2 of 3 CPUs) is running; now high-a (high, 9000) wants 2 CPUs ...")
        await self._run_pod("high-a", "high", wait_bound=False)
        await asyncio.sleep(REFUSED_WAIT_SECONDS)
        if await self._node_of("train-a") is False or await self._node_of("high-a"):
            raise StepFailed("story 1", "high-a preempted train-a")
        await _until(
            lambda: asyncio.to_thread(self._extender_left_out, "high-a"), bool, 30, "the extender leaving the node out"
        )
        self.say(
            f"   kept by the scheduler's extender: {objects.NODE} is no candidate for high-a, since train-a "
            "tolerates it; nothing was deleted."
        )
        self._result("1", "train-a (low-non-preempted)", "high-a (9000)", "not a victim", started)
        self.say("   now critical-a (critical, 10000) wants the same room ...")
        await self._run_pod("critical-a", "critical", wait_bound=False)
        await _until(lambda: self._node_of("train-a"), lambda node: node is False, 90, "critical-a preempting train-a")
        await _until(lambda: self._node_of("critical-a"), bool, 90, "critical-a being scheduled")
        self.say("   critical-a preempted train-a.")
        self._result("1", "train-a (low-non-preempted)", "critical-a (10000)", "preempted", started)
        await self._clear()

    async def story_plain(self) -> None:
        self.say("\n2. low: any higher priority preempts it, as before.")
        started = time.monotonic()
        await self._run_pod("batch-b", "low")
        await self._run_pod("high-b", "high", wait_bound=False)
        await _until(lambda: self._node_of("batch-b"), lambda node: node is False, 90, "high-b preempting batch-b")
        self.say("   high-b preempted batch-b at once.")
        self._result("2", "batch-b (low)", "high-b (9000)", "preempted", started)
        await self._clear()

    async def story_guaranteed(self) -> None:
        seconds = self.settings.guarantee_seconds
        self.say(f"\n3. low-guaranteed: high may preempt it only after it has run {seconds} s.")
        started = time.monotonic()
        await self._run_pod("train-c", "low-guaranteed")
        await self._run_pod("high-c", "high", wait_bound=False)
        self.say(f"   high-c waits: train-c is no victim for it until train-c has run {seconds} s ...")
        await _until(
            lambda: self._node_of("train-c"),
            lambda node: node is False,
            seconds + 330,
            "high-c preempting train-c after the guarantee",
        )
        ran = time.monotonic() - started
        self.say(
            f"   high-c preempted train-c after {ran:.0f} s (guarantee {seconds} s): when the guarantee ended, "
            "high-c was nudged back into the scheduler's queue."
        )
        self._result("3", "train-c (low-guaranteed)", "high-c (9000)", f"preempted after {seconds} s", started)
        await self._clear()

    async def story_two_victims(self) -> None:
        self.say("\n4. Two victims, one protected: high needs the whole node.")
        started = time.monotonic()
        await self._run_pod("batch-d", "low", cpu="1")
        await self._run_pod("train-d", "low-non-preempted", cpu="1")
        self.say("   batch-d (low, 1 CPU) and train-d (low-non-preempted, 1 CPU) run; high-d wants all 3 CPUs ...")
        await self._run_pod("high-d", "high", cpu="3", wait_bound=False)
        await asyncio.sleep(REFUSED_WAIT_SECONDS)
        if await self._node_of("batch-d") is False or await self._node_of("train-d") is False:
            raise StepFailed("story 4", "a pod was deleted although high-d cannot fit without train-d")
        self.say(
            "   nothing was deleted: without train-d's CPU high-d cannot fit, so batch-d is not preempted "
            "in vain (the guard alone could only refuse train-d after batch-d was gone)."
        )
        self._result("4", "batch-d + train-d", "high-d (9000)", "nothing deleted", started)
        await self._clear()

    # ----------------------------------------------------------------- the whole thing

    async def play(self) -> None:
        step = "building the control plane's binaries"
        try:
            toolchain = await asyncio.to_thread(ensure_toolchain, lambda message: self.say(f"   {message}"))
            step = "starting the local control plane"
            self.say(
                f"Starting Kubernetes {toolchain.version} (etcd, kube-apiserver, kube-controller-manager, "
                f"kube-scheduler, KWOK) in {self.settings.directory} ..."
            )
            await asyncio.to_thread(self.cluster.start)
            self.api = await self.cluster.api_client()
            step = "installing the PreemptionTolerationPolicy CRD"
            await self.install_crd()
            step = "starting ptol run (operator, webhooks, guard)"
            await asyncio.to_thread(self.start_components)
            step = "configuring kube-scheduler with the extender"
            await self.configure_scheduler()
            step = "applying the classes and policies"
            await self.apply_samples()
            step = "showing a refused mistake"
            await self.show_a_refused_mistake()
            step = "playing the stories"
            await self.story_forever()
            await self.story_plain()
            await self.story_guaranteed()
            await self.story_two_victims()
        except StepFailed as failure:
            raise StepFailed(failure.step, f"{failure.problem}; logs in {self.cluster.logs_dir}") from failure
        except Exception as error:
            raise StepFailed(step, f"{type(error).__name__}: {error}; logs in {self.cluster.logs_dir}") from error
        self.say(
            "\nWhat happened:\n"
            + objects.render_table(["STORY", "VICTIM", "PREEMPTOR", "OUTCOME", "AFTER"], self.settings.results)
        )

    async def close(self, keep: bool) -> None:
        if self.api is not None:
            await self.api.close()
        if not keep:
            self.stop_components()
            await asyncio.to_thread(self.cluster.stop)
