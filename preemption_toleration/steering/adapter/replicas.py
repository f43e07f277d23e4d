"""What the other replicas' steering did, read from their Leases (watched, every replica's): the preemptors
one acted for lately, the nominations steering made, the victims another's action waits on. A Lease is a
claim anyone who may write Leases could have made: it only ever keeps this replica from acting (passing a
preemptor over, sparing a nomination or a victim), never makes it act. While the watch is not current, no
Lease counts as another's action and every nomination counts as steering's own."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.kube.informer import DEFAULT_STALE_AFTER_SECONDS, DictStore, Informer
from preemption_toleration.records.pod import SlimPod
from preemption_toleration.steering.adapter.record import SteeringRecord
from preemption_toleration.steering.adapter.steering_leases import (
    LEASE_PREFIX,
    NODE,
    LeaseState,
    SteeringLeases,
    acted_lately,
    steered_nominations,
    victims_elsewhere,
    victims_of,
)
from preemption_toleration.steering.plan import EVERY_NOMINATION, fits_on


class OtherReplicas:
    def __init__(self, leases: SteeringLeases, holder: str, window: float, logger: logging.Logger) -> None:
        self.holder = holder
        self.window = window
        self.lease_store: DictStore[LeaseState] = DictStore(LeaseState.from_json)
        self.lease_watch = Informer("steering-leases", leases.list_leases, self.lease_store, logger)

    def current(self) -> bool:
        return self.lease_watch.health(DEFAULT_STALE_AFTER_SECONDS) is None

    def acted_for(self, preemptor: SlimPod, view: ClusterView, now: datetime) -> bool:
        """Another replica acted for this preemptor within the window, by its Lease (`acted_lately`), and the
        preemptor waits for its victims to go or fits on its node once they went; not when another pod took
        that room, nor while the watch of the Leases is not current."""
        if not self.current():
            return False
        lease = self.lease_store.items.get(LEASE_PREFIX + preemptor.uid)
        if lease is None or lease.holder == self.holder or not acted_lately(lease, self.window, now):
            return False
        node = lease.annotations.get(NODE)
        if not node:
            return False
        victims = {uid for *_, uid in victims_of(lease.annotations)}
        return any(pod.uid in victims for pod in view.pods.on_node(node)) or fits_on(preemptor, node, view)

    def victims_for_others(self, preemptor_uid: str, now: datetime) -> set[str]:
        """The victims the other replicas' actions for other preemptors wait on (none while not current)."""
        if not self.current():
            return set()
        return victims_elsewhere(self.lease_store.items.values(), preemptor_uid, now)

    def nominations(self, own: SteeringRecord, now: datetime) -> Mapping[str, str]:
        """The pods steering nominated, this replica (`own`) or another (by their Leases), by UID, to the node
        of each: their nominations are never cleared; every nomination, while the watch of the Leases is not
        current (another replica's could not be told apart)."""
        if not self.current():
            return EVERY_NOMINATION
        found = steered_nominations(self.lease_store.items.values(), now)
        found.update((uid, node) for uid, (node, _) in own.steered.items())
        return found
