"""The aiohttp adapter: the app, its routing, health, readiness and metrics, and the serving of every
endpoint alike (HTTP in, the endpoint's answer out): the admission endpoints, wired here, and the guard's
and the extender's, each its feature's (`guard.adapter`, `extender.adapter`).

Bad input (not JSON, not an AdmissionReview, the wrong kind, too large) gets a 400 with a clear message and
a log line; a request is answered from the caches only, never by calling the API server.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from aiohttp import HttpVersion11, hdrs, web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from preemption_toleration.admission.decisions import (
    AdmissionConfig,
    Needs,
    mutate_priority_class,
    validate_policy,
    validate_priority_class,
)
from preemption_toleration.api.admission import AdmissionRequest, AdmissionReview, AdmissionVerdict
from preemption_toleration.api.bodies import BadRequest
from preemption_toleration.api.paths import (
    MUTATE_PRIORITY_CLASSES_PATH,
    VALIDATE_POLICIES_PATH,
    VALIDATE_PRIORITY_CLASSES_PATH,
)
from preemption_toleration.api.policy import GROUP, PLURAL
from preemption_toleration.api.resources import PRIORITY_CLASSES
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.serving.handling import (
    CLIENT_CLOSED_REQUEST,
    DEFAULT_MAX_BODY_BYTES,
    NO_HOLD,
    Answer,
    ClientGone,
    Endpoint,
    Hold,
    Reply,
    Unready,
    admission_answer,
    json_answer,
    read_body,
    ready,
    review_reader,
    unexpected,
)
from preemption_toleration.serving.webhook_metrics import WebhookMetrics
from preemption_toleration.telemetry.declared import AdmissionDecision
from preemption_toleration.telemetry.hot import Buckets

logger = logging.getLogger("preemption_toleration.webhooks")

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
Replied = tuple[int, Any, Hold]  # (HTTP status, JSON body, how long to hold it)
# The decision label's values, looked up once (StrEnum members: counted as their values) for the request path
_ALLOWED, _DENIED = AdmissionDecision.ALLOWED, AdmissionDecision.DENIED
_MUTATED, _WARNED = AdmissionDecision.MUTATED, AdmissionDecision.WARNED
AnyResponse = TypeVar("AnyResponse", bound=web.StreamResponse)


def admission_endpoints(
    config: AdmissionConfig, view: Callable[[], ClusterView], problems: Callable[[Needs], list[str]]
) -> list[Endpoint[AdmissionReview]]:
    """The PriorityClass and policy endpoints, each a handler over the caches' view, ready when the
    admission caches are (`problems("admission")`)."""
    decisions: list[tuple[str, str, tuple[str, str], Callable[[AdmissionRequest], AdmissionVerdict]]] = [
        (
            VALIDATE_PRIORITY_CLASSES_PATH,
            "validate-priorityclasses",
            PRIORITY_CLASSES,
            lambda request: validate_priority_class(request, view(), config),
        ),
        (
            MUTATE_PRIORITY_CLASSES_PATH,
            "mutate-priorityclasses",
            PRIORITY_CLASSES,
            lambda request: mutate_priority_class(request, view()),
        ),
        (
            VALIDATE_POLICIES_PATH,
            "validate-policies",
            (GROUP, PLURAL),
            lambda request: validate_policy(request, view()),
        ),
    ]
    return [
        Endpoint(path, name, review_reader(path, judged), _admission_handler(path, decide, problems), admission_answer)
        for path, name, judged, decide in decisions
    ]


def _admission_handler(
    path: str, decide: Callable[[AdmissionRequest], AdmissionVerdict], problems: Callable[[Needs], list[str]]
) -> Callable[[AdmissionReview], Reply]:
    """An admission endpoint's handler: its decision, once the admission caches are ready, logged."""

    def handle(review: AdmissionReview) -> Reply:
        ready(problems("admission"))
        request = review.request
        decision = decide(request)
        _log(path, request, decision)
        return Reply(decision)

    return handle


def _log(path: str, admission: AdmissionRequest, decision: AdmissionVerdict) -> None:
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
            "endpoint": path,
            "operation": admission.operation,
            "object": admission.name,
            "user": admission.user_info.username,
            "allowed": decision.allowed,
            "denial": decision.status.message if decision.status else None,
            "warnings": list(decision.warnings) or None,
            "dryRun": bool(admission.dry_run),
        },
    )


class WebhookApp:
    """Builds the aiohttp application around the endpoints it serves and a readiness check."""

    def __init__(
        self,
        routes: Sequence[Endpoint[Any]],
        problems: Callable[[Needs], list[str]],
        metrics: WebhookMetrics | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        metrics_apart: bool = False,
    ) -> None:
        """`routes`: every endpoint served (`admission_endpoints`, the guard's, the scheduler extender's).
        `metrics_apart`: /metrics is served by `metrics_server()` on a port of its own (which a NetworkPolicy
        can close), not beside the webhooks."""
        self.problems = problems  # why the caches a decision needs may not be decided from
        self.metrics = metrics or WebhookMetrics()
        self.max_body_bytes = max_body_bytes
        # Shutting down: not ready, and every answer says `Connection: close`, so that a kept-alive
        # connection is ended by the client after an answer, never by us while a request may be on its way
        # (which the API server would report as a failed webhook call).
        self.draining = False
        self.routes: tuple[Endpoint[Any], ...] = tuple(routes)
        # path -> method -> handler; each handler does its own draining check (no middleware)
        self._table: dict[str, dict[str, Handler]] = {
            endpoint.path: {hdrs.METH_POST: self._handler(endpoint)} for endpoint in self.routes
        }
        pages = [("/healthz", self._healthz), ("/readyz", self._readyz)]
        if not metrics_apart:
            pages.append(("/metrics", self._metrics))
        for path, page in pages:
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

    def metrics_server(self) -> web.Server:
        """A server of GET and HEAD /metrics alone (plain HTTP, for `--metrics-address`)."""

        async def serve(request: web.BaseRequest) -> web.StreamResponse:
            if request.path != "/metrics":
                return web.Response(status=404, text="404: Not Found")
            if request.method not in (hdrs.METH_GET, hdrs.METH_HEAD):
                return web.Response(status=405, text="405: Method Not Allowed", headers={hdrs.ALLOW: "GET,HEAD"})
            return await self._metrics(request)

        return web.Server(serve, access_log=None)

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

    def _handler(self, endpoint: Endpoint[Any]) -> Handler:
        """One coroutine per request, reading, judging and counting (each layer more costs about 1 µs)."""
        name, latency = endpoint.name, self.metrics.latency.series(endpoint.name)

        async def handle(request: web.BaseRequest) -> web.Response:
            started = time.perf_counter()
            refused = endpoint.admits(request) if endpoint.admits is not None else None
            if refused is not None:
                return self._counted(name, latency, started, json_answer(refused[1], refused[0]))
            try:
                body = await read_body(request, self.max_body_bytes)
            except ClientGone:
                return self._counted(name, latency, started, web.Response(status=CLIENT_CLOSED_REQUEST))
            except BadRequest as problem:
                status, answer = self._bad_request(endpoint, str(problem))
            else:
                replied = self.reply(endpoint, body)
                status, answer, hold = replied if isinstance(replied, tuple) else await replied
                if hold.seconds > 0 and not self.draining:
                    started += await hold.wait()  # pacing, not work: the request's latency metric leaves it out
            return self._counted(name, latency, started, json_answer(answer, status))

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

    def endpoint(self, path: str) -> Endpoint[Any]:
        """The endpoint served at `path`."""
        return next(endpoint for endpoint in self.routes if endpoint.path == path)

    @staticmethod
    def _bad_request(endpoint: Endpoint[Any], problem: str) -> Answer:
        logger.warning(f"bad {endpoint.noun} request", extra={"endpoint": endpoint.path, "problem": problem})
        return 400, {"error": problem}

    def answer(self, endpoint: Endpoint[Any], body: bytes) -> Answer:
        """A body in, (HTTP status, answer) out: `reply` without the hold, for a request answered without
        asking the cluster."""
        replied = self.reply(endpoint, body)
        if not isinstance(replied, tuple):
            replied.close()
            raise TypeError("this answer asks the cluster first: await reply()")
        status, answer, _ = replied
        return status, answer

    def reply(self, endpoint: Endpoint[Any], body: bytes) -> Replied | Coroutine[Any, Any, Replied]:
        """A body in, (HTTP status, answer, seconds to hold it) out: 200 with the endpoint's answer, 400 with
        the reason for input that is not a request this endpoint judges, 503 while the caches its decision
        reads may not be decided from. The endpoint reads the body, once; its handler takes the request read
        and returns its plain verdict; the endpoint's `answer` makes it the body, here, once. A handler that must
        ask the cluster first (the guard settling a group's decision) makes it a coroutine to await."""
        try:
            request = endpoint.read(body)
        except BadRequest as problem:
            return (*self._bad_request(endpoint, str(problem)), NO_HOLD)
        try:
            verdict = endpoint.handle(request)
        except Exception as error:  # noqa: BLE001 - Unready, or a bug: never a 500
            return self._failed(endpoint, error)
        if isinstance(verdict, Reply):
            return self._replied(endpoint, request, verdict)
        return self._awaited(endpoint, request, verdict)

    async def _awaited(self, endpoint: Endpoint[Any], request: Any, pending: Awaitable[Reply]) -> Replied:
        try:
            verdict = await pending
        except Exception as error:  # noqa: BLE001 - Unready, or a bug: never a 500
            return self._failed(endpoint, error)
        return self._replied(endpoint, request, verdict)

    def _failed(self, endpoint: Endpoint[Any], error: Exception) -> Replied:
        """503 while the caches may not be decided from; a bug counted and logged (`unexpected`)."""
        if isinstance(error, Unready):
            return (*error.answer, NO_HOLD)
        return (*unexpected(self.metrics, endpoint.name, error), NO_HOLD)

    def _replied(self, endpoint: Endpoint[Any], request: Any, reply: Reply) -> Replied:
        verdict = reply.verdict
        if isinstance(verdict, AdmissionVerdict):
            self._count(endpoint, verdict)
        return 200, endpoint.answer(request, verdict), reply.hold

    def _count(self, endpoint: Endpoint[Any], decision: AdmissionVerdict) -> None:
        count = self.metrics.decisions.inc
        count(endpoint.name, _ALLOWED if decision.allowed else _DENIED)
        if decision.patch:
            count(endpoint.name, _MUTATED)
        if decision.warnings:
            count(endpoint.name, _WARNED)

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
