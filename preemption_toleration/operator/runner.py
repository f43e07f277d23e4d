"""Running the operator: `ptol operator`, and as one task of `ptol run`."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import kopf

from preemption_toleration.kube.peering import Peering, new_identity
from preemption_toleration.operator.handlers import OperatorConfig, registry
from preemption_toleration.operator.metrics import OperatorMetrics, serve_metrics


async def run_operator(
    config: OperatorConfig,
    *,
    peering_name: str | None = None,
    stop_flag: asyncio.Event | None = None,
    ready_flag: asyncio.Event | None = None,
    liveness_endpoint: str | None = None,
    metrics_address: str | None = None,
) -> None:
    """Run until stopped. Without a peering name the operator runs standalone (one replica only)."""
    metrics = OperatorMetrics()  # runtime state: kept out of the configuration, handed to kopf's memo
    # This replica's place in the peering, known to us (not only to kopf) so the resync can ask it.
    peering = Peering(peering_name, new_identity(), config.peering_priority) if peering_name else None
    metrics_runner = None
    if metrics_address:
        host, _, port = metrics_address.rpartition(":")
        metrics_runner = await serve_metrics(metrics, host.strip("[]") or "0.0.0.0", int(port))
    try:
        await _operator(config, metrics, peering, stop_flag, ready_flag, liveness_endpoint)
    finally:
        if metrics_runner is not None:
            await metrics_runner.cleanup()


async def _operator(
    config: OperatorConfig,
    metrics: OperatorMetrics,
    peering: Peering | None,
    stop_flag: asyncio.Event | None,
    ready_flag: asyncio.Event | None,
    liveness_endpoint: str | None,
) -> None:
    await kopf.operator(
        registry=registry,
        clusterwide=True,
        standalone=peering is None,
        peering_name=peering.name if peering else None,
        # kopf types identities as a private NewType of str, which it does not export
        identity=cast(Any, peering.identity) if peering else None,
        priority=config.peering_priority,
        memo=kopf.Memo(config=config, metrics=metrics, peering=peering),
        stop_flag=stop_flag,
        ready_flag=ready_flag,
        liveness_endpoint=liveness_endpoint,
    )
