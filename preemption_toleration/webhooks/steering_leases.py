"""Steering's Lease protocol: one action per preemptor per window, whichever replica acts.

A Lease named after the preemptor's UID, in the server's namespace, is created before anything is written
(a second replica's create fails with 409) and records the plan: the preemptor, the node and each victim
with its UID. It says "acting" until the action is done ("done"), or until a Lease left acting is found not
borne out by the cluster ("refused"). A Lease left acting for RESUME_AFTER_SECONDS was left by a replica
that stopped in the middle: the next to start finishes it, as far as the cluster bears it out
(`steering.resumption`). Every Lease is deleted SWEEP_AFTER_SECONDS after its last renewal.

The Lease's contents are what anyone who may write Leases there wrote: `left_plan` reads them into a claim
that the cluster must then confirm, never into an action.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.kube.client import MERGE_PATCH, answer_of, api_problem
from preemption_toleration.steering.plan import SteeringPlan
from preemption_toleration.steering.resumption import LeftPlan, PodRef
from preemption_toleration.webhooks.periodic import every

logger = logging.getLogger("preemption_toleration.steering")
LEASE_PREFIX = "ptol-steer-"
LABEL = "preemption-toleration.dev/steering"
PREFIX = "preemption-toleration.dev/"
STATE, PREEMPTOR, NODE, VICTIMS = (PREFIX + key for key in ("state", "preemptor", "node", "victims"))
ACTING, DONE, REFUSED = "acting", "done", "refused"  # refused: a Lease left acting the cluster does not bear out
REQUEST_TIMEOUT = 10
RESUME_AFTER_SECONDS = 15  # a Lease left "acting" this long was left by a replica that stopped in the middle
SWEEP_EVERY_SECONDS = 300
SWEEP_AFTER_SECONDS = 600  # a Lease is kept this long (for `kubectl get lease`), then deleted


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

    @staticmethod
    def of(lease: Any) -> LeaseState:
        """From the client's V1Lease."""
        return LeaseState(
            lease.metadata.name,
            lease.metadata.annotations or {},
            lease.spec.holder_identity,
            lease.spec.renew_time,
            lease.spec.lease_duration_seconds or 0,
        )

    def held(self, now: datetime) -> bool:
        """Renewed within its duration: another replica (or this one before a restart) acted in the window."""
        return self.renewed is not None and self.renewed + timedelta(seconds=self.duration_seconds) > now

    def done_by(self, holder: str) -> bool:
        return self.holder == holder and self.annotations.get(STATE) == DONE

    def swept(self, now: datetime) -> bool:
        """Done, refused, or acting but past any window (resuming would refuse it): kept a while, then gone."""
        return self.renewed is None or self.renewed + timedelta(seconds=SWEEP_AFTER_SECONDS) < now


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
    return LeftPlan((namespace, name, uid), node, victims, lease.renewed, min(lease.duration_seconds, window))


class SteeringLeases:
    """The Leases of one replica (`holder`) in `namespace`: claim, mark, list those left, sweep."""

    def __init__(self, api: ApiClient, namespace: str, holder: str, window: int) -> None:
        self.leases = client.CoordinationV1Api(api)
        self.namespace = namespace
        self.holder = holder
        self.window = window

    async def claim(self, plan: SteeringPlan, now: datetime, retake: bool = False) -> bool:
        """Whether this replica may act for the plan's preemptor now: its Lease created, or taken over from
        one past its window (or, with `retake`, one this replica itself finished). False when another
        replica holds it, or took it first."""
        body = lease_body(plan, self.namespace, self.holder, self.window, now)
        name = body["metadata"]["name"]
        try:
            await answer_of(
                self.leases.create_namespaced_lease(
                    self.namespace, body, _request_timeout=REQUEST_TIMEOUT, _preload_content=False
                )
            )
            return True
        except ApiException as error:
            if error.status != 409:
                raise
        existing = await self.leases.read_namespaced_lease(name, self.namespace, _request_timeout=REQUEST_TIMEOUT)
        state = LeaseState.of(existing)
        if state.held(now) and not (retake and state.done_by(self.holder)):
            return False
        body["metadata"]["resourceVersion"] = existing.metadata.resource_version
        try:
            await answer_of(
                self.leases.replace_namespaced_lease(
                    name, self.namespace, body, _request_timeout=REQUEST_TIMEOUT, _preload_content=False
                )
            )
        except ApiException as error:
            if error.status == 409:
                return False  # another replica took it first
            raise
        return True

    async def mark(self, uid: str, state: str) -> None:
        """The preemptor's Lease says `state` (DONE, REFUSED); a Lease deleted meanwhile is no error."""
        try:
            await answer_of(
                self.leases.patch_namespaced_lease(
                    LEASE_PREFIX + uid,
                    self.namespace,
                    {"metadata": {"annotations": {STATE: state}}},
                    _content_type=MERGE_PATCH,
                    _request_timeout=REQUEST_TIMEOUT,
                    _preload_content=False,
                )
            )
        except ApiException as error:
            if error.status != 404:
                raise

    async def listed(self) -> list[LeaseState]:
        found = await self.leases.list_namespaced_lease(
            self.namespace, label_selector=f"{LABEL}=true", _request_timeout=REQUEST_TIMEOUT
        )
        return [LeaseState.of(lease) for lease in found.items]

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
