"""What every endpoint's request handling shares: the admission endpoint's record and its handler's reply,
reading a body and its JSON, JSON answers, and the 400 and 503 answers any endpoint may give."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from aiohttp import web
from pydantic import ValidationError
from pydantic_core import from_json, to_json

from preemption_toleration.admission.decisions import Needs
from preemption_toleration.api.admission import AdmissionRequest, AdmissionResponse, AdmissionReview
from preemption_toleration.api.base import first_error
from preemption_toleration.records.pod import PodRecord
from preemption_toleration.webhooks.metrics import WebhookMetrics

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


@dataclass(frozen=True, slots=True)
class Reply:
    """A handler's verdict on one review: the response, and how long the server holds it before sending it."""

    response: AdmissionResponse
    hold: Hold = NO_HOLD


# A review's handler (controller-runtime's `Handler.Handle(ctx, Request) Response`): a decoded, checked
# request in, a verdict out. It reads the caches it needs itself; the HTTP wrapper decodes and encodes.
RequestT = TypeVar("RequestT")
ModelT = TypeVar("ModelT")
# (preemptor, node, until): a time-limited toleration held the preemptor back on that node
HeldBack = Callable[[PodRecord, str, datetime], None]


def not_kept(preemptor: PodRecord, node: str, until: datetime) -> None:
    pass


class Decoded(Protocol):
    """A request an endpoint's reader decoded and checked in the same pass (the guard's record): what the
    server reads of it. The answer repeats the review's apiVersion."""

    api_version: str
    uid: str
    group: str
    resource: str
    operation: str

    @property
    def object(self) -> object: ...


@dataclass(frozen=True)
class Endpoint(Generic[RequestT]):
    """An AdmissionReview endpoint: the resource it judges, its handler, and how its body is read."""

    path: str
    name: str
    group: str
    resource: str
    handle: Callable[[RequestT], Reply]
    request: Callable[[AdmissionReview], RequestT]  # the handler's request, of a review read whole and checked
    check: Callable[[AdmissionRequest], str | None] | None = None  # what makes a request unreadable to it
    # The body's JSON (ValueError when it is not JSON), or, for a review its one pass decoded and checked
    # every field of, the handler's request itself, of the type `decoded`.
    read: Callable[[bytes], Any] = from_json
    decoded: type[Decoded] | None = None
    needs: Needs = "admission"  # the caches its decisions read
    # a review it allows as read (the raw JSON or the decoded request), unjudged (the guard's fast path)
    allows: Callable[[Any], bool] | None = None


def allowed(api_version: str, uid: str) -> dict[str, Any]:
    """An "allowed" answer to a review an endpoint's fast path (`Endpoint.allows`) let through."""
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": {"uid": uid, "allowed": True}}


def target_problem(endpoint: Endpoint[Any], group: str, resource: str, operation: str, has_object: bool) -> str | None:
    """What makes a checked review one the endpoint does not judge: another resource, or a CREATE or UPDATE
    without its object."""
    if (group, resource) != (endpoint.group, endpoint.resource):
        return f"{endpoint.path} judges {endpoint.group}/{endpoint.resource}, not {group or 'core'}/{resource}"
    if operation in ("CREATE", "UPDATE") and not has_object:
        return f"a {operation} request needs request.object"
    return None


class BadRequest(Exception):
    pass


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


def decode(
    body: bytes,
    expected: str = "an AdmissionReview",
    read: Callable[[bytes], Any] = from_json,
    decoded: type[Decoded] | None = None,
) -> Any:
    """The JSON object of `body`, as `read` reads it, or the request of type `decoded` it read."""
    try:
        # pydantic-core's parser (`read` is one of its readers): about twice as fast as the json module's,
        # and it refuses nesting deeper than 200 levels with an error instead of exhausting the stack.
        payload = read(body)
    except ValueError as error:
        raise BadRequest(f"request body is not JSON: {error}") from error
    if decoded is not None and isinstance(payload, decoded):
        return payload
    if not isinstance(payload, dict):
        raise BadRequest(f"request body is a JSON {type(payload).__name__}, not {expected} object")
    return payload


def read_model(body: bytes, read: Callable[[bytes], ModelT], expected: str) -> ModelT:
    """`body` read into its model by `read` (a model's `model_validate_json`: pydantic-core parses and
    validates in one pass), or BadRequest saying what is wrong: not JSON, not an object, or a field's problem."""
    try:
        return read(body)
    except ValidationError as error:
        first = error.errors()[0]
        if first["type"] == "json_invalid":
            raise BadRequest(f"request body is not JSON: {first['msg'].removeprefix('Invalid JSON: ')}") from None
        if not first["loc"] and first["type"] == "model_type":
            found = type(first["input"]).__name__
            raise BadRequest(f"request body is a JSON {found}, not {expected} object") from None
        raise BadRequest(f"request body is not {expected}: {first_error(error)}") from None


def json_answer(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=to_json(body), status=status, content_type="application/json")


def unready(problems: list[str]) -> Answer | None:
    """A 503 while the caches a decision needs may not be decided from."""
    return (503, {"error": f"caches are not ready: {'; '.join(problems)}"}) if problems else None


def unexpected(metrics: WebhookMetrics, endpoint_name: str, error: Exception) -> Answer:
    """An error no rule foresaw, from input that passed every check: a 400 that says so (never a 500,
    which reads as an outage), logged with its traceback and counted, so that it gets fixed."""
    metrics.child(metrics.unexpected_errors, endpoint_name).inc()
    logger.error("request could not be judged", exc_info=error, extra={"endpoint": endpoint_name})
    return 400, {
        "error": f"the request could not be judged ({type(error).__name__}: {str(error)[:200]}); "
        "this is a bug of preemption-toleration, please report it"
    }
