"""Ports for the processes a test or `ptol run` starts next: free, and out of the way of outgoing connections."""

from __future__ import annotations

import socket

import pytest

from preemption_toleration.devcluster import processes
from preemption_toleration.devcluster.processes import LOWEST_PORT, free_ports


def _outgoing_start() -> int:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as ranges:
        return int(ranges.read().split()[0])


def test_a_block_of_ports_is_free_and_below_the_range_of_outgoing_connections() -> None:
    """A connection made between the choice and the bind takes its local port from the kernel's range, never
    from the block (CI saw `ptol run`'s second replica refused its /metrics port, taken meanwhile)."""
    first = free_ports(16)
    assert LOWEST_PORT <= first and first + 16 <= _outgoing_start()
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(16)]
    try:
        for offset, sock in enumerate(sockets):
            sock.bind(("127.0.0.1", first + offset))
    finally:
        for sock in sockets:
            sock.close()


def test_a_block_with_a_port_in_use_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", free_ports(8)))
        held.listen()
        taken = held.getsockname()[1]
        tried = iter([taken - 2, taken + 1])  # the first block holds the port in use, the second does not
        monkeypatch.setattr(processes.random, "randrange", lambda low, high: next(tried))
        assert free_ports(4) == taken + 1
