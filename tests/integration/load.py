"""Load and faults for the webhook server's fault tests: certificate files, admission requests sent through
the API server (dry-run PriorityClass creates, each judged by our mutating and validating webhooks), and a
TCP proxy in front of several webhook processes."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration import pki
from tests.integration.helpers import unique_name


def certificate_files(
    directory: Path, ip_addresses: list[str], ca: pki.CertKeyPair | None = None, name: str = "tls"
) -> tuple[Path, Path, Path, pki.CertKeyPair]:
    """A serving certificate for localhost and `ip_addresses`, its key and its CA, as files written whole
    (each replaced at once, as a Secret volume or cert-manager does): (cert, key, ca, the CA's pair)."""
    ca = ca or pki.generate_ca("files-ca")
    serving = pki.issue_serving_cert(ca, "webhook", dns_names=["localhost"], ip_addresses=ip_addresses)
    paths = directory / f"{name}.crt", directory / f"{name}.key", directory / "ca.crt"
    for path, data in zip(paths, (serving.cert_pem, serving.key_pem, ca.cert_pem), strict=True):
        scratch = path.with_suffix(".new")
        scratch.write_bytes(data)
        scratch.replace(path)
    return (*paths, ca)


@dataclass
class AdmissionLoad:
    """Dry-run PriorityClass creates through the API server, `workers` at a time, until stopped."""

    api: ApiClient
    workers: int = 16
    sent: int = 0
    failures: list[str] = field(default_factory=list)
    failed_at: list[float] = field(default_factory=list)  # time.monotonic() of each failure
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def _work(self) -> None:
        scheduling = client.SchedulingV1Api(self.api)
        while not self._stop.is_set():
            body = {"metadata": {"name": unique_name("load")}, "value": 7000, "description": "load"}
            try:
                await scheduling.create_priority_class(body, dry_run="All")
            except ApiException as error:
                self._failed(f"{error.status}: {error.body}")
            except Exception as error:  # noqa: BLE001 - every failure is what the test counts
                self._failed(f"{type(error).__name__}: {str(error)[:300]}")
            self.sent += 1

    def _failed(self, failure: str) -> None:
        self.failures.append(failure)
        self.failed_at.append(time.monotonic())

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._work()) for _ in range(self.workers)]

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)


class RetryingProxy:
    """A TCP proxy on loopback in front of several backends, as a Service is in front of pods. Each client
    connection goes to the next backend that accepts it; what the client sent is kept until the backend
    answers, so a backend that refuses or dies before answering is replaced by the next one, the bytes
    replayed (the proxy's retry). A backend that dies after answering resets the client's connection, as
    a killed pod's would."""

    def __init__(self, backends: list[int]) -> None:
        self.backends = backends
        self._turn = itertools.cycle(range(len(backends)))
        self.server: asyncio.AbstractServer | None = None
        self.retries = 0
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._serve(reader, writer)
        finally:
            self._connections.discard(task)

    async def close(self) -> None:
        """Stops listening and drops every connection (the API server keeps idle ones open)."""
        if self.server is not None:
            self.server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self.server is not None:
            await self.server.wait_closed()

    async def _connect(self, sent: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        first = next(self._turn)
        for offset in range(len(self.backends)):
            port = self.backends[(first + offset) % len(self.backends)]
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                self.retries += 1
                continue
            if sent:
                writer.write(sent)
            return reader, writer
        return None

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        sent = bytearray()  # what the client sent while no backend has answered yet
        connected = await self._connect(b"")
        try:
            while connected is not None:
                reader, writer = connected
                answered = await self._pipe(client_reader, client_writer, reader, writer, sent)
                if answered or client_reader.at_eof():
                    break
                self.retries += 1  # the backend died before answering: the next one gets the same bytes
                connected = await self._connect(bytes(sent))
        finally:
            _reset(client_writer)

    async def _pipe(
        self,
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        sent: bytearray,
    ) -> bool:
        """Copies both ways until either side ends; whether the backend sent anything."""
        answered = False

        async def upstream() -> None:
            while data := await client_reader.read(65536):
                if not answered:
                    sent.extend(data)
                writer.write(data)
                await writer.drain()
            with contextlib.suppress(OSError):
                writer.write_eof()

        async def downstream() -> None:
            nonlocal answered
            while data := await reader.read(65536):
                answered = True
                sent.clear()
                client_writer.write(data)
                await client_writer.drain()

        tasks = [asyncio.create_task(upstream()), asyncio.create_task(downstream())]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if tasks[1] not in done and tasks[0].exception() is None:
                await asyncio.wait([tasks[1]])  # the client finished sending: the rest of the answer
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            _reset(writer)
        return answered


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a reset (SO_LINGER 0), as the kernel does for the connections of a killed process that
    still had data to read: the peer sees ECONNRESET, not a clean end."""
    sock = writer.get_extra_info("socket")
    with contextlib.suppress(OSError):
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()
