"""The `PriorityBoost` condition of the policies (`kueue.policy_condition`), written by the webhook server from
what the booster's plans found, every CONDITION_SECONDS, off the request path.

Each write is a merge patch of the policy's status `conditions` with the resourceVersion it was planned on: the
operator writes the same list (its `Ready`, keeping ours as it finds it), so a write planned on an older
policy is refused (409) and planned again from the cache that shows the newer one. Every replica computes the
same conditions from what all of them see; the one whose write lands posts the Event on the policy.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.kube.client import API_ERRORS, MERGE_PATCH, api_problem
from preemption_toleration.kube.events import EventRecorder
from preemption_toleration.kueue.adapter.booster import COMPONENT
from preemption_toleration.kueue.policy_condition import CONDITION, Unwritten, conditions_to_write
from preemption_toleration.records.policy import PolicyView

logger = logging.getLogger("preemption_toleration.kueue")
CONDITION_SECONDS: Final = 5.0


class PolicyConditions:
    def __init__(
        self,
        api: ApiClient,
        unwritten: Callable[[], Iterable[Unwritten]],
        policies: Callable[[], Mapping[str, PolicyView]],
        problems: Callable[[], list[str]],
        events: EventRecorder | None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """`unwritten`: the booster's finding; `policies`: the server's cache of them; `problems`: what keeps
        the caches from being current (nothing is written meanwhile)."""
        self.custom = client.CustomObjectsApi(api)
        self.unwritten = unwritten
        self.policies = policies
        self.problems = problems
        self.events = events
        self.now = now

    async def run(self, period: float = CONDITION_SECONDS) -> None:
        while True:
            await asyncio.sleep(period)
            if self.problems():
                continue
            try:
                await self.step()
            except Exception:  # a round that fails is told, and the next made from the caches again
                logger.exception("policy conditions not written")

    async def step(self) -> int:
        """Writes each condition that must change; how many were written."""
        policies = self.policies()
        written = 0
        for name, conditions in conditions_to_write(self.unwritten(), policies.values(), self.now()).items():
            policy = policies[name]
            body = {"metadata": {"resourceVersion": policy.resource_version}, "status": {"conditions": conditions}}
            try:
                await self.custom.patch_cluster_custom_object_status(
                    GROUP, VERSION, PLURAL, name, body, _content_type=MERGE_PATCH
                )
            except ApiException as error:
                if error.status not in (404, 409):  # gone, or changed since: planned again from the cache
                    _not_written(name, error)
                continue
            except API_ERRORS as error:
                _not_written(name, error)
                continue
            written += 1
            self._told(policy, conditions[-1])
        return written

    def _told(self, policy: PolicyView, condition: Mapping[str, Any]) -> None:
        logger.info(
            "policy condition written",
            extra={"policy": policy.name, "condition": CONDITION, "status": condition["status"]},
        )
        if self.events is not None:
            kind = "Normal" if condition["status"] == "True" else "Warning"
            self.events.post(policy.ref, kind, condition["reason"], condition["message"], component=COMPONENT)


def _not_written(policy: str, error: BaseException) -> None:
    logger.warning("policy condition not written", extra={"policy": policy, "problem": api_problem(error)})
