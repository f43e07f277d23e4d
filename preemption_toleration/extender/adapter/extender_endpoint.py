"""The scheduler extender's request handling: its preemptVerb read, judged on the caches, the victims named
remembered for the guard, its node choices counted and logged, and a held-back preemptor's nudge planned."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from preemption_toleration.admission.decisions import Needs
from preemption_toleration.api.bodies import BadRequest, read_model
from preemption_toleration.api.extender import ExtenderPreemptionArgs
from preemption_toleration.api.paths import EXTENDER_PREEMPT_PATH
from preemption_toleration.extender.decisions import NodeChoice, decide_preemption
from preemption_toleration.inventory.preemptors import PreemptorRecord
from preemption_toleration.inventory.view import ClusterView, GroupsNotCurrent
from preemption_toleration.records.pod import PodBody
from preemption_toleration.serving.handling import (
    CLIENT_CLOSED_REQUEST,
    Answer,
    ClientGone,
    HeldBack,
    Unready,
    json_answer,
    not_kept,
    read_body,
    ready,
    unexpected,
)
from preemption_toleration.serving.webhook_metrics import WebhookMetrics

logger = logging.getLogger("preemption_toleration.webhooks")

EXTENDER = "extender-preempt"


@dataclass(frozen=True)
class ExtenderHooks:
    view: Callable[[], ClusterView]
    preemptors: PreemptorRecord  # which preemptor each victim was named for, read by the guard
    held_back: HeldBack = not_kept
    # the caller must have presented a client certificate, which the TLS layer verified against the CA of
    # --extender-client-ca (a scheduler's); the server sets it, tests of the handler alone need not
    authenticated: bool = False


UNAUTHENTICATED = (
    "the scheduler extender answers only a caller that presents a client certificate signed by the CA the "
    "webhook server trusts for it (--extender-client-ca, by default the cluster's CA): give kube-scheduler's "
    "own certificate as tlsConfig.certData and keyData in its extender entry"
)


class ExtenderEndpoint:
    def __init__(
        self,
        hooks: ExtenderHooks,
        metrics: WebhookMetrics,
        problems: Callable[[Needs], list[str]],
        max_body_bytes: int,
    ) -> None:
        self.hooks = hooks
        self.metrics = metrics
        self.problems = problems
        self.max_body_bytes = max_body_bytes

    async def handle(self, request: web.BaseRequest) -> web.Response:
        if self.hooks.authenticated and not _client_certificate(request):
            return json_answer({"error": UNAUTHENTICATED}, 403)
        try:
            body = await read_body(request, self.max_body_bytes)
        except ClientGone:
            return web.Response(status=CLIENT_CLOSED_REQUEST)
        except BadRequest as problem:
            status, answer = _bad_request(str(problem))
            return json_answer(answer, status)
        status, answer = self.preempt(body)
        return json_answer(answer, status)

    def preempt(self, body: bytes) -> Answer:
        """The scheduler extender's preemptVerb: the victims on each candidate node that do not tolerate
        the preemptor. Any answer but 200 is an error to the scheduler (ignored if the extender is
        `ignorable`: the guard alone then protects)."""
        try:
            args = read_model(body, ExtenderPreemptionArgs.model_validate_json, "an ExtenderPreemptionArgs")
        except BadRequest as problem:
            return _bad_request(str(problem))
        try:
            ready(self.problems("all"))
            return 200, self._decide(args)
        except Unready as unready:
            return unready.answer
        except GroupsNotCurrent as problem:  # a member judged apart from its group would break it
            return Unready([str(problem)]).answer
        except Exception as error:  # noqa: BLE001 - a bug must not become a 500; counted and logged
            return unexpected(self.metrics, EXTENDER, error)

    def _decide(self, args: ExtenderPreemptionArgs) -> dict[str, Any]:
        now = datetime.now(UTC)
        decision = decide_preemption(args, self.hooks.view(), now)
        named = {uid for uids, _ in args.victim_uids().values() for uid in uids}
        named.update(uid for outcome in decision.outcomes for uid in outcome.victims)
        preemptor = PodBody(args.pod)
        self.hooks.preemptors.remember(preemptor, named, now)
        held = [(o.held_until, o.node) for o in decision.outcomes if o.held_until is not None]
        if held:
            held_until, node = min(held)
            self.hooks.held_back(preemptor, node, held_until)
        for outcome in decision.outcomes:
            self.metrics.child(self.metrics.extender_nodes, outcome.choice.value).inc()
            if outcome.choice is not NodeChoice.UNCHANGED:
                logger.info(
                    "extender node decision",
                    extra={
                        "preemptor": f"{preemptor.namespace or None}/{preemptor.name or None}",
                        "node": outcome.node,
                        "choice": outcome.choice.value,
                        "victims": list(outcome.victims),
                        "tolerating": list(outcome.exempt),
                        "detail": outcome.detail,
                    },
                )
        return decision.result.to_wire()


def _bad_request(problem: str) -> Answer:
    logger.warning("bad extender request", extra={"endpoint": EXTENDER_PREEMPT_PATH, "problem": problem})
    return 400, {"error": problem}


def _client_certificate(request: web.BaseRequest) -> bool:
    """Whether the caller presented a client certificate; the TLS layer (CERT_OPTIONAL) has verified it
    against the trusted CA, or refused the connection."""
    transport = request.transport
    return transport is not None and bool(transport.get_extra_info("peercert"))
