"""The webhook server under faults, with admission requests sent through the real API server: its serving
certificate renewed under load (certificate files, and the self-managed Secret), and one of two server
processes behind one address killed under load. No admission request may fail."""

from __future__ import annotations

import asyncio
import signal
import ssl
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography import x509
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.admission.decisions import snapshot_of
from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.logs import REGISTERED
from preemption_toleration.webhooks.registration import Registrar, Registration, unregister
from preemption_toleration.webhooks.secret_tls import SecretCertificates
from tests.integration.components import WebhookServer, install_crd
from tests.integration.helpers import ANSWER_SECONDS, SLOW_SECONDS, START_SECONDS, eventually
from tests.integration.load import AdmissionLoad, RetryingProxy, certificate_files
from tests.metrics import scrape, total
from tests.unit.webhook_client import webhook_app

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

REQUESTS = 5000  # admission requests the webhook must answer while the fault happens


def served(base: str, ca_pem: bytes) -> float:
    """Admission requests a webhook server answered with 200 (its /metrics)."""
    text = scrape(f"{base}/metrics", ssl.create_default_context(cadata=ca_pem.decode()))
    return total(text, "ptol_webhook_requests_total", code="200")


def serving_serial(port: int, ca_pem: bytes) -> int:
    """The serial number of the certificate a new TLS connection is served (verified against the CA)."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    with (
        ssl.create_connection(("127.0.0.1", port), timeout=ANSWER_SECONDS) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


async def until_served(count: float, probe, what: str, timeout: float = SLOW_SECONDS) -> float:
    return await eventually(
        lambda: asyncio.to_thread(probe), lambda found: found >= count, timeout=timeout, interval=0.5, what=what
    )


@pytest.fixture
async def admission_load(api: ApiClient) -> AsyncIterator[AdmissionLoad]:
    load = AdmissionLoad(api)
    yield load
    await load.stop()


async def test_certificate_files_renewed_under_load_fail_no_request(
    cluster: LocalCluster, tmp_path: Path, admission_load: AdmissionLoad
) -> None:
    install_crd(cluster)
    cert, key, ca_file, ca = certificate_files(tmp_path, ["127.0.0.1"])
    server = WebhookServer(
        cluster,
        "webhook-renewal",
        "--guard",
        "off",
        "--cert-file",
        str(cert),
        "--key-file",
        str(key),
        "--ca-file",
        str(ca_file),
        "--register-url",
        "https://127.0.0.1:0",
    )  # :0, its port
    webhook, port, base = server.process, server.port, server.base
    since = webhook.start()
    try:
        webhook.wait_for(REGISTERED, since, timeout=START_SECONDS)
        first_serial = serving_serial(port, ca.cert_pem)
        admission_load.start()
        await until_served(REQUESTS // 4, lambda: served(base, ca.cert_pem), "load before the renewal")
        certificate_files(tmp_path, ["127.0.0.1"], ca)  # cert-manager renews: a new key, the same CA
        await eventually(
            lambda: asyncio.to_thread(lambda: webhook.log()[since:].count("serving certificate loaded")),
            lambda count: count >= 2,
            timeout=START_SECONDS,
            what="the renewed files loaded",
        )
        before = served(base, ca.cert_pem)
        await until_served(
            max(REQUESTS, before + REQUESTS // 4), lambda: served(base, ca.cert_pem), "load after the renewal"
        )
        await admission_load.stop()
        assert serving_serial(port, ca.cert_pem) != first_serial
        assert admission_load.failures == [], admission_load.failures[:5]
    finally:
        webhook.stop()


async def test_a_secret_certificate_renewed_under_load_fails_no_request(
    api: ApiClient, namespace: str, admission_load: AdmissionLoad
) -> None:
    """The self-managed mode, in this process: the real server and certificates, renewed when due and
    stored in the Secret while the API server keeps calling."""
    from aiohttp import web

    certificates = SecretCertificates(api, namespace, "webhook-tls", ["localhost"], ["127.0.0.1"])
    await certificates.setup()
    app = webhook_app(lambda: snapshot_of({}, {}), lambda needs: [])
    runner = web.ServerRunner(app.build())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=certificates.context)
    await site.start()
    port = runner.addresses[0][1]
    base = f"https://127.0.0.1:{port}"
    try:
        await Registrar(api, Registration(url=base, guard=False), lambda: certificates.ca_bundle).apply()
        first = certificates.serving_pem
        admission_load.start()
        await until_served(REQUESTS // 4, lambda: served(base, certificates.ca_bundle), "load before the renewal")
        due = x509.load_pem_x509_certificate(first).not_valid_after_utc
        await certificates.renew_or_reload(now=due)
        assert certificates.serving_pem != first
        await until_served(REQUESTS, lambda: served(base, certificates.ca_bundle), "load after the renewal")
        await admission_load.stop()
        # this process serves too: ask from a thread
        assert (
            await asyncio.to_thread(serving_serial, port, certificates.ca_bundle)
            == x509.load_pem_x509_certificate(certificates.serving_pem).serial_number
        )
        assert admission_load.failures == [], admission_load.failures[:5]
    finally:
        await unregister(api)
        await runner.cleanup()


async def two_servers_one_stopped(
    api: ApiClient, cluster: LocalCluster, tmp_path: Path, load: AdmissionLoad, stop: signal.Signals
) -> float:
    """Two `ptol webhook` processes behind a retrying proxy under load; `stop` sent to the first once both
    have served; load goes on until the survivor alone has served REQUESTS more. When the signal was sent."""
    install_crd(cluster)
    cert, key, _, ca = certificate_files(tmp_path, ["127.0.0.1"])
    replicas = [
        WebhookServer(
            cluster, f"webhook-replica-{i}", "--guard", "off", "--cert-file", str(cert), "--key-file", str(key)
        )
        for i in range(2)
    ]
    ports, servers = [replica.port for replica in replicas], [replica.process for replica in replicas]
    proxy = RetryingProxy(ports)
    await proxy.start()
    try:
        for server in servers:
            server.start()
        for port in ports:
            await eventually(
                lambda port=port: asyncio.to_thread(_ready, port, ca.cert_pem),
                bool,
                timeout=START_SECONDS,
                what=f"the server on {port} ready",
            )
        bases = [f"https://127.0.0.1:{port}" for port in ports]
        await Registrar(
            api, Registration(url=f"https://127.0.0.1:{proxy.port}", guard=False), lambda: ca.cert_pem
        ).apply()
        load.start()
        for base in bases:  # the proxy runs in this loop: metrics are read from threads
            await until_served(REQUESTS // 8, lambda base=base: served(base, ca.cert_pem), f"load on {base}")
        victim = servers[0].process
        assert victim is not None
        stopped_at = time.monotonic()
        victim.send_signal(stop)
        before = await asyncio.to_thread(served, bases[1], ca.cert_pem)
        await until_served(before + REQUESTS, lambda: served(bases[1], ca.cert_pem), "load on the survivor")
        await load.stop()
        assert await asyncio.to_thread(victim.wait, 30) is not None
        return stopped_at
    finally:
        await unregister(api)
        await proxy.close()
        for server in servers:
            server.stop()


async def test_one_of_two_servers_stopped_under_load_fails_no_request(
    api: ApiClient, cluster: LocalCluster, tmp_path: Path, admission_load: AdmissionLoad
) -> None:
    """SIGTERM, as the kubelet stops a pod: the server stops listening, answers what it has, closes."""
    await two_servers_one_stopped(api, cluster, tmp_path, admission_load, signal.SIGTERM)
    assert admission_load.failures == [], admission_load.failures[:5]


async def test_one_of_two_servers_killed_under_load_fails_only_what_it_was_answering(
    api: ApiClient, cluster: LocalCluster, tmp_path: Path, admission_load: AdmissionLoad
) -> None:
    """SIGKILL: the requests the killed process was answering fail (the API server does not retry a webhook
    call; the webhook's failurePolicy decides them), and none after: new connections go to the survivor."""
    killed_at = await two_servers_one_stopped(api, cluster, tmp_path, admission_load, signal.SIGKILL)
    late = [
        failure
        for failure, at in zip(admission_load.failures, admission_load.failed_at, strict=True)
        if at > killed_at + 2
    ]
    assert late == []
    assert len(admission_load.failures) <= admission_load.workers, admission_load.failures[:5]
    assert all("connection reset by peer" in failure or "EOF" in failure for failure in admission_load.failures)


def _ready(port: int, ca_pem: bytes) -> bool:
    context = ssl.create_default_context(cadata=ca_pem.decode())
    try:
        with urllib.request.urlopen(
            f"https://127.0.0.1:{port}/readyz", context=context, timeout=ANSWER_SECONDS
        ) as response:
            return response.status == 200
    except OSError:
        return False
