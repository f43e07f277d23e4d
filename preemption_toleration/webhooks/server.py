"""The aiohttp adapter: HTTP in, AdmissionReview decisions out, plus health, readiness and metrics.

Bad input (not JSON, not an AdmissionReview, the wrong kind, too large) gets a 400 with a clear message and
a log line; a request is answered from the caches only, never by calling the API server.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from aiohttp import HttpVersion11, hdrs, web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError
from pydantic_core import from_json, to_json

from preemption_toleration.api.admission import (
    ADMISSION_VERSIONS,
    AdmissionRequest,
    AdmissionResponse,
    AdmissionReview,
    review_response,
)
from preemption_toleration.api.base import first_error
from preemption_toleration.api.extender import ExtenderPreemptionArgs
from preemption_toleration.api.guard_review import CheckedReview, read_guard_review
from preemption_toleration.core.protection import ProtectionKind
from preemption_toleration.core.shapes import as_mapping, is_mapping
from preemption_toleration.extender.decisions import ExtenderView, NodeChoice, decide_preemption
from preemption_toleration.guard.decisions import (
    GuardConfig,
    GuardSnapshot,
    PreemptorSource,
    Refusal,
    Verdict,
    judge,
    request_problem,
)
from preemption_toleration.guard.prefilter import may_be_preemption
from preemption_toleration.guard.record import PreemptorRecord
from preemption_toleration.guard.repeats import RepeatFilter, RetryPacer
from preemption_toleration.webhooks.configurations import EXTENDER_PREFIX, GUARD_PATH
from preemption_toleration.webhooks.decisions import (
    AdmissionConfig,
    Needs,
    Snapshot,
    mutate_priority_class,
    validate_policy,
    validate_priority_class,
)
from preemption_toleration.webhooks.hot_metrics import Buckets
from preemption_toleration.webhooks.metrics import WebhookMetrics

logger = logging.getLogger("preemption_toleration.webhooks")

DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024  # the API server's own request limit is 3 MiB
GUARD = "guard"
EXTENDER = "extender-preempt"
EXTENDER_PATH = f"{EXTENDER_PREFIX}/preempt"

Decide = Callable[[AdmissionRequest, Snapshot], AdmissionResponse]
Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
AnyResponse = TypeVar("AnyResponse", bound=web.StreamResponse)


@dataclass(frozen=True)
class Endpoint:
    path: str
    name: str
    group: str
    resource: str
    decide: Decide
    check: Callable[[AdmissionRequest], str | None] | None = None  # what makes a request unreadable to it
    read: Callable[[bytes], Any] = from_json  # the body's JSON; ValueError when it is not JSON
    needs: Needs = "admission"  # the caches its decisions read


class BadRequest(Exception):
    pass


# (preemptor, node, until): a time-limited toleration held the preemptor back on that node
HeldBack = Callable[[Mapping[str, Any], str, datetime], None]


def _not_kept(preemptor: Mapping[str, Any], node: str, until: datetime) -> None:
    pass


@dataclass(frozen=True)
class GuardHooks:
    snapshot: Callable[[], GuardSnapshot]
    config: GuardConfig
    on_refusal: Callable[[Refusal, int], None]  # a refusal to report, and how many refusals it stands for
    held_back: HeldBack = _not_kept  # the expiry nudge's plan
    retry_hold: float = 0.0  # seconds to hold the refusal of a scheduler's immediate retry (`RetryPacer`)


@dataclass(frozen=True)
class ExtenderHooks:
    view: Callable[[], ExtenderView]
    preemptors: PreemptorRecord  # which preemptor each victim was named for, read by the guard
    held_back: HeldBack = _not_kept


def endpoints(config: AdmissionConfig) -> list[Endpoint]:
    return [
        Endpoint(
            "/validate/priorityclasses",
            "validate-priorityclasses",
            "scheduling.k8s.io",
            "priorityclasses",
            lambda request, snapshot: validate_priority_class(request, snapshot, config),
        ),
        Endpoint(
            "/mutate/priorityclasses",
            "mutate-priorityclasses",
            "scheduling.k8s.io",
            "priorityclasses",
            mutate_priority_class,
        ),
        Endpoint(
            "/validate/preemptiontolerationpolicies",
            "validate-policies",
            "preemption-toleration.dev",
            "preemptiontolerationpolicies",
            validate_policy,
        ),
    ]


async def _read_body(request: web.BaseRequest, max_bytes: int) -> bytes:
    if request.content_length is not None and request.content_length > max_bytes:
        raise BadRequest(f"request body of {request.content_length} bytes exceeds the limit of {max_bytes} bytes")
    try:
        return await request.read()  # the whole body, however it arrives; the app's limit stops a huge one
    except web.HTTPRequestEntityTooLarge as error:
        raise BadRequest(f"request body exceeds the limit of {max_bytes} bytes") from error


def _decode(
    body: bytes, expected: str = "an AdmissionReview", read: Callable[[bytes], Any] = from_json
) -> dict[str, Any]:
    try:
        # pydantic-core's parser (`read` is one of its readers): about twice as fast as the json module's,
        # and it refuses nesting deeper than 200 levels with an error instead of exhausting the stack.
        payload = read(body)
    except ValueError as error:
        raise BadRequest(f"request body is not JSON: {error}") from error
    if not isinstance(payload, dict):
        raise BadRequest(f"request body is a JSON {type(payload).__name__}, not {expected} object")
    return payload


_REVIEW_VALIDATOR = AdmissionReview.__pydantic_validator__  # what model_validate calls, without its 0.3 µs of setup


def _review(payload: dict[str, Any]) -> AdmissionReview:
    try:
        review: AdmissionReview = _REVIEW_VALIDATOR.validate_python(payload)
        return review
    except ValidationError as error:
        raise BadRequest(f"request body is not an AdmissionReview: {first_error(error)}") from error


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=to_json(body), status=status, content_type="application/json")


def _review_answer(body: Any, status: int) -> web.Response:
    """An admission answer, whose AdmissionResponse model is written by pydantic-core in the same pass as
    the rest (by its camelCase aliases, unset fields left out): no dictionary of it is built first."""
    return web.Response(
        body=to_json(body, by_alias=True, exclude_none=True), status=status, content_type="application/json"
    )


def _allowed(payload: Mapping[str, Any]) -> dict[str, Any]:
    """An "allowed" answer to a review checked by `WebhookApp._not_a_preemption`."""
    return {
        "apiVersion": payload["apiVersion"],
        "kind": "AdmissionReview",
        "response": {"uid": payload["request"]["uid"], "allowed": True},
    }


class WebhookApp:
    """Builds the aiohttp application around a snapshot source and a readiness check."""

    def __init__(
        self,
        snapshot: Callable[[], Snapshot],
        problems: Callable[[Needs], list[str]],
        config: AdmissionConfig | None = None,
        metrics: WebhookMetrics | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        guard: GuardHooks | None = None,
        extender: ExtenderHooks | None = None,
    ) -> None:
        self.guard = guard
        self.extender = extender
        self.snapshot = snapshot
        self.problems = problems  # why the caches a decision needs may not be decided from
        self.config = config or AdmissionConfig()
        self.metrics = metrics or WebhookMetrics()
        self.max_body_bytes = max_body_bytes
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self.refusal_reports = RepeatFilter()
        self.retry_pacer = RetryPacer(guard.retry_hold if guard is not None else 0.0)
        self._hold = 0.0  # set by `_guard` for the answer `answer` is returning; taken by the handler
        # Shutting down: not ready, and every answer says `Connection: close`, so that a kept-alive
        # connection is ended by the client after an answer, never by us while a request may be on its way
        # (which the API server would report as a failed webhook call).
        self.draining = False
        admission = endpoints(self.config)
        if self.guard is not None:
            admission.append(
                Endpoint(GUARD_PATH, GUARD, "", "pods", self._guard, request_problem, read_guard_review, "all")
            )
        self.routes: tuple[Endpoint, ...] = tuple(admission)  # the admission endpoints
        # path -> method -> handler; each handler does its own draining check (no middleware)
        self._table: dict[str, dict[str, Handler]] = {
            endpoint.path: {hdrs.METH_POST: self._handler(endpoint)} for endpoint in admission
        }
        if self.extender is not None:
            self._table[EXTENDER_PATH] = {hdrs.METH_POST: self._timed(EXTENDER, self._preempt)}
        for path, page in (("/healthz", self._healthz), ("/readyz", self._readyz), ("/metrics", self._metrics)):
            handler = self._closing(page)
            self._table[path] = {hdrs.METH_GET: handler, hdrs.METH_HEAD: handler}

    def build(self) -> web.Server:
        """The aiohttp server to run (in a `web.ServerRunner`): aiohttp's low-level server, each request's
        handler looked up in a table of our fixed paths. Served by an `Application` instead (router, match
        info, signals, middleware chain: nothing we use), the same handlers took about 5 µs more CPU per
        admission request, some 6 % of it, side by side under `wrk`."""
        loop = asyncio.get_running_loop()
        max_bytes = self.max_body_bytes

        def request(
            message: RawRequestMessage,
            payload: StreamReader,
            protocol: RequestHandler,
            writer: AbstractStreamWriter,
            task: asyncio.Task[None],
        ) -> web.BaseRequest:
            # the size limit an Application would set: `read()` refuses a larger chunked body
            return web.BaseRequest(message, payload, protocol, writer, task, loop, client_max_size=max_bytes)

        return web.Server(self.route, request_factory=request, access_log=None)

    def route(self, request: web.BaseRequest) -> Awaitable[web.StreamResponse]:
        """The handler of a request's path and method (a plain function: the handler's own coroutine is
        the only one per request), or a 404 or 405 as aiohttp's router answers them."""
        methods = self._table.get(request.path)
        handler = methods.get(request.method) if methods is not None else None
        if handler is None:
            return self._unrouted(methods)
        if request.headers.get(hdrs.EXPECT):  # an empty one is ignored, as by aiohttp's router
            return self._continued(request, handler)
        return handler(request)

    async def _unrouted(self, methods: Mapping[str, Handler] | None) -> web.StreamResponse:
        if methods is None:
            return self._closed_if_draining(web.Response(status=404, text="404: Not Found"))
        allowed = ",".join(sorted(methods))
        return self._closed_if_draining(
            web.Response(status=405, text="405: Method Not Allowed", headers={hdrs.ALLOW: allowed})
        )

    async def _continued(self, request: web.BaseRequest, handler: Handler) -> web.StreamResponse:
        """`Expect: 100-continue` (curl sends it with a large body), answered as aiohttp's router does."""
        expect = request.headers[hdrs.EXPECT]
        if request.version != HttpVersion11 or expect.lower() != "100-continue":
            return self._closed_if_draining(web.Response(status=417, text=f"Unknown Expect: {expect}"))
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # the answer's size counts from its status line
        return await handler(request)

    def _handler(self, endpoint: Endpoint) -> Handler:
        """One coroutine per request, reading, judging and counting (each layer more costs about 1 µs)."""
        name, latency = endpoint.name, self.metrics.latency.series(endpoint.name)

        async def handle(request: web.BaseRequest) -> web.Response:
            started = time.perf_counter()
            try:
                body = await _read_body(request, self.max_body_bytes)
            except BadRequest as problem:
                status, answer = self._bad_request(endpoint, str(problem))
            else:
                status, answer = self.answer(endpoint, body)
                hold, self._hold = self._hold, 0.0  # read before any await: it is this request's
                if hold > 0 and not self.draining:
                    await asyncio.sleep(hold)
                    started += hold  # pacing, not work: the request's latency metric leaves it out
            return self._counted(name, latency, started, _review_answer(answer, status))

        return handle

    def _timed(self, name: str, answer: Callable[[web.BaseRequest], Awaitable[web.Response]]) -> Handler:
        latency = self.metrics.latency.series(name)

        async def handle(request: web.BaseRequest) -> web.Response:
            started = time.perf_counter()
            return self._counted(name, latency, started, await answer(request))

        return handle

    def _counted(self, name: str, latency: Buckets, started: float, response: web.Response) -> web.Response:
        """Counts an answer and its time; while draining, tells the client to close the connection."""
        self.metrics.requests.inc(name, str(response.status))
        latency.observe(time.perf_counter() - started)
        return self._closed_if_draining(response)

    def _closing(self, answer: Handler) -> Handler:
        async def handle(request: web.BaseRequest) -> web.StreamResponse:
            return self._closed_if_draining(await answer(request))

        return handle

    def _closed_if_draining(self, response: AnyResponse) -> AnyResponse:
        """Every answer while draining tells the client to close its connection (see `draining`)."""
        if self.draining:
            response.force_close()
        return response

    async def _preempt(self, request: web.BaseRequest) -> web.Response:
        try:
            body = await _read_body(request, self.max_body_bytes)
        except BadRequest as problem:
            status, answer = self._bad_extender_request(str(problem))
            return _json(answer, status)
        status, answer = self.preempt(body)
        return _json(answer, status)

    def _bad_extender_request(self, problem: str) -> tuple[int, dict[str, Any]]:
        logger.warning("bad extender request", extra={"endpoint": EXTENDER_PATH, "problem": problem})
        return 400, {"error": problem}

    def preempt(self, body: bytes) -> tuple[int, dict[str, Any]]:
        """The scheduler extender's preemptVerb: the victims on each candidate node that do not tolerate
        the preemptor. Any answer but 200 is an error to the scheduler (ignored if the extender is
        `ignorable`: the guard alone then protects)."""
        assert self.extender is not None
        try:
            args = ExtenderPreemptionArgs.model_validate(_decode(body, "an ExtenderPreemptionArgs"))
        except BadRequest as problem:
            return self._bad_extender_request(str(problem))
        except ValidationError as error:
            return self._bad_extender_request(f"request body is not an ExtenderPreemptionArgs: {first_error(error)}")
        if unready := self._unready("all"):
            return unready
        try:
            return 200, self._decide_preemption(args)
        except Exception as error:  # noqa: BLE001 - a bug must not become a 500; counted and logged
            return self._unexpected(EXTENDER, error)

    def _decide_preemption(self, args: ExtenderPreemptionArgs) -> dict[str, Any]:
        assert self.extender is not None
        now = datetime.now(UTC)
        decision = decide_preemption(args, self.extender.view(), now)
        named = {uid for uids, _ in args.victim_uids().values() for uid in uids}
        named.update(uid for outcome in decision.outcomes for uid in outcome.victims)
        self.extender.preemptors.remember(args.pod, named, now)
        preemptor = as_mapping(args.pod.get("metadata"))
        held = [(o.held_until, o.node) for o in decision.outcomes if o.held_until is not None]
        if held:
            held_until, node = min(held)
            self.extender.held_back(args.pod, node, held_until)
        for outcome in decision.outcomes:
            self._child(self.metrics.extender_nodes, outcome.choice.value).inc()
            if outcome.choice is not NodeChoice.UNCHANGED:
                logger.info(
                    "extender node decision",
                    extra={
                        "preemptor": f"{preemptor.get('namespace')}/{preemptor.get('name')}",
                        "node": outcome.node,
                        "choice": outcome.choice.value,
                        "victims": list(outcome.victims),
                        "tolerating": list(outcome.exempt),
                        "detail": outcome.detail,
                    },
                )
        return decision.result.to_wire()

    def _unready(self, needs: Needs) -> tuple[int, dict[str, Any]] | None:
        problems = self.problems(needs)
        return (503, {"error": f"caches are not ready: {'; '.join(problems)}"}) if problems else None

    def _unexpected(self, endpoint_name: str, error: Exception) -> tuple[int, dict[str, Any]]:
        """An error no rule foresaw, from input that passed every check: a 400 that says so (never a 500,
        which reads as an outage), logged with its traceback and counted, so that it gets fixed."""
        self._child(self.metrics.unexpected_errors, endpoint_name).inc()
        logger.error("request could not be judged", exc_info=error, extra={"endpoint": endpoint_name})
        return 400, {
            "error": f"the request could not be judged ({type(error).__name__}: {str(error)[:200]}); "
            "this is a bug of preemption-toleration, please report it"
        }

    @staticmethod
    def _bad_request(endpoint: Endpoint, problem: str) -> tuple[int, dict[str, Any]]:
        logger.warning("bad admission request", extra={"endpoint": endpoint.path, "problem": problem})
        return 400, {"error": problem}

    def answer(self, endpoint: Endpoint, body: bytes) -> tuple[int, dict[str, Any]]:
        """An AdmissionReview body in, (HTTP status, answer) out: 200 with the review's response, 400 with
        the reason for input that is not a review this endpoint judges, 503 before the caches sync. A judged
        review's response is the AdmissionResponse model (the fast path's, a dict): `_review_answer` writes
        either."""
        self._hold = 0.0
        try:
            payload = _decode(body, read=endpoint.read)
            if endpoint.name == GUARD and self._not_a_preemption(payload):
                self.metrics.decisions.inc(endpoint.name, "allowed")
                return 200, _allowed(payload)
            review = _review(payload)
            admission = review.request
            if (admission.resource.group, admission.resource.resource) != (endpoint.group, endpoint.resource):
                got = f"{admission.resource.group or 'core'}/{admission.resource.resource}"
                raise BadRequest(f"{endpoint.path} judges {endpoint.group}/{endpoint.resource}, not {got}")
            if admission.operation in ("CREATE", "UPDATE") and not isinstance(admission.object, dict):
                raise BadRequest(f"a {admission.operation} request needs request.object")
            checked = isinstance(payload, CheckedReview)  # its pods' fields were checked as it was read
            problem = endpoint.check(admission) if endpoint.check is not None and not checked else None
            if problem is not None:
                raise BadRequest(problem)
        except BadRequest as problem:
            return self._bad_request(endpoint, str(problem))
        if unready := self._unready(endpoint.needs):
            return unready
        try:
            decision = endpoint.decide(admission, self.snapshot())
        except Exception as error:  # noqa: BLE001 - a bug must not become a 500; counted and logged
            return self._unexpected(endpoint.name, error)
        self._count(endpoint, decision)
        if endpoint.name != GUARD:  # the guard logs its own judgements (`_guard`)
            self._log(endpoint, admission, decision)
        return 200, review_response(review.api_version, decision)

    def _not_a_preemption(self, payload: Mapping[str, Any]) -> bool:
        """The guard's fast path: a well-formed review of a pod request that cannot be a preemption is
        allowed from the raw JSON, before any model is built (and whether or not the caches are synced)."""
        assert self.guard is not None
        request = payload.get("request")
        if (
            payload.get("apiVersion") not in ADMISSION_VERSIONS
            or payload.get("kind") != "AdmissionReview"
            or not is_mapping(request)
        ):
            return False
        uid, resource = request.get("uid"), request.get("resource")
        if not isinstance(uid, str) or not uid or not is_mapping(resource):
            return False
        if (resource.get("group") or "", resource.get("resource")) != ("", "pods"):
            return False
        return not may_be_preemption(request, self.guard.config.preemptor_identities)

    def _guard(self, request: AdmissionRequest, _: Snapshot) -> AdmissionResponse:
        assert self.guard is not None
        snapshot = self.guard.snapshot()
        verdict = judge(request, snapshot, self.guard.config)
        if verdict.source is not None:
            self.metrics.preemptor_sources.inc(verdict.source.value)
        refusal = verdict.refusal
        if refusal is None and request.sub_resource == "status":
            self._remember_marking_preemptor(request, verdict, snapshot)
        if refusal is None:
            if verdict.response.warnings:
                logger.info("preemption allowed with warnings", extra=self._guard_fields(request, verdict))
            return verdict.response
        mode = "audit" if refusal.audit else "enforce"
        self.metrics.guard_refusals.inc(refusal.kind, refusal.reason, mode)
        if refusal.preemptor:
            self.metrics.refused(refusal.preemptor)
        # A scheduler retrying a protected victim asks many times a second: counted each time, reported
        # (log line, Event) the first time and then once per interval with the repeats it stands for.
        metadata = as_mapping(refusal.victim.get("metadata"))
        key = (metadata.get("uid"), refusal.kind, refusal.preemptor, refusal.reason, refusal.audit, refusal.dry_run)
        count = self.refusal_reports.report(key, time.monotonic())
        if count is not None:
            logger.info(
                "preemption refused" if not refusal.audit else "preemption would be refused",
                extra={
                    **self._guard_fields(request, verdict),
                    "preemptorPriority": refusal.preemptor_priority,
                    "code": refusal.code,
                    "refusals": count,
                },
            )
            self.guard.on_refusal(refusal, count)
        if refusal.kind in ("delete", "status") and not refusal.audit and not refusal.dry_run:
            self._hold = self.retry_pacer.hold(key, time.monotonic())
        until = refusal.protection.until
        if (
            refusal.protection.kind is ProtectionKind.UNTIL
            and until is not None
            and not refusal.dry_run
            and not refusal.audit
        ):
            node = as_mapping(refusal.victim.get("spec")).get("nodeName")
            if isinstance(node, str):
                self.guard.held_back(refusal.preemptor_pod, node, until)
        return verdict.response

    @staticmethod
    def _remember_marking_preemptor(request: AdmissionRequest, verdict: Verdict, snapshot: GuardSnapshot) -> None:
        """The scheduler marks a victim (`DisruptionTarget`), then deletes it: the DELETE is judged against
        the preemptor the allowed mark was judged against, not guessed again, so a guess that changes in
        between (another pod now pending) cannot refuse the DELETE and leave the pod marked but running."""
        victim_uid = as_mapping(as_mapping(request.old_object).get("metadata")).get("uid")
        if verdict.preemptor is None or snapshot.preemptors is None or not isinstance(victim_uid, str):
            return
        if verdict.source in (PreemptorSource.INFERRED, PreemptorSource.RECORDED):
            snapshot.preemptors.remember(verdict.preemptor, [victim_uid], datetime.now(UTC))

    @staticmethod
    def _guard_fields(request: AdmissionRequest, verdict: Verdict) -> dict[str, Any]:
        refusal, response = verdict.refusal, verdict.response
        return {
            "kind": refusal.kind if refusal is not None else request.operation.lower(),
            "victim": f"{request.namespace}/{request.name}",
            "preemptor": refusal.preemptor if refusal is not None else None,
            "preemptorSource": verdict.source.value if verdict.source else None,
            "denial": refusal.message if refusal is not None else None,
            "warnings": response.warnings,
            "dryRun": bool(request.dry_run),
        }

    def _count(self, endpoint: Endpoint, decision: AdmissionResponse) -> None:
        count = self.metrics.decisions.inc
        count(endpoint.name, "allowed" if decision.allowed else "denied")
        if decision.patch:
            count(endpoint.name, "mutated")
        if decision.warnings:
            count(endpoint.name, "warned")

    def _child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, looked up once: the per-request cost of metrics stays a few additions."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    @staticmethod
    def _log(endpoint: Endpoint, admission: AdmissionRequest, decision: AdmissionResponse) -> None:
        """Refusals and warnings at INFO; a plain mutation (a new class given its policy's annotations, the
        webhook's routine work, counted in the metrics) at DEBUG."""
        level = logging.INFO
        if decision.allowed and not decision.warnings:
            if not decision.patch or not logger.isEnabledFor(logging.DEBUG):
                return
            level = logging.DEBUG
        logger.log(
            level,
            "admission decision",
            extra={
                "endpoint": endpoint.path,
                "operation": admission.operation,
                "object": admission.name,
                "user": admission.user_info.username,
                "allowed": decision.allowed,
                "denial": decision.status.message if decision.status else None,
                "warnings": decision.warnings,
                "dryRun": bool(admission.dry_run),
            },
        )

    async def _healthz(self, _: web.BaseRequest) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, _: web.BaseRequest) -> web.Response:
        if self.draining:
            return web.Response(text="shutting down", status=503)
        problems = self.problems("all")
        if not problems:
            return web.Response(text="ok")
        return web.Response(text="caches are not ready: " + "; ".join(problems), status=503)

    async def _metrics(self, _: web.BaseRequest) -> web.Response:
        return web.Response(body=generate_latest(self.metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})
