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
from preemption_toleration.api.bodies import read_model
from preemption_toleration.api.extender import ExtenderPreemptionArgs, ExtenderPreemptionResult
from preemption_toleration.api.paths import EXTENDER_PREEMPT_PATH
from preemption_toleration.core.pods import PodJson
from preemption_toleration.extender.decisions import NodeChoice, decide_preemption
from preemption_toleration.inventory.preemptors import PreemptorRecord
from preemption_toleration.inventory.view import ClusterView, GroupsNotCurrent
from preemption_toleration.serving.handling import (
    Answer,
    Endpoint,
    HeldBack,
    Reply,
    Unready,
    not_kept,
    ready,
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
    """The extender's side of the endpoint it is served as (`endpoint`): served as every endpoint is, its
    answer the preemptVerb's result. Any answer but 200 is an error to the scheduler (ignored if the extender
    is `ignorable`: the guard alone then protects)."""

    def __init__(self, hooks: ExtenderHooks, metrics: WebhookMetrics, problems: Callable[[Needs], list[str]]) -> None:
        self.hooks = hooks
        self.metrics = metrics
        self.problems = problems

    def endpoint(self) -> Endpoint[ExtenderPreemptionArgs]:
        return Endpoint(
            EXTENDER_PREEMPT_PATH,
            EXTENDER,
            read_preempt_args,
            self.handle,
            _result_answer,
            admits=self.admits if self.hooks.authenticated else None,
            noun="extender",
        )

    @staticmethod
    def admits(request: web.BaseRequest) -> Answer | None:
        """A caller without a client certificate (which the TLS layer verified) is refused, 403."""
        return None if _client_certificate(request) else (403, {"error": UNAUTHENTICATED})

    def handle(self, args: ExtenderPreemptionArgs) -> Reply:
        """The victims on each candidate node that do not tolerate the preemptor."""
        ready(self.problems("all"))
        try:
            return Reply(self._decide(args))
        except GroupsNotCurrent as problem:  # a member judged apart from its group would break it
            raise Unready([str(problem)]) from problem

    def _decide(self, args: ExtenderPreemptionArgs) -> ExtenderPreemptionResult:
        now = datetime.now(UTC)
        decision = decide_preemption(args, self.hooks.view(), now)
        named = {uid for uids, _ in args.victim_uids().values() for uid in uids}
        named.update(uid for outcome in decision.outcomes for uid in outcome.victims)
        preemptor = PodJson(args.pod)
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
        return decision.result


def read_preempt_args(body: bytes) -> ExtenderPreemptionArgs:
    """A preemptVerb body read once, strictly: BadRequest saying what is wrong."""
    return read_model(body, ExtenderPreemptionArgs.model_validate_json, "an ExtenderPreemptionArgs")


def _result_answer(args: ExtenderPreemptionArgs, result: ExtenderPreemptionResult) -> dict[str, Any]:
    return result.to_wire()


def _client_certificate(request: web.BaseRequest) -> bool:
    """Whether the caller presented a client certificate; the TLS layer (CERT_OPTIONAL) has verified it
    against the trusted CA, or refused the connection."""
    transport = request.transport
    return transport is not None and bool(transport.get_extra_info("peercert"))
