"""The chart's webhook replicas on a control plane of the test bed: the chart installed (its own pods never
run: their image is not pulled), and `ptol webhook` processes of this machine with the installed Deployment's
arguments and a token of the chart's ServiceAccount, behind the release's Service (the test bed's service
proxy spreads the API server's connections over them, as kube-proxy spreads them over a Service's pods)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.devcluster.processes import free_port
from tests.integration.chart import (
    SERVICE,
    container_args,
    install_release,
    live,
    logs_on_failure,
    registered,
    token_kubeconfig,
)
from tests.integration.components import INSTALL_NAMESPACE
from tests.integration.conftest import Kubectl
from tests.integration.helpers import START_SECONDS, eventually, with_value
from tests.metrics import total

UNPULLABLE = "registry.invalid/preemption-toleration"  # no pod of the release runs: the processes are ours


class Replicas:
    """The release's webhook replicas: processes of this machine, each on a port of its own."""

    def __init__(
        self, processes: list[ComponentProcess], metrics: list[int], route: Callable[[list[int]], None]
    ) -> None:
        self.processes = processes
        self.metrics = metrics
        self.route = route  # the Service's connections spread over these replicas (by index) from now on

    def start(self) -> None:
        """Every replica at once, then each until it listens."""
        since = [process.start() for process in self.processes]
        for process, start in zip(self.processes, since, strict=True):
            process.wait_for("webhook server listening", start, timeout=START_SECONDS)

    def stop(self) -> None:
        for process in self.processes:
            process.stop()

    def join_late(self, index: int) -> None:
        """Replica `index` started, and added to the Service once its caches are synced, as a pod joins a
        Service's endpoints once it is ready."""
        process = self.processes[index]
        process.wait_for("caches synced", process.start(), timeout=START_SECONDS)
        self.route(list(range(len(self.processes))))

    async def totals(self, metric: str, **labels: str) -> list[float]:
        """Each replica's count of `metric{labels}` (since it last started; 0 for one that is stopped)."""
        found = []
        async with aiohttp.ClientSession() as session:
            for port in self.metrics:
                try:
                    async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                        found.append(total(await response.text(), metric, **labels))
                except aiohttp.ClientConnectionError:
                    found.append(0.0)
        return found

    async def steering(self, outcome: str) -> list[float]:
        """Each replica's count of `ptol_steering_total{outcome}`."""
        return await self.totals("ptol_steering_total", outcome=outcome)


@contextlib.contextmanager
def webhook_replicas(
    cluster: LocalCluster, kubectl: Kubectl, directory: Path, count: int, *values: str
) -> Iterator[Replicas]:
    """The chart installed on `cluster` with `values` ("--set", ...) and `count` webhook replicas, made and
    routed to, not started; stopped after."""
    installed = install_release(
        cluster,
        *("--set", f"image.repository={UNPULLABLE}", "--set", f"webhook.replicas={count}", *values),
        # the release's own pods (their image is never pulled here) stay pending: on the test's nodes, of their
        # high priority, they would preempt the tests' pods
        "--set-string",
        "nodeSelector.preemption-toleration\\.dev/no-such-node=true",
    )
    assert installed.returncode == 0, installed.stderr
    kubeconfig = token_kubeconfig(cluster, kubectl, "webhook", directory / "webhook.kubeconfig")
    arguments = container_args(kubectl, SERVICE)[1:]
    ports, metrics = [free_port() for _ in range(count)], [free_port() for _ in range(count)]
    processes = [
        ComponentProcess(
            "webhook",
            kubeconfig,
            directory / f"webhook-{index}.log",
            *with_value(arguments, "--metrics-address", f"127.0.0.1:{metrics[index]}"),
            "--host",
            "127.0.0.1",
            "--port",
            str(ports[index]),
            env={"POD_NAME": f"webhook-{index}"},
        )
        for index in range(count)
    ]
    service = live(kubectl, "service", SERVICE, "-n", INSTALL_NAMESPACE)

    def route(indices: list[int]) -> None:
        cluster.route_service(service["spec"]["clusterIP"], 443, [f"127.0.0.1:{ports[index]}" for index in indices])

    route(list(range(count)))
    found = Replicas(processes, metrics, route)
    with contextlib.ExitStack() as stack:
        stack.callback(found.stop)
        stack.enter_context(logs_on_failure(*processes))
        yield found


async def until_registered(kubectl: Kubectl) -> None:
    """Until the replicas registered the release's three webhook configurations (once their caches synced)."""

    async def configurations() -> int:
        return len(registered(kubectl))

    await eventually(configurations, lambda found: found == 3, timeout=START_SECONDS, what="registration")
