"""Steering's Lease protocol: one action per preemptor per window, whichever replica acts.

A Lease named after the preemptor's UID, in the server's namespace, is created before anything is written
(a second replica's create fails with 409), its times taken at the write, and records the plan: the
preemptor, the node and each victim with its UID. It says "acting" until the action is done ("done"), until
an action that failed or stopped is given up ("released": any replica may claim it again at once), or until
a Lease left acting is found not borne out by the cluster ("refused"). A Lease left acting for
RESUME_AFTER_SECONDS was left by a replica that stopped in the middle: the next to start takes it over (a
write on the version it read, so that of two replicas starting together one does) and acts for its
preemptor as a fresh plan says (`steering.resumption`). Every Lease is deleted SWEEP_AFTER_SECONDS after
its last renewal.

The Lease's contents are what anyone who may write Leases there wrote: `left_plan` reads them into a
question (which preemptor?) that the cluster answers, never into an action.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.core.shapes import as_mapping
from preemption_toleration.kube.client import JSON_PATCH, answer_of, api_problem
from preemption_toleration.serving.periodic import every
from preemption_toleration.steering.plan import SteeringPlan
from preemption_toleration.steering.resumption import LeftPlan, PodRef

logger = logging.getLogger("preemption_toleration.steering")
LEASE_PREFIX = "ptol-steer-"
LABEL = "preemption-toleration.dev/steering"
PREFIX = "preemption-toleration.dev/"
STATE, PREEMPTOR, NODE, VICTIMS = (PREFIX + key for key in ("state", "preemptor", "node", "victims"))
ACTING, DONE, REFUSED, RELEASED = "acting", "done", "refused", "released"
# refused: a Lease left acting the cluster does not bear out; released: an action that failed or stopped
REQUEST_TIMEOUT = 10
RESUME_AFTER_SECONDS = 15  # a Lease left "acting" this long was left by a replica that stopped in the middle
SWEEP_EVERY_SECONDS = 300
SWEEP_AFTER_SECONDS = 600  # a Lease is kept this long (for `kubectl get lease`), then deleted
CLOCK_SKEW_SECONDS = 1  # the replicas' clocks agree within this; a Lease renewed later than that is forged


def _micro(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_body(plan: SteeringPlan, namespace: str, holder: str, window: int, now: datetime) -> dict[str, Any]:
    """The claim on one preemptor, with the plan it carries out."""
    preemptor = plan.preemptor
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": LEASE_PREFIX + preemptor.uid,
            "namespace": namespace,
            "labels": {LABEL: "true", "app.kubernetes.io/managed-by": "preemption-toleration"},
            "annotations": {
                STATE: ACTING,
                PREEMPTOR: f"{preemptor.namespace}/{preemptor.name}",
                NODE: plan.node,
                VICTIMS: ",".join(f"{pod.namespace}/{pod.name}={pod.uid}" for pod in plan.to_delete),
            },
        },
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": window,
            "acquireTime": _micro(now),
            "renewTime": _micro(now),
        },
    }


def victims_of(annotations: Mapping[str, str]) -> list[PodRef]:
    """The victims a Lease names, "namespace/name=uid" each; an item of another form is left out."""
    found = []
    for item in (annotations.get(VICTIMS) or "").split(","):
        key, _, uid = item.partition("=")
        namespace, _, name = key.partition("/")
        if namespace and name and uid:
            found.append((namespace, name, uid))
    return found


@dataclass(frozen=True)
class LeaseState:
    """What the protocol reads of a Lease, whatever client read it."""

    name: str
    annotations: Mapping[str, str]
    holder: str | None
    renewed: datetime | None
    duration_seconds: int
    version: str = ""  # its resourceVersion

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> LeaseState:
        """From a Lease as the API server sends it (anyone may have written it): a field of the wrong shape reads
        as absent, a Lease without a renewal as never renewed."""
        metadata, spec = as_mapping(raw.get("metadata")), as_mapping(raw.get("spec"))
        annotations = as_mapping(metadata.get("annotations"))
        duration = spec.get("leaseDurationSeconds")
        return LeaseState(
            str(metadata.get("name") or ""),
            {str(key): str(value) for key, value in annotations.items() if isinstance(value, str)},
            spec.get("holderIdentity") if isinstance(spec.get("holderIdentity"), str) else None,
            _parsed(spec.get("renewTime")),
            duration if isinstance(duration, int) and not isinstance(duration, bool) else 0,
            str(metadata.get("resourceVersion") or ""),
        )

    def held(self, now: datetime) -> bool:
        """Renewed within its duration: another replica (or this one before a restart) acted in the window."""
        return self.renewed is not None and self.renewed + timedelta(seconds=self.duration_seconds) > now

    def done_by(self, holder: str) -> bool:
        return self.holder == holder and self.annotations.get(STATE) == DONE

    def blocks(self, holder: str, now: datetime, retake: bool = False) -> bool:
        """Whether it keeps `holder` from acting for its preemptor now: held, and neither released (an action
        given up) nor, with `retake`, finished by `holder` itself."""
        if not self.held(now) or self.annotations.get(STATE) == RELEASED:
            return False
        return not (retake and self.done_by(holder))

    def swept(self, now: datetime) -> bool:
        """Done, refused, released, or acting but past any window (resuming would refuse it): kept a while,
        then gone."""
        return self.renewed is None or self.renewed + timedelta(seconds=SWEEP_AFTER_SECONDS) < now


def _parsed(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        found = datetime.fromisoformat(value)
    except ValueError:
        return None
    return found if found.tzinfo is not None else None


def _stands(lease: LeaseState, now: datetime) -> bool:
    """An action acting or done, until its Lease is swept: what it preempted and nominated stands."""
    return lease.annotations.get(STATE) in (ACTING, DONE) and not lease.swept(now)


def steered_nominations(leases: Iterable[LeaseState], now: datetime) -> dict[str, str]:
    """The nominations steering made, whichever replica made them: preemptor UID -> node, from the Leases
    acting or done, until they are swept (a preemptor waits for its node while its victims terminate, past
    the window). Never cleared as ones upstream would not have made (`steering.plan._nominations`); a Lease
    can ask that much, and no more: it deletes nothing."""
    found = {}
    for lease in leases:
        node = lease.annotations.get(NODE)
        if node and _stands(lease, now):
            found[lease.name.removeprefix(LEASE_PREFIX)] = node
    return found


def acted_lately(lease: LeaseState | None, window: float, now: datetime) -> bool:
    """Whether a replica (any) acted for the Lease's preemptor within the window: its Lease acting or done,
    renewed less than the window ago (this server's window at most, whatever the Lease claims) and not in the
    future. The scheduler then preempts for the next pod nominated to that node, and so does steering
    (`steering.plan.refusal_search`): a Lease can ask that a preemptor be passed over for a while, which
    deletes nothing."""
    if lease is None or lease.renewed is None or lease.annotations.get(STATE) not in (ACTING, DONE):
        return False
    if lease.renewed > now + timedelta(seconds=CLOCK_SKEW_SECONDS):
        return False
    return now - lease.renewed < timedelta(seconds=min(window, lease.duration_seconds))


def victims_elsewhere(leases: Iterable[LeaseState], preemptor_uid: str, now: datetime) -> set[str]:
    """The UIDs of the victims steering preempted for other preemptors, whichever replica did, by their
    Leases acting or done until they are swept: their termination does not make `preemptor_uid` wait
    (`steering.plan.search_plan`'s `preempted_for_others`)."""
    found: set[str] = set()
    for lease in leases:
        if lease.name != LEASE_PREFIX + preemptor_uid and _stands(lease, now):
            found.update(uid for *_, uid in victims_of(lease.annotations))
    return found


def left_plan(lease: LeaseState, window: int, now: datetime) -> LeftPlan | None:
    """The plan a Lease left acting by a replica that stopped in the middle claims; None for a Lease done,
    refused, without a renewal, or renewed too lately to be left (maybe a live replica in the middle of it).
    Its window is what it claims, never longer than this server's own (`window`)."""
    if lease.annotations.get(STATE) != ACTING or lease.renewed is None:
        return None
    if lease.renewed + timedelta(seconds=RESUME_AFTER_SECONDS) > now:
        return None
    namespace, _, name = (lease.annotations.get(PREEMPTOR) or "/").partition("/")
    uid = lease.name.removeprefix(LEASE_PREFIX)
    node = lease.annotations.get(NODE) or ""
    victims = tuple(victims_of(lease.annotations))
    window = min(lease.duration_seconds, window)
    return LeftPlan((namespace, name, uid), node, victims, lease.renewed, window, lease.version)


class SteeringLeases:
    """The Leases of one replica (`holder`) in `namespace`: claim, mark, list those left, sweep."""

    def __init__(self, api: ApiClient, namespace: str, holder: str, window: int) -> None:
        self.leases = client.CoordinationV1Api(api)
        self.namespace = namespace
        self.holder = holder
        self.window = window

    async def claim(self, plan: SteeringPlan, retake: bool = False, left_version: str | None = None) -> bool:
        """Whether this replica may act for the plan's preemptor now: its Lease created, or taken over from one
        past its window or released (or, with `retake`, one this replica itself finished); with
        `left_version`, the Lease left acting at that version, taken over unless anyone wrote it since. False
        when another replica holds it, or took it first. Its times are those of the write, not the plan's."""
        name = LEASE_PREFIX + plan.preemptor.uid
        if left_version is None:
            try:
                await answer_of(
                    self.leases.create_namespaced_lease(
                        self.namespace, self._body(plan), _request_timeout=REQUEST_TIMEOUT, _preload_content=False
                    )
                )
                return True
            except ApiException as error:
                if error.status != 409:
                    raise
            existing = LeaseState.from_json(
                json.loads(
                    await answer_of(
                        self.leases.read_namespaced_lease(
                            name, self.namespace, _request_timeout=REQUEST_TIMEOUT, _preload_content=False
                        )
                    )
                )
            )
            if existing.blocks(self.holder, datetime.now(UTC), retake):
                return False
            left_version = existing.version
        if not left_version:
            return False  # no version to write on: never an unconditional replace
        body = self._body(plan)  # dated now, after the reads
        body["metadata"]["resourceVersion"] = left_version
        try:
            await answer_of(
                self.leases.replace_namespaced_lease(
                    name, self.namespace, body, _request_timeout=REQUEST_TIMEOUT, _preload_content=False
                )
            )
        except ApiException as error:
            if error.status in (404, 409):
                return False  # another replica took it first (or swept it)
            raise
        return True

    def _body(self, plan: SteeringPlan) -> dict[str, Any]:
        return lease_body(plan, self.namespace, self.holder, self.window, datetime.now(UTC))

    async def mark(self, uid: str, state: str, version: str | None = None) -> bool:
        """The preemptor's Lease says `state` (DONE, RELEASED, REFUSED), on a condition: held by this replica
        (without `version`), or still at `version` (a Lease left by another replica, refused). False when it is
        gone, or no longer so (another replica took it over)."""
        condition = (
            {"op": "test", "path": "/metadata/resourceVersion", "value": version}
            if version is not None
            else {"op": "test", "path": "/spec/holderIdentity", "value": self.holder}
        )
        change = {"op": "add", "path": "/metadata/annotations/" + STATE.replace("/", "~1"), "value": state}
        try:
            await answer_of(
                self.leases.patch_namespaced_lease(
                    LEASE_PREFIX + uid,
                    self.namespace,
                    [condition, change],
                    _content_type=JSON_PATCH,
                    _request_timeout=REQUEST_TIMEOUT,
                    _preload_content=False,
                )
            )
        except ApiException as error:
            if error.status not in (404, 409, 422):  # gone, or a test failed
                raise
            return False
        return True

    async def list_leases(self, **options: Any) -> Any:
        """The steering Leases of the namespace, as an informer lists and watches them."""
        return await self.leases.list_namespaced_lease(self.namespace, label_selector=f"{LABEL}=true", **options)

    async def listed(self) -> list[LeaseState]:
        found = json.loads(await answer_of(self.list_leases(_request_timeout=REQUEST_TIMEOUT, _preload_content=False)))
        items = found.get("items") if isinstance(found, dict) else None
        return [LeaseState.from_json(item) for item in items or [] if isinstance(item, dict)]

    async def left(self, now: datetime) -> list[tuple[str, LeftPlan]]:
        """The plans of the Leases left acting, by Lease name."""
        return [
            (lease.name, plan)
            for lease in await self.listed()
            if (plan := left_plan(lease, self.window, now)) is not None
        ]

    async def sweep(self, now: datetime) -> None:
        """Deletes this namespace's steering Leases older than SWEEP_AFTER_SECONDS, whatever their state."""
        for lease in await self.listed():
            if not lease.swept(now):
                continue
            try:
                await answer_of(
                    self.leases.delete_namespaced_lease(
                        lease.name, self.namespace, _request_timeout=REQUEST_TIMEOUT, _preload_content=False
                    )
                )
            except ApiException as error:
                if error.status != 404:
                    raise

    async def sweep_forever(self) -> None:
        """One Lease per preemptor steered would otherwise pile up."""
        await every(SWEEP_EVERY_SECONDS, lambda: self.sweep(datetime.now(UTC)), _sweep_failed)


def _sweep_failed(error: Exception) -> None:
    logger.warning("steering: could not sweep its Leases", extra={"problem": api_problem(error)})
