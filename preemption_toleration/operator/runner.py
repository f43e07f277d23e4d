"""Running the operator: `ptol operator`, and as one part of `ptol run`."""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket
from datetime import UTC, datetime
from typing import Any, cast

import kopf

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.manifests import kopf_peering
from preemption_toleration.operator import policy_stream
from preemption_toleration.operator.caches import PolicyFeed
from preemption_toleration.operator.config import OperatorConfig
from preemption_toleration.operator.handlers import POLICY_EVENT_HANDLER, registry
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


class NoEventHandlerLines(logging.Filter):
    """Drops kopf's line for each run of the policies' event handler (`Handler 'policy_event' succeeded.`), which
    does nothing: one per policy event, two per new policy, thousands in a burst. kopf's other lines stay."""

    LINE = f"Handler '{POLICY_EVENT_HANDLER}' succeeded."

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != self.LINE


_NO_EVENT_HANDLER_LINES = NoEventHandlerLines()


def new_identity() -> str:
    """A name for this replica in the peering: its host name (a pod's name, in a pod), the start time and
    a random suffix, so that a restarted replica is never mistaken for the one before it. kopf's own
    default starts with the user's name, which a container user without a passwd entry (ours) has not."""
    return f"{socket.gethostname()}/{datetime.now(UTC):%Y%m%d%H%M%S}/{secrets.token_hex(3)}"


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
    policy_stream.install()  # before anything else: an unsupported kopf stops the start here
    metrics = OperatorMetrics()  # runtime state: kept out of the configuration, handed to kopf's memo
    # One identity for every run of kopf in this process: a run after a failure finds its own entry in the
    # peering, not a live peer of the same priority, which would pause it until the entry expired.
    identity = new_identity()
    logging.getLogger("kopf._core.reactor.running").addFilter(_NO_SIGNALS_WARNING)
    logging.getLogger("kopf.objects").addFilter(_NO_EVENT_HANDLER_LINES)
    metrics_runner = None
    if metrics_address:
        host, _, port = metrics_address.rpartition(":")
        metrics_runner = await serve_metrics(metrics, host.strip("[]") or "0.0.0.0", int(port))

    watched = [CustomResource(GROUP, VERSION, PLURAL)]
    if peering_name is not None:
        watched.append(CustomResource(kopf_peering.GROUP, kopf_peering.VERSION, kopf_peering.PLURAL))
    runs = 0

    async def run_once() -> None:
        nonlocal runs
        runs += 1
        if runs > 1:  # after a stop: kopf discovers resources only at its start (served.py)
            await wait_until_served(config.kubeconfig, watched, stop)
        await run_in_own_loop(
            lambda own_stop: _operator(config, metrics, peering_name, identity, own_stop, liveness_endpoint),
            stop,
            "operator",
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
    peering_name: str | None,
    identity: str,
    stop_flag: asyncio.Event,
    liveness_endpoint: str | None,
) -> None:
    policies = PolicyFeed()  # one per run: a new kopf lists the policies again
    with policy_stream.sharing(policies):
        await kopf.operator(
            registry=registry,
            clusterwide=True,
            standalone=peering_name is None,
            peering_name=peering_name,
            # kopf types identities as a private NewType of str, which it does not export
            identity=cast(Any, identity),
            priority=config.peering_priority,
            memo=kopf.Memo(config=config, metrics=metrics, policies=policies),
            stop_flag=stop_flag,
            liveness_endpoint=liveness_endpoint,
        )
