"""The test bed's service proxy (kube-proxy for the API server): a Service of several replicas gets the API
server's connections in turn, each whole to one replica."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from preemption_toleration.devcluster.service_proxy import Turns, routes_of, serve

ON_OWN_LOOP = pytest.mark.asyncio(loop_scope="function")  # the async tests only: the others are plain


def test_a_route_names_one_address_or_several(tmp_path: Path) -> None:
    routes = tmp_path / "routes.json"
    routes.write_text(json.dumps({"10.0.0.1:443": "127.0.0.1:1", "10.0.0.2:443": ["127.0.0.1:2", "127.0.0.1:3"]}))
    assert routes_of(routes) == {"10.0.0.1:443": ["127.0.0.1:1"], "10.0.0.2:443": ["127.0.0.1:2", "127.0.0.1:3"]}
    routes.write_text("[not a mapping]")
    assert routes_of(routes) == {}


def test_each_connection_takes_the_next_replica_of_its_route() -> None:
    turns = Turns()
    targets = ["a", "b"]
    assert [turns.target("s:443", targets) for _ in range(5)] == ["a", "b", "a", "b", "a"]
    assert turns.target("other:443", targets) == "a", "counted per route"


@ON_OWN_LOOP
async def test_connections_to_a_service_of_two_replicas_are_spread_over_both(tmp_path: Path) -> None:
    answered: list[str] = []

    async def replica(name: str) -> asyncio.Server:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readline()
            answered.append(name)
            writer.write(name.encode() + b"\n")
            await writer.drain()
            writer.close()

        return await asyncio.start_server(answer, "127.0.0.1", 0)

    servers = [await replica("one"), await replica("two")]
    ports = [server.sockets[0].getsockname()[1] for server in servers]
    routes, socket_path = tmp_path / "routes.json", tmp_path / "proxy.sock"
    routes.write_text(json.dumps({"10.96.0.9:443": [f"127.0.0.1:{port}" for port in ports]}))
    proxy = asyncio.create_task(serve(socket_path, routes))
    try:
        while not socket_path.exists():
            await asyncio.sleep(0.01)
        replies = []
        for _ in range(4):
            reader, writer = await asyncio.open_unix_connection(str(socket_path))
            writer.write(b"CONNECT 10.96.0.9:443 HTTP/1.1\r\nHost: 10.96.0.9:443\r\n\r\n")
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
            writer.write(b"hello\n")
            replies.append((await reader.readline()).decode().strip())
            writer.close()
        assert replies == ["one", "two", "one", "two"]
    finally:
        proxy.cancel()
        for server in servers:
            server.close()


@ON_OWN_LOOP
async def test_a_connection_whose_replica_is_routed_away_is_closed(tmp_path: Path) -> None:
    """As an endpoint that leaves a Service drains: the open connection ends, and the API server's next one
    goes to the replica routed now."""

    async def replica(name: str) -> asyncio.Server:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while await reader.readline():
                writer.write(name.encode() + b"\n")
                await writer.drain()
            writer.close()

        return await asyncio.start_server(echo, "127.0.0.1", 0)

    servers = [await replica("one"), await replica("two")]
    one, two = (f"127.0.0.1:{server.sockets[0].getsockname()[1]}" for server in servers)
    routes, socket_path = tmp_path / "routes.json", tmp_path / "proxy.sock"
    routes.write_text(json.dumps({"10.96.0.9:443": [one]}))
    proxy = asyncio.create_task(serve(socket_path, routes))

    async def tunnel() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_unix_connection(str(socket_path))
        writer.write(b"CONNECT 10.96.0.9:443 HTTP/1.1\r\nHost: 10.96.0.9:443\r\n\r\n")
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        return reader, writer

    async def ask(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
        writer.write(b"hello\n")
        return (await reader.readline()).decode().strip()

    try:
        while not socket_path.exists():
            await asyncio.sleep(0.01)
        reader, writer = await tunnel()
        assert await ask(reader, writer) == "one"
        routes.write_text(json.dumps({"10.96.0.9:443": [two]}))
        assert await asyncio.wait_for(reader.read(), timeout=10) == b"", "the open connection is closed"
        assert await ask(*await tunnel()) == "two"
    finally:
        proxy.cancel()
        for server in servers:
            server.close()
