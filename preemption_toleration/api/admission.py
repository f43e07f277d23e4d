"""AdmissionReview (admission.k8s.io/v1 and v1beta1): the requests we accept and the responses we send."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
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

    @property
    def uid(self) -> str:
        """The request's, which the answer repeats."""
        return self.request.uid


# The answer is built here, never read: plain records, no validation. Written as JSON through `to_wire`, a
# dict of plain values, it costs the server a few µs less per request than a pydantic model serialized in
# the same pass as the review around it (measured side by side over HTTP). Not frozen: a frozen record's
# __init__ sets each field through object.__setattr__, 0.5 µs more on every answer the server writes.


@dataclass(slots=True)
class AdmissionStatus:
    code: int
    message: str
    reason: str | None = None


@dataclass(slots=True)
class AdmissionResponse:
    uid: str
    allowed: bool
    status: AdmissionStatus | None = None
    warnings: list[str] | None = None
    patch_type: Literal["JSONPatch"] | None = None
    patch: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """As the API server reads it: camelCase, unset fields left out."""
        wire: dict[str, Any] = {"uid": self.uid, "allowed": self.allowed}
        if (status := self.status) is not None:
            wire["status"] = {"code": status.code, "message": status.message}
            if status.reason is not None:
                wire["status"]["reason"] = status.reason
        if self.warnings is not None:
            wire["warnings"] = self.warnings
        if self.patch is not None:
            wire["patchType"], wire["patch"] = self.patch_type, self.patch
        return wire


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


@dataclass(slots=True)
class AdmissionVerdict:
    """A handler's answer to an admission request, plain: allowed or not, with the status of a refusal, the
    warnings and the JSON patch as the decision wrote them. It knows neither the request's uid nor the
    wire's encoding: `answer_of` fills both in, in one place (as controller-runtime's `admission.Response`,
    built by `Allowed`/`Denied`/`Patched`, gets them from the webhook's `Handle`). Never mutated."""

    allowed: bool
    status: AdmissionStatus | None = None
    warnings: tuple[str, ...] = ()
    patch: tuple[dict[str, Any], ...] = ()


ALLOWED = AdmissionVerdict(True)  # most answers: built once


def allowed(warnings: Sequence[str] = (), patch: Sequence[dict[str, Any]] = ()) -> AdmissionVerdict:
    if not warnings and not patch:
        return ALLOWED
    return AdmissionVerdict(True, None, tuple(warnings), tuple(patch))


def denied(code: int, message: str, reason: str | None = None, warnings: Sequence[str] = ()) -> AdmissionVerdict:
    return AdmissionVerdict(False, AdmissionStatus(code, message, reason), tuple(warnings))


def answer_of(uid: str, verdict: AdmissionVerdict) -> AdmissionResponse:
    """The AdmissionResponse of a verdict for the request `uid`: its warnings cut to what the API server
    passes on whole, its patch encoded."""
    if verdict is ALLOWED:
        return AdmissionResponse(uid, True)
    patch = verdict.patch
    return AdmissionResponse(
        uid=uid,
        allowed=verdict.allowed,
        status=verdict.status,
        warnings=_fit(verdict.warnings),
        patch_type="JSONPatch" if patch else None,
        patch=base64.b64encode(to_json(list(patch))).decode() if patch else None,
    )


def review_response(api_version: str, uid: str, verdict: AdmissionVerdict) -> dict[str, Any]:
    """The body to send back for the request `uid`: an AdmissionReview of the request's apiVersion, as JSON
    values. The common answer, allowed as it is, is built without its AdmissionResponse (the hot path)."""
    if verdict is ALLOWED:
        return {"apiVersion": api_version, "kind": "AdmissionReview", "response": {"uid": uid, "allowed": True}}
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": answer_of(uid, verdict).to_wire()}
