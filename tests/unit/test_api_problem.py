"""What a failed API call says in a policy's status and in the logs (kube/client.py `api_problem`): the
status, its reason phrase and the message of the API server's Status, as kubectl prints it, the same whether
the call read the client's model or the answer's bytes (`raise_for_status`). One row per rule."""

from __future__ import annotations

import json

import aiohttp
import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.kube.client import api_problem, raise_for_status

REFUSED = json.dumps(
    {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": 'priorityclasses.scheduling.k8s.io "low" is forbidden: refused by a policy',
        "reason": "Forbidden",
        "code": 403,
    }
)


def answered(status: int, reason: str | None, body: str | bytes | None) -> ApiException:
    error = ApiException(status=status, reason=reason)
    error.body = body
    return error


PROBLEMS = [
    # (rule, error, said)
    (
        "an error status with a Status: its message, after the status and reason phrase",
        answered(403, "Forbidden", REFUSED),
        '403 Forbidden: priorityclasses.scheduling.k8s.io "low" is forbidden: refused by a policy',
    ),
    ("the body as bytes reads alike", answered(403, "Forbidden", REFUSED.encode()), "403 Forbidden: priorityclasses"),
    ("no body: the status and reason phrase", ApiException(status=503, reason="Service Unavailable"), "503 Service"),
    ("a body that is no Status: its start", answered(502, "Bad Gateway", "upstream gone " * 50), "502 Bad Gateway: up"),
    ("a Status without a message: the status alone", answered(500, "Error", '{"kind": "Status"}'), "500 Error"),
    ("a network error: its type and text", aiohttp.ServerDisconnectedError(), "ServerDisconnectedError: Server"),
    (
        "a long message of many lines: one line, cut",
        answered(422, "Unprocessable Entity", json.dumps({"message": "first line\n  second " + "x" * 2000})),
        "422 Unprocessable Entity: first line second xxx",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("rule", "error", "said"), PROBLEMS, ids=[p[0] for p in PROBLEMS])
def test_what_a_failed_call_says(rule: str, error: BaseException, said: str) -> None:
    problem = api_problem(error)
    assert problem.startswith(said), (rule, problem)
    assert len(problem) <= 1040 and "\n" not in problem and "HTTP response" not in problem, rule


class Answer:
    """An aiohttp answer read with `_preload_content=False`."""

    def __init__(self, status: int, reason: str, body: str) -> None:
        self.status, self.reason, self.body = status, reason, body.encode()

    async def read(self) -> bytes:
        return self.body


async def test_an_answer_read_as_bytes_raises_what_the_clients_model_would() -> None:
    with pytest.raises(ApiException) as raised:
        await raise_for_status(Answer(403, "Forbidden", REFUSED))  # type: ignore[arg-type]
    assert (raised.value.status, raised.value.reason) == (403, "Forbidden")
    assert api_problem(raised.value) == (
        '403 Forbidden: priorityclasses.scheduling.k8s.io "low" is forbidden: refused by a policy'
    )
