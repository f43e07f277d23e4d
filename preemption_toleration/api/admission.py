"""AdmissionReview (admission.k8s.io/v1 and v1beta1): the requests we accept and the responses we send."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic_core import to_json

ADMISSION_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
# The API server passes warnings to the user; longer ones may be cut (so we split them).
MAX_WARNING_LENGTH = 256


class _Wire(BaseModel):
    """Fields we do not use are ignored (the API server adds new ones over time); types are strict."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class GroupVersionKind(_Wire):
    group: str = ""
    version: str
    kind: str


class GroupVersionResource(_Wire):
    group: str = ""
    version: str
    resource: str


class UserInfo(_Wire):
    username: str = ""
    uid: str = ""
    groups: list[str] = Field(default_factory=list)


class AdmissionRequest(_Wire):
    uid: str = Field(min_length=1)
    kind: GroupVersionKind
    resource: GroupVersionResource
    sub_resource: str | None = None
    name: str = ""
    namespace: str | None = None
    operation: Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
    user_info: UserInfo = Field(default_factory=UserInfo)
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool | None = None
    # `options` (CreateOptions, DeleteOptions...) is left out: no decision reads it.


class AdmissionReview(_Wire):
    api_version: Literal["admission.k8s.io/v1", "admission.k8s.io/v1beta1"]
    kind: Literal["AdmissionReview"]
    request: AdmissionRequest


class AdmissionStatus(_Wire):
    code: int
    message: str
    reason: str | None = None


class AdmissionResponse(_Wire):
    uid: str
    allowed: bool
    status: AdmissionStatus | None = None
    warnings: list[str] | None = None
    patch_type: Literal["JSONPatch"] | None = None
    patch: str | None = None


def _fit(warnings: Sequence[str]) -> list[str] | None:
    """Warnings the API server passes on whole: a longer one becomes several (kubectl prints each on a
    `Warning:` line), cut between words and marked with "…", so that its end (the fix) is never lost."""
    if not warnings:
        return None
    fitted: list[str] = []
    for warning in warnings:
        fitted += split_text(warning, MAX_WARNING_LENGTH)
    return fitted


def split_text(text: str, limit: int) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut between words where it can, each piece but
    the last ending in " …" and each but the first starting with "… "."""
    if limit < 8:
        raise ValueError(f"a limit of {limit} leaves no room for text beside the markers")
    text = text.strip()
    pieces: list[str] = []
    rest = text
    while len(rest) + (2 if pieces else 0) > limit:
        lead = "… " if pieces else ""
        room = limit - len(lead) - 2  # keeps space for the trailing " …"
        cut = rest.rfind(" ", 0, room + 1)
        cut = cut if cut > 0 else room  # one long word: cut inside it
        pieces.append(f"{lead}{rest[:cut].rstrip()} …")
        rest = rest[cut:].lstrip()
    pieces.append(f"… {rest}" if pieces else rest)
    return pieces


_RESPONSE = AdmissionResponse.__pydantic_validator__.validate_python  # the model's __init__ without its overhead


def allow(uid: str, warnings: Sequence[str] = (), patch: Sequence[dict[str, Any]] = ()) -> AdmissionResponse:
    if not warnings and not patch:
        response: AdmissionResponse = _RESPONSE({"uid": uid, "allowed": True})  # most answers: the fewest fields
        return response
    encoded = base64.b64encode(to_json(list(patch))).decode() if patch else None
    return AdmissionResponse(
        uid=uid,
        allowed=True,
        warnings=_fit(warnings),
        patch_type="JSONPatch" if patch else None,
        patch=encoded,
    )


def deny(
    uid: str, code: int, message: str, reason: str | None = None, warnings: Sequence[str] = ()
) -> AdmissionResponse:
    return AdmissionResponse(
        uid=uid,
        allowed=False,
        status=AdmissionStatus(code=code, message=message, reason=reason),
        warnings=_fit(warnings),
    )


def review_response(api_version: str, response: AdmissionResponse) -> dict[str, Any]:
    """The body to send back: an AdmissionReview of the request's apiVersion. The response stays a model:
    serialize the whole with `to_json(body, by_alias=True, exclude_none=True)`."""
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}
