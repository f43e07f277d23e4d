"""`ptol run --webhook-replicas N`: the chart's replicas on this machine. N webhook servers, each a process of
its own with its own caches and memory, behind the one address the webhook configurations call: a
connection goes to the ready replicas in turn, as kube-proxy spreads a Service's connections over its ready
pods (the API server keeps a connection for many calls, so a replica serves whole connections). They share
one serving certificate; the first registers the configurations, at the shared address, and withdraws them
on exit; each is a replica of its own in the Leases (`POD_NAME` run-N)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import logging
import multiprocessing
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from multiprocessing.synchronize import Event as ProcessEvent
from pathlib import Path

from preemption_toleration import pki
from preemption_toleration.devcluster.processes import free_port
from preemption_toleration.devcluster.service_proxy import pipe
from preemption_toleration.logs import configure_logging
from preemption_toleration.webhooks.settings import WebhookError, WebhookSettings

logger = logging.getLogger("preemption_toleration.run")
STOP_SECONDS = 30.0  # a replica that has not stopped this long after SIGTERM is killed
MAX_REPLICAS = 16


def replica_count(value: str) -> int:
    """--webhook-replicas: 1 to 16 processes."""
    if not value.strip().isdigit() or not 1 <= int(value) <= MAX_REPLICAS:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of replicas from 1 to {MAX_REPLICAS}")
    return int(value)


@dataclass(frozen=True)
class Replica:
    """One replica's settings, and its name in its Leases and logs."""

    name: str
    settings: WebhookSettings


def replica_settings(
    settings: WebhookSettings, ports: Sequence[int], address: str, tls: tuple[str, str, str]
) -> list[Replica]:
    """Each replica's settings (pure): `settings` on its loopback port of `ports`, serving the shared
    certificate `tls` (cert, key, CA files); the first registers the configurations at `address` (the
    spreader's), the others nothing; /metrics of each on a port of its own: a free one, or the given one plus
    the replica's index."""
    cert, key, ca = tls
    found = []
    for index, port in enumerate(ports):
        metrics = settings.metrics_address
        if metrics is not None:
            host, _, given = metrics.rpartition(":")
            metrics = f"{host}:{int(given) + index if int(given) else 0}"
        found.append(
            Replica(
                f"run-{index}",
                replace(
                    settings,
                    host="127.0.0.1",
                    port=port,
                    cert_file=cert,
                    key_file=key,
                    ca_file=ca,
                    tls_secret=None,
                    metrics_address=metrics,
                    register_url=address if index == 0 else None,
                ),
            )
        )
    return found


def shared_certificate(settings: WebhookSettings, directory: Path) -> tuple[str, str, str]:
    """The files every replica serves: the given ones, else a CA and a serving certificate made here for the
    settings' names, written to `directory`."""
    if settings.cert_file and settings.key_file and settings.ca_file:
        return settings.cert_file, settings.key_file, settings.ca_file
    ca = pki.generate_ca("preemption-toleration-webhook-ca", valid_days=3650)
    serving = pki.issue_serving_cert(
        ca, "preemption-toleration-webhook", dns_names=settings.dns_names, ip_addresses=settings.ip_addresses
    )
    files = directory / "tls.crt", directory / "tls.key", directory / "ca.crt"
    for path, content in zip(files, (serving.cert_pem, serving.key_pem, ca.cert_pem), strict=True):
        path.write_bytes(content)
        path.chmod(0o600)
    return str(files[0]), str(files[1]), str(files[2])


class Spreader:
    """The replicas' one address: each connection to the next ready replica in turn; refused (closed) while
    none is ready, as a Service without ready endpoints."""

    def __init__(self, ports: list[int | None]) -> None:
        self.ports = ports  # each replica's port once it is ready; None before
        self.turns: Iterator[int] = itertools.count()

    def target(self) -> int | None:
        ready = [port for port in self.ports if port is not None]
        return ready[next(self.turns) % len(ready)] if ready else None

    async def connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        port = self.target()
        try:
            if port is None:
                raise OSError("no replica is ready")
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))


def _serve_replica(replica: Replica, level: str, fmt: str, ready: ProcessEvent) -> None:
    """A replica's process: the webhook server until SIGTERM or SIGINT."""
    from preemption_toleration.cli.signals import run_until_signalled
    from preemption_toleration.webhooks.runner import run_webhook

    os.environ["POD_NAME"] = replica.name
    configure_logging(level, fmt)

    parent = os.getppid()

    async def orphaned(stop: asyncio.Event) -> None:
        """A replica whose `ptol run` is gone (killed) stops too, withdrawing what it registered."""
        while os.getppid() == parent and not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1)
        stop.set()

    async def main(stop: asyncio.Event) -> None:
        served = asyncio.Event()
        watch = asyncio.create_task(orphaned(stop))
        task = asyncio.create_task(run_webhook(replica.settings, stop, served))
        waiting = asyncio.create_task(served.wait())
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if served.is_set():
            ready.set()
        waiting.cancel()
        try:
            await task
        finally:
            watch.cancel()

    run_until_signalled(main)


async def run_replicas(
    settings: WebhookSettings,
    count: int,
    stop: asyncio.Event,
    ready: asyncio.Event,
    log: tuple[str, str],
) -> None:
    """The replicas and their one address (`settings.host`, `settings.port`) until `stop`; `ready` once all of
    them are. A replica that ends on its own ends them all (WebhookError)."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this process's loops
    with tempfile.TemporaryDirectory(prefix="ptol-run-") as directory:
        spreader = Spreader([None] * count)
        server = await asyncio.start_server(spreader.connect, settings.host, settings.port)
        address_port = server.sockets[0].getsockname()[1]
        url = f"https://127.0.0.1:{address_port}"
        ports = [free_port() for _ in range(count)]
        replicas = replica_settings(settings, ports, url, shared_certificate(settings, Path(directory)))
        events = [context.Event() for _ in replicas]
        processes = [
            context.Process(target=_serve_replica, args=(replica, *log, event), name=replica.name, daemon=True)
            for replica, event in zip(replicas, events, strict=True)
        ]
        for process in processes:
            process.start()
        logger.info("webhook replicas started", extra={"replicas": count, "address": url})
        try:
            async with server:
                await _until_stopped(processes, events, ports, spreader, stop, ready)
        finally:
            await asyncio.to_thread(_stopped, processes)


async def _until_stopped(
    processes: Sequence[multiprocessing.process.BaseProcess],
    events: Sequence[ProcessEvent],
    ports: Sequence[int],
    spreader: Spreader,
    stop: asyncio.Event,
    ready: asyncio.Event,
) -> None:
    while not stop.is_set():
        for index, (process, event, port) in enumerate(zip(processes, events, ports, strict=True)):
            if not process.is_alive():
                with contextlib.suppress(TimeoutError):  # Ctrl-C reaches the replicas too: ours, not a failure
                    await asyncio.wait_for(stop.wait(), 1)
                if stop.is_set():
                    return
                raise WebhookError(f"webhook replica run-{index} ended (exit code {process.exitcode}): see its log")
            if spreader.ports[index] is None and event.is_set():
                spreader.ports[index] = port
                logger.info("webhook replica ready", extra={"replica": f"run-{index}", "port": port})
        if not ready.is_set() and all(port is not None for port in spreader.ports):
            ready.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.1)


def _stopped(processes: Sequence[multiprocessing.process.BaseProcess]) -> None:
    """Each replica stopped as a pod is (SIGTERM: it withdraws what it registered), killed if it lingers."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(STOP_SECONDS)
        if process.is_alive():
            process.kill()
            process.join()
