"""`ptol run --webhook-replicas N`: each replica's settings, the shared certificate, and the one address that
spreads connections over the ready replicas in turn. One row or test per rule."""

from __future__ import annotations

import argparse
import asyncio
import ssl
from pathlib import Path

import pytest

from preemption_toleration.cli.run_replicas import Spreader, replica_count, replica_settings, shared_certificate
from preemption_toleration.webhooks.settings import WebhookSettings, local_run_defaults

TLS = ("tls.crt", "tls.key", "ca.crt")
ADDRESS = "https://127.0.0.1:9443"


def test_each_replica_serves_the_shared_certificate_on_its_own_port_and_only_the_first_registers() -> None:
    settings = WebhookSettings(port=9443, tls_secret="ns/secret", steering="on", lease_namespace="ptol")
    first, second = replica_settings(settings, [20001, 20002], ADDRESS, TLS)
    assert (first.name, second.name) == ("run-0", "run-1")
    for replica, port in ((first, 20001), (second, 20002)):
        found = replica.settings
        assert (found.host, found.port) == ("127.0.0.1", port)
        assert (found.cert_file, found.key_file, found.ca_file, found.tls_secret) == (*TLS, None)
        assert (found.steering, found.lease_namespace) == ("on", "ptol"), "every other setting as given"
    assert (first.settings.register_url, second.settings.register_url) == (ADDRESS, None)


METRICS = [
    # (rule, --metrics-address, each replica's)
    ("a free port each", "127.0.0.1:0", ["127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"]),
    ("the given port plus the replica's index", "0.0.0.0:9090", ["0.0.0.0:9090", "0.0.0.0:9091", "0.0.0.0:9092"]),
    ("none apart: /metrics beside the webhooks", None, [None, None, None]),
]


@pytest.mark.parametrize(("rule", "given", "expected"), METRICS, ids=[case[0] for case in METRICS])
def test_each_replica_serves_its_metrics_apart(rule, given, expected) -> None:
    settings = WebhookSettings(metrics_address=given)
    found = [replica.settings.metrics_address for replica in replica_settings(settings, [1, 2, 3], ADDRESS, TLS)]
    assert found == expected, rule


COUNTS = [("one", "1", 1), ("the chart's two", "2", 2), ("sixteen at most", "16", 16)]
BAD_COUNTS = [("none", "0"), ("too many", "17"), ("not a number", "two"), ("negative", "-1")]


@pytest.mark.parametrize(("rule", "given", "expected"), COUNTS, ids=[case[0] for case in COUNTS])
def test_a_replica_count_is_read(rule, given, expected) -> None:
    assert replica_count(given) == expected, rule


@pytest.mark.parametrize(("rule", "given"), BAD_COUNTS, ids=[case[0] for case in BAD_COUNTS])
def test_a_bad_replica_count_says_what_is_allowed(rule, given) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="number of replicas from 1 to 16"):
        replica_count(given)


def test_the_shared_certificate_is_made_once_for_the_settings_names(tmp_path: Path) -> None:
    cert, key, ca = shared_certificate(local_run_defaults(), tmp_path)
    context = ssl.create_default_context(cafile=ca)
    context.load_verify_locations(ca)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)  # the key is the certificate's
    assert all(oct(Path(path).stat().st_mode)[-3:] == "600" for path in (cert, key, ca))


def test_given_certificate_files_are_served_as_they_are(tmp_path: Path) -> None:
    settings = WebhookSettings(cert_file="c.pem", key_file="k.pem", ca_file="ca.pem")
    assert shared_certificate(settings, tmp_path) == ("c.pem", "k.pem", "ca.pem")
    assert list(tmp_path.iterdir()) == []


async def _echo_server(reply: bytes) -> tuple[asyncio.Server, int]:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        writer.write(reply)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def _through(port: int) -> bytes:
    """What the replica behind the address answered; b"" when the connection was closed unanswered."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"x")
        await writer.drain()
        return await reader.read()
    except ConnectionResetError:
        return b""
    finally:
        writer.close()


async def test_connections_go_to_the_ready_replicas_in_turn_and_are_refused_while_none_is() -> None:
    (a, port_a), (b, port_b) = await _echo_server(b"a"), await _echo_server(b"b")
    spreader = Spreader([None, None])
    front = await asyncio.start_server(spreader.connect, "127.0.0.1", 0)
    address = front.sockets[0].getsockname()[1]
    async with a, b, front:
        assert await _through(address) == b"", "no replica ready: the connection is closed"
        spreader.ports[1] = port_b
        assert [await _through(address) for _ in range(2)] == [b"b", b"b"], "only the ready one"
        spreader.ports[0] = port_a
        found = [await _through(address) for _ in range(4)]
        assert sorted(found) == [b"a", b"a", b"b", b"b"] and found[0] != found[1], "in turn"
