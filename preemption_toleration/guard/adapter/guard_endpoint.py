"""The guard's request handling: its body read once into its record, its fast path, its judgement's
metrics, reports (repeats folded), the hold of a scheduler's immediate retry, and the nudge plan of a
time-limited toleration."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from preemption_toleration.admission.decisions import Needs
from preemption_toleration.api.admission import ALLOWED, AdmissionVerdict, allowed, denied
from preemption_toleration.api.bodies import BadRequest
from preemption_toleration.api.paths import GUARD_PATH
from preemption_toleration.api.resources import PODS
from preemption_toleration.core.protection import ProtectionKind
from preemption_toleration.core.shapes import as_mapping
from preemption_toleration.guard.adapter.group_leases import GroupClaims, MemoryStore
from preemption_toleration.guard.decisions import judge_preemption
from preemption_toleration.guard.group_claims import MARGIN_SECONDS
from preemption_toleration.guard.memory import GuardMemory
from preemption_toleration.guard.prefilter import GuardOperation, is_preemption
from preemption_toleration.guard.repeats import RepeatFilter, RetryPacer
from preemption_toleration.guard.request import GuardRequest, read_guard_request
from preemption_toleration.guard.verdicts import GroupDecision, GuardConfig, PreemptorSource, Refusal, Verdict
from preemption_toleration.inventory.group_verdicts import KEPT_GROUPS
from preemption_toleration.inventory.preemptors import PreemptorRecord
from preemption_toleration.inventory.view import ClusterView, GroupsNotCurrent
from preemption_toleration.records.pod import PodRecord
from preemption_toleration.serving.handling import (
    Endpoint,
    HeldBack,
    Hold,
    Reply,
    Unready,
    admission_answer,
    not_kept,
    ready,
    target_problem,
)
from preemption_toleration.serving.webhook_metrics import WebhookMetrics
from preemption_toleration.telemetry.declared import RefusalMode

logger = logging.getLogger("preemption_toleration.webhooks")

GUARD = "guard"
_AUDIT, _ENFORCE = RefusalMode.AUDIT, RefusalMode.ENFORCE  # looked up once: the refusal path is hot


@dataclass(frozen=True)
class GuardHooks:
    view: Callable[[], ClusterView]
    config: GuardConfig
    on_refusal: Callable[[Refusal, int], None]  # a refusal to report, and how many refusals it stands for
    held_back: HeldBack = not_kept  # the expiry nudge's plan
    retry_hold: float = 0.0  # seconds to hold the refusal of a scheduler's immediate retry (`RetryPacer`)
    # a refused scheduler write: its victim and the preemptor ("namespace/name") it was refused for; what it
    # returns, once set, ends the refusal's hold (steering made the preemption: the scheduler retries at once)
    steer: Callable[[PodRecord, str | None], asyncio.Event | None] = lambda victim, preemptor: None
    # where the decisions for victim groups are settled with the other replicas (by default: none)
    claims: GroupClaims = field(default_factory=lambda: GroupClaims(MemoryStore(), "", "this replica"))
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    memory: GuardMemory = field(default_factory=GuardMemory)  # what the guard keeps between requests


class GuardEndpoint:
    """The guard's side of the admission endpoint it is served as (`endpoint`)."""

    def __init__(self, hooks: GuardHooks, metrics: WebhookMetrics, problems: Callable[[Needs], list[str]]) -> None:
        self.hooks = hooks
        self.metrics = metrics
        self.problems = problems  # why the caches a decision needs may not be decided from
        self.refusal_reports = RepeatFilter()
        self.retry_pacer = RetryPacer(hooks.retry_hold)
        # group UID -> (made at, by): another replica's allowance for it this replica's facts bore out
        self.borne_out: dict[str, tuple[datetime, str]] = {}

    def endpoint(self) -> Endpoint[GuardRequest]:
        return Endpoint(GUARD_PATH, GUARD, read_pod_review, self.handle, admission_answer)

    def handle(self, request: GuardRequest) -> Reply | Awaitable[Reply]:
        """The guard's verdict on a pod request, from its caches' view, with the hold of a refused
        immediate retry. A request that cannot be a preemption is allowed at once, unjudged, whether or
        not the caches are ready (its fast path: most requests the guard receives). A decision made afresh
        for a victim group is settled with the other replicas before the answer (`_settled`)."""
        config = self.hooks.config
        if not is_preemption(request, config.preemptor_identities, config.judges_every_eviction):
            return Reply(ALLOWED)
        ready(self.problems("all"))
        view = self.hooks.view()
        now = self.hooks.clock()
        verdict = _judged(request, view, config, now, self.hooks.memory)
        if verdict.fresh_group is not None:
            return self._settled(request, verdict.fresh_group, now)
        return self._reply(request, verdict, view)

    async def _settled(self, request: GuardRequest, fresh: tuple[str, GroupDecision], now: datetime) -> Reply:
        """The verdict once the group's decision is the one every replica answers (`group_claims`)."""
        group_uid, decision = fresh
        claims = self.hooks.claims
        # audit refuses nothing, so no replica's answer can split a group: nothing is written
        claim = claims.alone(decision) if self.hooks.config.audit else await claims.settle(group_uid, decision)
        view = self.hooks.view()
        trusted_until = claim.valid_until - timedelta(seconds=MARGIN_SECONDS)
        kept = claim.as_adopted_by(claims.holder)
        made = (claim.decided_at, claim.holder)
        checks = kept.adopted and not kept.exempt  # another replica's allowance: borne out by this one's facts?
        if checks and self.borne_out.get(group_uid) == made:
            kept, checks = kept._replace(adopted=False), False  # borne out when first adopted: it stands
        self.hooks.memory.group_verdicts.keep(group_uid, kept, trusted_until)
        verdict = _judged(request, view, self.hooks.config, now, self.hooks.memory)
        if verdict.fresh_group is not None:  # the claim no longer stands at `now`: never answered unsettled
            raise Unready([f"the decision for pod group {group_uid} could not be settled in time"])
        if checks and verdict.refusal is None:
            # Borne out once, it stands here as it stands there, for as long as it is renewed: facts that change
            # in the middle of a deletion (a member scheduled again) must not stop it on one replica only.
            self.borne_out.pop(group_uid, None)
            self.borne_out[group_uid] = made
            if len(self.borne_out) > KEPT_GROUPS:
                del self.borne_out[next(iter(self.borne_out))]
            self.hooks.memory.group_verdicts.keep(group_uid, kept._replace(adopted=False), trusted_until)
        return self._reply(request, verdict, view)

    def _reply(self, request: GuardRequest, verdict: Verdict, view: ClusterView) -> Reply:
        """The answer of a verdict: counted, reported, held."""
        if verdict.source is not None:
            self.metrics.preemptor_sources.inc(verdict.source.value)
        refusal = verdict.refusal
        if refusal is None and request.kind is GuardOperation.STATUS:
            _remember_marking_preemptor(request, verdict, self.hooks.memory.preemptors)
        response = answer(verdict)
        if refusal is None:
            if verdict.note is not None:
                logger.info("preemption allowed with warnings", extra=_fields(request, verdict))
            return Reply(response)
        mode = _AUDIT if refusal.audit else _ENFORCE
        self.metrics.guard_refusals.inc(refusal.kind, refusal.reason, mode, refusal.victim_kind)  # StrEnums
        if refusal.preemptor:
            self.metrics.refused(refusal.preemptor)
        # A scheduler retrying a protected victim asks many times a second: counted each time, reported
        # (log line, Event) the first time and then once per interval with the repeats it stands for.
        key = (refusal.victim.uid, refusal.kind, refusal.preemptor, refusal.reason, refusal.audit, refusal.dry_run)
        count = self.refusal_reports.report(key, time.monotonic())
        if count is not None:
            logger.info(
                "preemption refused" if not refusal.audit else "preemption would be refused",
                extra={
                    **_fields(request, verdict),
                    "preemptorPriority": refusal.preemptor_priority,
                    "code": refusal.code,
                    "refusals": count,
                },
            )
            self.hooks.on_refusal(refusal, count)
        hold, release = 0.0, None
        gone = verdict.source is PreemptorSource.DEPARTED  # nothing to steer or to hold back for
        if refusal.kind.scheduler_write and not refusal.audit and not refusal.dry_run:
            hold = self.retry_pacer.hold(key, time.monotonic())
            release = None if gone else self.hooks.steer(refusal.victim, refusal.preemptor)
        until = refusal.protection.until
        if (
            not gone
            and refusal.protection.kind is ProtectionKind.UNTIL
            and until is not None
            and not refusal.dry_run
            and not refusal.audit
        ):
            node = refusal.victim.node_name
            if node is not None and refusal.preemptor_pod is not None:
                self.hooks.held_back(refusal.preemptor_pod, node, until)
        return Reply(response, Hold(hold, release))


def _judged(
    request: GuardRequest, view: ClusterView, config: GuardConfig, now: datetime, memory: GuardMemory
) -> Verdict:
    try:
        return judge_preemption(request, view, config, now, memory)  # `handle` asked `is_preemption` already
    except GroupsNotCurrent as problem:  # a member judged apart from its group would break it
        raise Unready([str(problem)]) from problem


def read_pod_review(body: bytes) -> GuardRequest:
    """A review's body read once, strictly, into the guard's record of its pod request: BadRequest when it
    is no AdmissionReview of a pod request (the API server sends none), saying what is wrong."""
    request = read_guard_request(body)
    found = (request.group, request.resource)
    if problem := target_problem(GUARD_PATH, PODS, found, request.operation, request.object is not None):
        raise BadRequest(problem)
    return request


def answer(verdict: Verdict) -> AdmissionVerdict:
    """The admission verdict of the guard's: allowed (with its warnings), or refused with the refusal's code
    and words (a 429 as TooManyRequests, which `kubectl drain` retries)."""
    refusal = verdict.refusal
    if refusal is None:
        return ALLOWED if verdict.note is None else allowed((verdict.note,))
    if refusal.audit:
        return allowed(verdict.warnings)
    return denied(refusal.code, refusal.denial, "TooManyRequests" if refusal.code == 429 else None)


def _remember_marking_preemptor(request: GuardRequest, verdict: Verdict, preemptors: PreemptorRecord | None) -> None:
    """The scheduler marks a victim (`DisruptionTarget`), then deletes it: the DELETE is judged against
    the preemptor the allowed mark was judged against, not guessed again, so a guess that changes in
    between (another pod now pending) cannot refuse the DELETE and leave the pod marked but running."""
    victim_uid = as_mapping(as_mapping(request.old_object).get("metadata")).get("uid")
    if verdict.preemptor is None or preemptors is None or not isinstance(victim_uid, str):
        return
    if verdict.source in (PreemptorSource.INFERRED, PreemptorSource.RECORDED):
        preemptors.remember(verdict.preemptor, [victim_uid], datetime.now(UTC))


def _fields(request: GuardRequest, verdict: Verdict) -> dict[str, Any]:
    refusal = verdict.refusal
    return {
        "kind": str(refusal.kind if refusal is not None else request.kind or request.operation.lower()),
        "victim": f"{request.namespace}/{request.name}",
        "preemptor": refusal.preemptor if refusal is not None else None,
        "preemptorSource": verdict.source.value if verdict.source else None,
        "denial": refusal.message if refusal is not None else None,
        "warnings": list(verdict.warnings) or None,
        "dryRun": request.dry_run,
    }
