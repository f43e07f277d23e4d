"""The local control plane's path to a Service: an HTTP CONNECT proxy playing kube-proxy for the API server.

No container runtime runs here, so a Service's pods are our processes on loopback. kube-apiserver reaches a
webhook configured by `service:` (and an aggregated API) at the Service's ClusterIP, through its egress
selector's `cluster` connection; the local control plane points that connection at this proxy, which
forwards `CONNECT <clusterIP>:<port>` to the local address a test routed there (`LocalCluster.route_service`);
to one of several, for a Service of several replicas, taken in turn connection by connection, as kube-proxy
spreads connections over a Service's endpoints (the API server keeps a connection for many calls).
The webhook configurations, the Service and its TLS names stay as in a real cluster. A CONNECT to an
unrouted address is answered 502, as a Service without ready endpoints fails; a connection whose target is
routed away is closed, as an endpoint that leaves a Service drains.

It listens on a Unix socket (kube-apiserver 1.37 panics on an HTTPConnect egress over plain-HTTP TCP).
Run as `python -m preemption_toleration.devcluster.service_proxy --socket PATH --routes FILE`; FILE maps
"ip:port" to "host:port" or to a list of them (JSON), read again on every CONNECT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Room for a CONNECT line and a few headers; the API server sends two lines.
_MAX_HEAD = 8192
UNROUTED_CHECK_SECONDS = 0.5  # how often an open connection checks that its target is still routed


def routes_of(path: Path) -> dict[str, list[str]]:
    """Each routed "ip:port" and the "host:port" addresses its connections go to."""
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    found = {}
    for key, value in loaded.items():
        targets = [str(item) for item in value] if isinstance(value, list) else [str(value)]
        if targets:
            found[str(key)] = targets
    return found


class Turns:
    """Which target of a route the next connection takes: each in turn, counted per route."""

    def __init__(self) -> None:
        self._counters: dict[str, Iterator[int]] = {}

    def target(self, route: str, targets: list[str]) -> str:
        counter = self._counters.setdefault(route, itertools.count())
        return targets[next(counter) % len(targets)]


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """What `reader` reads, written to `writer` until it ends; then `writer` closed."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.close()


async def _serve(routes: Path, turns: Turns, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        writer.close()
        return
    parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    targets = routes_of(routes).get(parts[1]) if len(parts) == 3 and parts[0] == "CONNECT" else None
    target = turns.target(parts[1], targets) if targets else None
    if target is None:
        writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
        writer.close()
        return
    host, _, port = target.rpartition(":")
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
    except OSError:
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
        writer.close()
        return
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    await writer.drain()
    tunnel: asyncio.Future[Any] = asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
    unrouted: asyncio.Future[Any] = asyncio.ensure_future(_until_unrouted(routes, parts[1], target))
    await asyncio.wait({tunnel, unrouted}, return_when=asyncio.FIRST_COMPLETED)
    unrouted.cancel()
    for end in (writer, upstream_writer):  # an endpoint that left the Service: its connections end
        with contextlib.suppress(OSError, RuntimeError):
            end.close()
    await tunnel


async def _until_unrouted(routes: Path, route: str, target: str) -> None:
    """Returns once `target` is no longer among the route's targets, as a pod that leaves a Service's
    endpoints closes its connections when it drains (so the API server's next call takes another)."""
    while True:
        await asyncio.sleep(UNROUTED_CHECK_SECONDS)
        if target not in routes_of(routes).get(route, []):
            return


async def serve(socket_path: Path, routes: Path) -> None:
    turns = Turns()
    server = await asyncio.start_unix_server(
        lambda reader, writer: _serve(routes, turns, reader, writer), str(socket_path), limit=_MAX_HEAD
    )
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--socket", type=Path, required=True, help="the Unix socket to listen on")
    parser.add_argument("--routes", type=Path, required=True)
    args = parser.parse_args()
    args.socket.unlink(missing_ok=True)  # left by a proxy that was killed
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.socket, args.routes))


if __name__ == "__main__":
    main()
