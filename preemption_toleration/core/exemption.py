"""ExemptedFromPreemption of the upstream plugin: may this victim refuse this preemptor now?

Checks 1 to 3 are about the two pods; checks 4 to 8 read the victim's protection (protection.py), the
one computation that the guard's messages, `ptol explain` and the extender share.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from preemption_toleration.core.annotations import ClassToleration, class_toleration
from preemption_toleration.core.pods import PodFacts, PodJson, PreemptorFacts, priority_class_name
from preemption_toleration.core.protection import (
    PriorityClassNotFound,
    Protection,
    protection_under,
    require_aware,
    to_nanoseconds,
    toleration_deadline_ns,
)
from preemption_toleration.core.times import NANOSECONDS_PER_SECOND

__all__ = [
    "NANOSECONDS_PER_SECOND",
    "PriorityClassNotFound",
    "class_exemption",
    "exempted_from_preemption",
    "exemption",
    "require_aware",
    "to_nanoseconds",
    "toleration_deadline_ns",
]


def exempted_from_preemption(
    victim: Mapping[str, Any],
    preemptor: Mapping[str, Any],
    priority_classes: Mapping[str, Mapping[str, Any]],
    now: datetime,
) -> bool:
    """The eight checks of architecture §2, in upstream's order, on pods and classes as Kubernetes JSON
    (upstream's signature, for the library and the contract's tables): `exemption` over `PodJson` views."""
    victim_class = priority_classes.get(priority_class_name(victim))
    toleration = class_toleration(victim_class) if victim_class is not None else None
    return exemption(PodJson(victim), PodJson(preemptor), toleration, now)[0]


def exemption(
    victim: PodFacts, preemptor: PreemptorFacts, toleration: ClassToleration | None, now: datetime
) -> tuple[bool, Protection | None]:
    """Whether `victim` is exempt from preemption by `preemptor` at `now`, with the victim's protection
    when the checks reached it (4 to 8; None when checks 1 to 3 decided), so that a caller that also
    reports it computes it once. `toleration` is the victim's class's, parsed once (a class record's);
    None when the class is not known. The one entry point of the check: every caller passes records."""
    require_aware(now)
    class_name = victim.priority_class
    if not class_name:  # 1
        return False, None
    if toleration is None:  # 2
        raise PriorityClassNotFound(class_name)
    if preemptor.preempts_never:  # 3
        return True, None
    protection = protection_under(victim, toleration, now)
    if protection.minimum is None:  # 4: the policy does not parse
        return False, protection
    if preemptor.priority >= protection.minimum:  # 5
        return False, protection
    return protection.tolerating, protection  # 6, 7, 8


def class_exemption(toleration: ClassToleration | None, preemptor: PreemptorFacts) -> bool | None:
    """`exemption` for every pod that names a class with this toleration, when the answer does not depend
    on the pod (checks 3 to 5, or a negative toleration): what a search over many pods of a few classes
    reads once per class. None when it depends on the pod's scheduling time (or the class is unknown:
    `exemption` raises)."""
    if toleration is None:
        return None
    if preemptor.preempts_never:  # 3
        return True
    policy = toleration.policy
    if policy is None:  # 4
        return False
    if preemptor.priority >= policy.minimum_preemptable_priority:  # 5
        return False
    if policy.toleration_seconds < 0:  # 6: tolerates forever
        return True
    return None
