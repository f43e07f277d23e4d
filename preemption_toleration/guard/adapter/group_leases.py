"""The guard's group decisions settled with the other replicas through their Leases (`guard.group_claims`):
create or replace at the version read, adopt what another replica wrote first, renew near the end.

A settlement that cannot reach the API server (an outage, a Role without Lease rights) keeps this replica's
own decision, unshared, as a single replica would: counted `unshared` and logged, so that a missing right is
seen and never blocks a preemption.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.core.shapes import as_mapping
from preemption_toleration.guard.group_claims import LABEL, GroupClaim, claim_body, lease_name, read_claim, swept
from preemption_toleration.guard.verdicts import GroupDecision
from preemption_toleration.kube.client import API_ERRORS, answer_of, api_problem
from preemption_toleration.serving.periodic import every
from preemption_toleration.telemetry.declared import GroupDecisionOutcome

logger = logging.getLogger("preemption_toleration.webhooks")

REQUEST_TIMEOUT = 2  # the settlement is on the guard's answer: never near the API server's webhook timeout
ATTEMPTS = 3  # reads and writes lost to other replicas' writes, before the decision is kept unshared
SWEEP_EVERY_SECONDS = 300


class Conflict(Exception):
    """The write lost: the Lease exists already, or changed (or went) since it was read."""


class ClaimStore(Protocol):
    """Where the replicas' claims are: the server namespace's Leases, or, in tests, a dict."""

    async def read(self, name: str) -> Mapping[str, Any] | None: ...

    async def create(self, body: dict[str, Any]) -> Mapping[str, Any]: ...

    async def replace(self, name: str, body: dict[str, Any]) -> Mapping[str, Any]: ...


class LeaseStore:
    """The claims as Leases of `namespace`."""

    def __init__(self, api: ApiClient, namespace: str) -> None:
        self.leases = client.CoordinationV1Api(api)
        self.namespace = namespace

    async def read(self, name: str) -> Mapping[str, Any] | None:
        try:
            return _json(await answer_of(self.leases.read_namespaced_lease(name, self.namespace, **_CALL)))
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    async def create(self, body: dict[str, Any]) -> Mapping[str, Any]:
        try:
            return _json(await answer_of(self.leases.create_namespaced_lease(self.namespace, body, **_CALL)))
        except ApiException as error:
            if error.status == 409:
                raise Conflict() from error
            raise

    async def replace(self, name: str, body: dict[str, Any]) -> Mapping[str, Any]:
        try:
            return _json(await answer_of(self.leases.replace_namespaced_lease(name, self.namespace, body, **_CALL)))
        except ApiException as error:
            if error.status in (404, 409):
                raise Conflict() from error
            raise

    async def sweep(self, now: datetime) -> None:
        """Deletes the claims past keeping (`group_claims.swept`), each at the version listed."""
        listed = _json(
            await answer_of(self.leases.list_namespaced_lease(self.namespace, label_selector=f"{LABEL}=true", **_CALL))
        )
        for item in listed.get("items") or []:
            metadata = as_mapping(as_mapping(item).get("metadata"))
            name, version = metadata.get("name"), metadata.get("resourceVersion")
            if not isinstance(name, str) or not isinstance(version, str) or not swept(as_mapping(item), now):
                continue
            options = client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version=version))
            try:
                await answer_of(self.leases.delete_namespaced_lease(name, self.namespace, body=options, **_CALL))
            except ApiException as error:
                if error.status not in (404, 409):
                    raise

    async def sweep_forever(self) -> None:
        """One Lease per group preempted would otherwise pile up."""
        await every(SWEEP_EVERY_SECONDS, lambda: self.sweep(datetime.now(UTC)), _sweep_failed)


_CALL: dict[str, Any] = {"_request_timeout": REQUEST_TIMEOUT, "_preload_content": False}


def _json(body: bytes) -> Mapping[str, Any]:
    found = json.loads(body)
    return found if isinstance(found, dict) else {}


def _sweep_failed(error: Exception) -> None:
    logger.warning("guard: could not sweep the Leases of its group decisions", extra={"problem": api_problem(error)})


class MemoryStore:
    """Claims in a dict, versioned as the API server versions them: replicas of one process, and tests."""

    def __init__(self) -> None:
        self.leases: dict[str, dict[str, Any]] = {}
        self._versions = 0

    async def read(self, name: str) -> Mapping[str, Any] | None:
        return self.leases.get(name)

    async def create(self, body: dict[str, Any]) -> Mapping[str, Any]:
        if body["metadata"]["name"] in self.leases:
            raise Conflict()
        return self._stored(body)

    async def replace(self, name: str, body: dict[str, Any]) -> Mapping[str, Any]:
        held = self.leases.get(name)
        if held is None or held["metadata"]["resourceVersion"] != body["metadata"].get("resourceVersion"):
            raise Conflict()
        return self._stored(body)

    def _stored(self, body: dict[str, Any]) -> dict[str, Any]:
        self._versions += 1
        stored = {**body, "metadata": {**body["metadata"], "resourceVersion": str(self._versions)}}
        self.leases[body["metadata"]["name"]] = stored
        return stored


class GroupClaims:
    """One replica's side of the group decisions: `settle` a decision it made afresh, once per group at a
    time (a request for a group whose settlement is under way waits for it)."""

    def __init__(
        self,
        store: ClaimStore,
        namespace: str,
        holder: str,
        count: Callable[[GroupDecisionOutcome], None] = lambda outcome: None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.namespace = namespace
        self.holder = holder
        self.count = count
        self.clock = clock
        self._under_way: dict[str, asyncio.Future[GroupClaim]] = {}

    async def settle(self, group_uid: str, decision: GroupDecision) -> GroupClaim:
        """The claim that stands for the group now: `decision`, written, or the one another replica wrote
        (adopted, or renewed when near its end)."""
        under_way = self._under_way.get(group_uid)
        if under_way is not None:
            return await asyncio.shield(under_way)
        task = asyncio.ensure_future(self._settled(group_uid, decision))
        self._under_way[group_uid] = task
        try:
            return await asyncio.shield(task)
        finally:
            if task.done():
                self._under_way.pop(group_uid, None)
            else:
                task.add_done_callback(lambda _: self._under_way.pop(group_uid, None))

    async def _settled(self, group_uid: str, decision: GroupDecision) -> GroupClaim:
        name = lease_name(group_uid)
        try:
            for _ in range(ATTEMPTS):
                with_claim = await self._attempt(group_uid, name, decision)
                if with_claim is not None:
                    outcome, claim = with_claim
                    self.count(outcome)
                    return claim
            problem = f"{ATTEMPTS} writes lost to other replicas' in a row"
        except API_ERRORS as error:
            problem = api_problem(error)
        self.count(GroupDecisionOutcome.UNSHARED)
        logger.warning(
            "guard: a pod group's decision is this replica's alone (its Lease could not be written)",
            extra={"lease": f"{self.namespace}/{name}", "problem": problem},
        )
        return self.alone(decision)

    def alone(self, decision: GroupDecision) -> GroupClaim:
        """`decision` as this replica's alone, made now: nothing written."""
        now = self.clock()
        return GroupClaim(decision, now, now, self.holder)

    async def _attempt(
        self, group_uid: str, name: str, decision: GroupDecision
    ) -> tuple[GroupDecisionOutcome, GroupClaim] | None:
        """One read and one write; None when the write lost."""
        raw = await self.store.read(name)
        now = self.clock()
        if raw is None:
            ours = GroupClaim(decision, now, now, self.holder)
            return await self._written(GroupDecisionOutcome.MADE, group_uid, ours, create=True)
        standing, version = read_claim(raw, now)
        if standing is not None and not standing.expired(now):
            if standing.trusted(now):
                return GroupDecisionOutcome.ADOPTED, standing
            return await self._written(GroupDecisionOutcome.RENEWED, group_uid, standing.renewed(now))
        ours = GroupClaim(decision, now, now, self.holder, version)
        return await self._written(GroupDecisionOutcome.MADE, group_uid, ours)

    async def _written(
        self, outcome: GroupDecisionOutcome, group_uid: str, claim: GroupClaim, create: bool = False
    ) -> tuple[GroupDecisionOutcome, GroupClaim] | None:
        if not create and not claim.version:
            return None  # no version to write on: never an unconditional replace
        body = claim_body(group_uid, claim, self.namespace)
        try:
            stored = await (self.store.create(body) if create else self.store.replace(lease_name(group_uid), body))
        except Conflict:
            return None
        version = str((stored.get("metadata") or {}).get("resourceVersion") or "")
        return outcome, GroupClaim(claim.decision, claim.decided_at, claim.renewed_at, claim.holder, version)
