"""Which operator replica of a kopf peering is the active one, read from the peering object.

kopf pauses a replica's handlers while a live peer has a higher priority, or the same priority (it then
pauses both), and says so to nobody outside its handlers. Work we run beside kopf, such as the operator's
one resync task, asks `is_active` before it writes, with kopf's own rule (`blocking_peers`) applied to the
object kopf keeps: `status` maps each replica's identity to its priority, lifetime (seconds) and the time
it was last seen. A peer is dead once lastseen + lifetime has passed.

Read here: the kopf.dev ClusterKopfPeering our manifests create. Not read: kopf's legacy
`clusterkopfpeerings.zalando.org` objects (kopf also obeys those when their CRD is installed), and the
exception kopf makes for replicas of the same priority when it runs with shard selectors (we use none).
"""

from __future__ import annotations

import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.core.shapes import as_mapping
from preemption_toleration.manifests import kopf_peering

# the kopf.dev peering resource, as the manifests declare it
KOPF_GROUP, KOPF_VERSION, CLUSTER_PEERINGS = kopf_peering.GROUP, kopf_peering.VERSION, kopf_peering.PLURAL
DEFAULT_LIFETIME_SECONDS = 60  # kopf's default for a peer that does not say
REQUEST_TIMEOUT_SECONDS = 15  # the client sets none: a half-open connection would stall the resync for good


@dataclass(frozen=True)
class Peering:
    """This replica in a kopf peering: the ClusterKopfPeering's name, our identity in it, our priority."""

    name: str
    identity: str
    priority: int


def new_identity() -> str:
    """A name for this replica in the peering: its host name (a pod's name, in a pod), the start time and
    a random suffix, so that a restarted replica is never mistaken for the one before it."""
    return f"{socket.gethostname()}/{datetime.now(UTC):%Y%m%d%H%M%S}/{secrets.token_hex(3)}"


def _peer_time(value: Any, now: datetime) -> datetime:
    if isinstance(value, str):
        try:
            seen = datetime.fromisoformat(value)
        except ValueError:
            return now  # unreadable: kopf's parser would fail on it; we count the peer as live, to be safe
        return seen if seen.tzinfo is not None else seen.replace(tzinfo=UTC)
    return now  # kopf reads a missing lastseen as "now"


def _number(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def blocking_peers(status: Mapping[str, Any], identity: str, priority: int, now: datetime) -> list[str]:
    """The live peers other than `identity` that pause a replica of `priority`: those of a higher priority,
    and those of the same one (kopf pauses every replica of a shared priority). Empty: it is active."""
    blocking = []
    for peer, info in status.items():
        if peer == identity:
            continue
        info = as_mapping(info)
        lifetime = timedelta(seconds=_number(info.get("lifetime"), DEFAULT_LIFETIME_SECONDS))
        if _peer_time(info.get("lastseen"), now) + lifetime <= now:
            continue  # dead: kopf forgets it
        if _number(info.get("priority"), 0) >= priority:
            blocking.append(str(peer))
    return sorted(blocking)


async def is_active(api: ApiClient, peering: Peering) -> tuple[bool, str]:
    """Whether kopf lets this replica work now, and why not. A missing peering object pauses kopf too."""
    try:
        body = await client.CustomObjectsApi(api).get_cluster_custom_object(
            KOPF_GROUP, KOPF_VERSION, CLUSTER_PEERINGS, peering.name, _request_timeout=REQUEST_TIMEOUT_SECONDS
        )
    except ApiException as error:
        if error.status == 404:
            return False, f"the ClusterKopfPeering {peering.name!r} does not exist"
        raise
    blocking = blocking_peers(as_mapping(body.get("status")), peering.identity, peering.priority, datetime.now(UTC))
    if blocking:
        return False, f"peers of the same or a higher priority are live: {', '.join(blocking)}"
    return True, ""
