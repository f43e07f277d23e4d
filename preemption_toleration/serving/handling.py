"""What every endpoint's request handling shares: the admission endpoint's shape (read, then handle) and
its handler's reply, reading a body, JSON answers, and the 400 and 503 answers any endpoint may give."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from aiohttp import web
from pydantic_core import to_json

from preemption_toleration.api.admission import AdmissionReview, AdmissionVerdict, review_response
from preemption_toleration.api.bodies import BadRequest, read_model
from preemption_toleration.records.pod import PodRecord
from preemption_toleration.serving.webhook_metrics import WebhookMetrics

logger = logging.getLogger("preemption_toleration.webhooks")

DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024  # the API server's own request limit is 3 MiB

Answer = tuple[int, dict[str, Any]]  # (HTTP status, JSON body)


@dataclass(frozen=True, slots=True)
class Hold:
    """How long an answer waits before it goes out: `seconds` (the guard's refusal of a scheduler's
    immediate retry, `RetryPacer`; 0: at once), or until `release` is set (steering made the preemption
    meanwhile: the scheduler's retry is wanted now)."""

    seconds: float = 0.0
    release: asyncio.Event | None = None

    async def wait(self) -> float:
        """Waits it out; returns the seconds waited."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        if self.release is None:
            await asyncio.sleep(self.seconds)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.release.wait(), self.seconds)
        return loop.time() - started


NO_HOLD = Hold()


class Reply(NamedTuple):  # built on every request: a named tuple takes 0.1 µs less than a frozen dataclass
    """A handler's verdict on one request (an `AdmissionVerdict`, the extender's result), plain, and how long
    the server holds its answer before sending it. The endpoint's `answer` turns the verdict into the body."""

    verdict: Any
    hold: Hold = NO_HOLD


# (preemptor, node, until): a time-limited toleration held the preemptor back on that node
HeldBack = Callable[[PodRecord, str, datetime], None]


def not_kept(preemptor: PodRecord, node: str, until: datetime) -> None:
    pass


class Reviewed(Protocol):
    """A review as an endpoint read it: its answer repeats the review's apiVersion and its request's uid."""

    @property
    def api_version(self) -> str: ...

    @property
    def uid(self) -> str: ...


def admission_answer(review: Reviewed, verdict: AdmissionVerdict) -> dict[str, Any]:
    """The answer of an admission endpoint, in one place: the verdict as the AdmissionResponse of the
    review's request, in an AdmissionReview of the review's apiVersion."""
    return review_response(review.api_version, review.uid, verdict)


RequestT = TypeVar("RequestT")


@dataclass(frozen=True)
class Endpoint(Generic[RequestT]):
    """An endpoint, as controller-runtime's `webhook/admission` has one: its body read once, strictly, into
    the request its handler takes, the handler's plain verdict on it, and the answer of that verdict. The
    server serves every endpoint alike: it reads the body, asks the endpoint, holds, encodes and counts the
    answer. An AdmissionReview endpoint's answer is `admission_answer`; the scheduler extender's is its
    result."""

    path: str
    name: str
    # the body read into the handler's request; BadRequest (a 400) says what makes it no request this
    # endpoint judges
    read: Callable[[bytes], RequestT]
    # the verdict on a request, from the caches it reads itself (awaitable when it must ask the cluster
    # first); Unready (a 503) while they may not be decided from
    handle: Callable[[RequestT], Reply | Awaitable[Reply]]
    # the body of the answer to the request, from the handler's verdict (`admission_answer` for a review)
    answer: Callable[[RequestT, Any], Any]
    # the caller's standing, judged before its body is read: None, or the answer that refuses it
    admits: Callable[[web.BaseRequest], Answer | None] | None = None
    noun: str = "admission"  # in the log line of a bad request: "bad admission request"


def review_reader(path: str, judged: tuple[str, str]) -> Callable[[bytes], AdmissionReview]:
    """The read of an endpoint that judges the (group, resource) `judged`: the whole AdmissionReview model,
    then `target_problem`."""

    def read(body: bytes) -> AdmissionReview:
        review = read_model(body, _REVIEW, "an AdmissionReview")
        request = review.request
        found = (request.resource.group, request.resource.resource)
        if problem := target_problem(path, judged, found, request.operation, request.object is not None):
            raise BadRequest(problem)
        return review

    return read


_REVIEW = AdmissionReview.model_validate_json


def target_problem(
    path: str, judged: tuple[str, str], found: tuple[str, str], operation: str, has_object: bool
) -> str | None:
    """What makes a well-formed review one the endpoint at `path` does not judge: another (group, resource)
    than `judged`, or a CREATE or UPDATE without its object."""
    if found != judged:
        return f"{path} judges {judged[0] or 'core'}/{judged[1]}, not {found[0] or 'core'}/{found[1]}"
    if operation in ("CREATE", "UPDATE") and not has_object:
        return f"a {operation} request needs request.object"
    return None


class Unready(Exception):
    """The caches a decision needs may not be decided from yet: a 503 that names why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))

    @property
    def answer(self) -> Answer:
        return 503, {"error": f"caches are not ready: {self}"}


def ready(problems: list[str]) -> None:
    """Raises Unready when there are `problems` (a `problems(needs)` of the caches)."""
    if problems:
        raise Unready(problems)


class ClientGone(Exception):
    """The client hung up before its whole body arrived: nobody is left to answer."""


CLIENT_CLOSED_REQUEST = 499  # the status counted for it (nginx's), never sent


async def read_body(request: web.BaseRequest, max_bytes: int) -> bytes:
    if request.content_length is not None and request.content_length > max_bytes:
        raise BadRequest(f"request body of {request.content_length} bytes exceeds the limit of {max_bytes} bytes")
    try:
        return await request.read()  # the whole body, however it arrives; the app's limit stops a huge one
    except web.HTTPRequestEntityTooLarge as error:
        raise BadRequest(f"request body exceeds the limit of {max_bytes} bytes") from error
    except ConnectionResetError as error:
        # the client's doing (an API server that gave up waiting, say), not ours: one quiet line
        logger.info("client hung up in the middle of its request", extra={"path": request.path, "problem": str(error)})
        raise ClientGone() from error


def json_answer(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=to_json(body), status=status, content_type="application/json")


def unexpected(metrics: WebhookMetrics, endpoint_name: str, error: Exception) -> Answer:
    """An error no rule foresaw, from input that passed every check: a 400 that says so (never a 500,
    which reads as an outage), logged with its traceback and counted, so that it gets fixed."""
    metrics.child(metrics.unexpected_errors, endpoint_name).inc()
    logger.error("request could not be judged", exc_info=error, extra={"endpoint": endpoint_name})
    return 400, {
        "error": f"the request could not be judged ({type(error).__name__}: {str(error)[:200]}); "
        "this is a bug of preemption-toleration, please report it"
    }
