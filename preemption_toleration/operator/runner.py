"""Running the operator: `ptol operator`, and as one part of `ptol run`."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import kopf

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.kube.peering import CLUSTER_PEERINGS, KOPF_GROUP, KOPF_VERSION, Peering, new_identity
from preemption_toleration.operator.config import OperatorConfig
from preemption_toleration.operator.handlers import registry
from preemption_toleration.operator.metrics import OperatorMetrics, serve_metrics
from preemption_toleration.operator.served import CustomResource, wait_until_served
from preemption_toleration.operator.supervision import keep_running, run_in_own_loop

logger = logging.getLogger("preemption_toleration.operator")


class NoSignalsWarning(logging.Filter):
    """Drops kopf's warning that it ignores OS signals outside the main thread: kopf runs in a thread of its
    own here, and the main thread takes SIGTERM and SIGINT and stops it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("OS signals are ignored")


_NO_SIGNALS_WARNING = NoSignalsWarning()  # one instance: adding it again changes nothing


async def run_operator(
    config: OperatorConfig,
    stop: asyncio.Event,
    *,
    peering_name: str | None = None,
    liveness_endpoint: str | None = None,
    metrics_address: str | None = None,
) -> None:
    """Run until `stop` is set. Without a peering name the operator runs standalone (one replica only).
    kopf runs in a thread and event loop of its own, and again after a failure (supervision.py)."""
    metrics = OperatorMetrics()  # runtime state: kept out of the configuration, handed to kopf's memo
    # This replica's place in the peering, known to us (not only to kopf) so the resync can ask it.
    peering = Peering(peering_name, new_identity(), config.peering_priority) if peering_name else None
    logging.getLogger("kopf._core.reactor.running").addFilter(_NO_SIGNALS_WARNING)
    metrics_runner = None
    if metrics_address:
        host, _, port = metrics_address.rpartition(":")
        metrics_runner = await serve_metrics(metrics, host.strip("[]") or "0.0.0.0", int(port))

    watched = [CustomResource(GROUP, VERSION, PLURAL)]
    if peering is not None:
        watched.append(CustomResource(KOPF_GROUP, KOPF_VERSION, CLUSTER_PEERINGS))
    runs = 0

    async def run_once() -> None:
        nonlocal runs
        runs += 1
        if runs > 1:  # after a stop: kopf discovers resources only at its start (served.py)
            await wait_until_served(config.kubeconfig, watched, stop)
        await run_in_own_loop(
            lambda own_stop: _operator(config, metrics, peering, own_stop, liveness_endpoint), stop, "operator"
        )

    def restarting(error: Exception, delay: float) -> None:
        metrics.restarts.inc()
        logger.error(
            "operator stopped by an error; starting it again",
            extra={"error": f"{type(error).__name__}: {error}", "seconds": delay},
        )

    try:
        await keep_running(run_once, stop, restarting=restarting)
    finally:
        if metrics_runner is not None:
            await metrics_runner.cleanup()


async def _operator(
    config: OperatorConfig,
    metrics: OperatorMetrics,
    peering: Peering | None,
    stop_flag: asyncio.Event,
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
        liveness_endpoint=liveness_endpoint,
    )
