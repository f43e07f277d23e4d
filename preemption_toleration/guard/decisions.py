"""The guard's decision: is this request a preemption, and does the victim tolerate the preemptor? Its records
are `verdicts`', who the preemptor is `finding`'s."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from preemption_toleration.core.exemption import PriorityClassNotFound, exemption
from preemption_toleration.core.groups import DisruptionMode
from preemption_toleration.core.pods import PreemptorFacts, priority_only
from preemption_toleration.core.protection import Protection, ProtectionKind, protection_under
from preemption_toleration.core.times import rfc3339
from preemption_toleration.guard.finding import (
    cached_preemptor,
    explicit_preemptor,
    marking_scheduler,
    preemptor_facts,
    scheduler_preemptor,
)
from preemption_toleration.guard.memory import GuardMemory
from preemption_toleration.guard.prefilter import GuardOperation, is_preemption
from preemption_toleration.guard.request import GuardRequest
from preemption_toleration.guard.verdicts import (
    ALLOWED,
    NO_PREEMPTOR,
    GroupDecision,
    GuardConfig,
    PreemptorSource,
    Refusal,
    Verdict,
)
from preemption_toleration.guard.waste import in_vain
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.pod import PodRecord
from preemption_toleration.records.pod_group import MemberRecord, PodGroupRecord


def describe(
    victim: PodRecord,
    protection: Protection,
    preemptor_priority: int,
    preemptor: str | None,
    policy: str | None,
    now: datetime,
    configured: bool = False,
) -> str:
    """The refusal's message. `configured`: the preemptor is the guard's eviction-preemptor-priority, for an
    Eviction that names none (a drain), so the message says so, for the admin whose drain waits."""
    class_name = victim.priority_class or ""
    source = f'PreemptionTolerationPolicy "{policy}"' if policy else f"the annotations of PriorityClass {class_name}"
    who = f"{preemptor}, priority {preemptor_priority}" if preemptor else f"priority {preemptor_priority}"
    judged_as = (
        f"this eviction names no preemptor and counts as a preemption by priority {preemptor_priority} (the "
        "guard's --eviction-preemptor-priority), which the pod refuses"
        if configured
        else f"the preemptor ({who}) is below it"
    )
    member = f" of PodGroup {victim.group.ref}" if isinstance(victim, MemberRecord) else ""
    head = (
        f"pod {victim.ref}{member} (PriorityClass {class_name}, priority {victim.priority}) tolerates "
        f"preemption by priorities below {protection.refuse_below} ({source}); {judged_as}"
    )
    if protection.kind is ProtectionKind.FOREVER:
        only = f"Only priority {protection.refuse_below} or more may preempt it."
        if configured:
            only += (
                " An eviction that names no preemptor never removes it; to remove it anyway, delete it "
                "(kubectl drain --disable-eviction deletes instead of evicting)."
            )
        return f"{head}, and the toleration has no end. {only}"
    if protection.kind is ProtectionKind.NOT_SCHEDULED:
        return (
            f"{head}; the pod is not scheduled yet, and its {protection.toleration_seconds} s of guaranteed "
            "running time start when it is."
        )
    assert protection.until is not None
    return (
        f"{head} until {rfc3339(protection.until)} "
        f"({protection.seconds_left(now)} s left of {protection.toleration_seconds} s guaranteed running time)."
    )


def whole_group(victim: PodRecord) -> PodGroupRecord | None:
    """The group of a victim judged as a member of a `disruptionMode: all` group: its members get one
    decision per preemption."""
    if isinstance(victim, MemberRecord) and victim.group.disruption is DisruptionMode.ALL:
        return victim.group
    return None


def _judge(
    kind: GuardOperation,
    request: GuardRequest,
    victim: PodRecord,
    preemptor: PodRecord,
    source: PreemptorSource,
    view: ClusterView,
    config: GuardConfig,
    now: datetime,
    kept: GroupDecision | None = None,
    decides_group: bool = True,
) -> Verdict:
    """The verdict on `victim` (`ClusterView.as_member`: a member of a PodGroup as its group) and `preemptor`.
    A scheduler's write on a member of a `disruptionMode: all` group gets the decision that stands for its
    group in this preemption (`kept`, recalled by the caller), or, with `decides_group`, a new one, which the
    verdict carries for the caller to settle (`Verdict.fresh_group`)."""
    whole = whole_group(victim) if kind.scheduler_write and decides_group else None
    record = view.classes.get(victim.priority_class or "")
    toleration = record.toleration if record is not None else None  # parsed when the class entered the cache
    judged_as, preemptor_group = preemptor_facts(preemptor, view)
    try:
        exempt, found = (kept.exempt, kept.found) if kept is not None else exemption(victim, judged_as, toleration, now)
        if exempt and found is None:  # check 3 (preemptionPolicy Never): the protection the message shows
            found = protection_under(victim, toleration, now)
    except PriorityClassNotFound:
        # upstream skips the node; we cannot judge either
        return Verdict(source=source, preemptor=preemptor)
    protection = found if exempt else None
    verdict = _verdict(
        kind, request, victim, preemptor, source, judged_as, preemptor_group, view, config, now, protection
    )
    if whole is not None and kept is None:
        verdict.fresh_group = (whole.uid, GroupDecision(preemptor, source, exempt, found))
    return verdict


def _verdict(
    kind: GuardOperation,
    request: GuardRequest,
    victim: PodRecord,
    preemptor: PodRecord,
    source: PreemptorSource,
    judged_as: PreemptorFacts,
    preemptor_group: PodGroupRecord | None,
    view: ClusterView,
    config: GuardConfig,
    now: datetime,
    protection: Protection | None,
) -> Verdict:
    """The verdict of `_judge` once the exemption is known: the victim's protection when it is exempt, else
    None."""
    if protection is None:
        # a group's members are preempted across nodes, not node by node: none of them is in vain on its node
        checks_waste = (
            config.refuse_in_vain and kind.scheduler_write and not config.audit and not isinstance(victim, MemberRecord)
        )
        wasted = _in_vain(victim, preemptor, view, now) if checks_waste else None
        if wasted is not None:
            protection, message = wasted
            refusal = _refusal(kind, request, victim, preemptor, judged_as, protection, 403, message, audit=False)
            return Verdict(refusal, source, preemptor)
        return Verdict(source=source, preemptor=preemptor)
    class_name = victim.priority_class or ""
    preemptor_name = preemptor.ref if preemptor.name else None
    if preemptor_name and source is PreemptorSource.DEPARTED:
        preemptor_name = f"{preemptor_name}, deleted since"
    if judged_as.preempts_never:  # exempt by upstream's check 3, whatever the victim's class says
        who = f"{preemptor_name}, priority {judged_as.priority}" if preemptor_name else "the preemptor"
        message = (
            f"pod {victim.ref} may not be preempted by {who}: the preemptor has "
            "preemptionPolicy Never, so it preempts no pod."
        )
    else:
        message = describe(
            victim,
            protection,
            judged_as.priority,
            preemptor_name,
            view.owner(class_name),
            now,
            configured=source is PreemptorSource.CONFIGURED,
        )
    seconds_left = protection.seconds_left(now)
    retry_after = seconds_left if kind is GuardOperation.EVICTION else None
    code = 429 if retry_after is not None else 403
    refusal = _refusal(kind, request, victim, preemptor, judged_as, protection, code, message, config.audit)
    refusal.retry_after = retry_after
    refusal.preemptor_group = preemptor_group
    return Verdict(refusal, source, preemptor)


def _refusal(
    kind: GuardOperation,
    request: GuardRequest,
    victim: PodRecord,
    preemptor: PodRecord,
    judged_as: PreemptorFacts,
    protection: Protection,
    code: int,
    message: str,
    audit: bool,
) -> Refusal:
    """The refusal of `victim` to `preemptor` (named when it has a name), judged at `judged_as`' priority."""
    preemptor_name = preemptor.ref if preemptor.name else None
    return Refusal(
        kind, victim, judged_as.priority, preemptor_name, protection, code, message, audit, request.dry_run, preemptor
    )


def _in_vain(
    victim: PodRecord, preemptor: PodRecord, view: ClusterView, now: datetime
) -> tuple[Protection, str] | None:
    """The protection and message of the refusal of a victim upstream's plugin would not preempt on its node
    (`waste`), or None."""
    reason = in_vain(victim.uid, victim.node_name or "", preemptor, view, now)
    if reason is None:
        return None
    message = (
        f"pod {victim.ref} would be preempted in vain for {preemptor.ref} (priority {preemptor.priority}): {reason}."
    )
    # the victim itself tolerates nothing: the refusal is counted under protection "None"
    return Protection(ProtectionKind.NONE, reason, victim.priority), message


def _victim(request: GuardRequest, view: ClusterView, namespace: str) -> PodRecord | None:
    """The pod as the review carries it (`oldObject`), or as the cache has it when the review carries none.
    Whether the review carries one is all that counts: the server's reader leaves out the fields the guard
    does not read, so an object of only such fields arrives empty, and must be judged as it was sent."""
    victim = request.victim
    return victim if victim is not None else view.pods.get((namespace, request.name))


def judge(
    request: GuardRequest,
    view: ClusterView,
    config: GuardConfig,
    now: datetime | None = None,
    memory: GuardMemory | None = None,
) -> Verdict:
    """The verdict on a pod request: allowed unless it is a preemption (`is_preemption`), which its
    operation's entry judges (`judge_preemption`). A function of the request, the view and the guard's
    `memory` (by default none: nothing kept from earlier requests)."""
    if not is_preemption(request, config.preemptor_identities, config.judges_every_eviction):
        return ALLOWED
    return judge_preemption(request, view, config, now or datetime.now(UTC), memory or GuardMemory())


def judge_preemption(
    request: GuardRequest, view: ClusterView, config: GuardConfig, now: datetime, memory: GuardMemory
) -> Verdict:
    """The verdict on a request `is_preemption` found one (its caller asked, once): its operation's entry's."""
    operation = request.kind
    if operation is None:
        return ALLOWED
    return _ENTRIES[operation](request, view, config, now, memory)


def _judge_eviction(
    request: GuardRequest, view: ClusterView, config: GuardConfig, now: datetime, memory: GuardMemory
) -> Verdict:
    """An Eviction: judged against the preemptor it names, or, configured, against a priority."""
    pod: PodRecord | None = view.pods.get((request.namespace or "", request.name))
    preemptor, problem = explicit_preemptor(request.annotations, view)
    if pod is None:
        return ALLOWED  # a pod we do not know
    victim = view.as_member(pod)
    if problem is not None:
        return Verdict(note=f"not judged as a preemption: {problem}")
    kind = GuardOperation.EVICTION
    if preemptor is not None:
        return _judge(kind, request, victim, preemptor, PreemptorSource.NAMED, view, config, now)
    if config.eviction_preemptor_priority is None or not victim.node_name:
        return ALLOWED  # not a preemption (a drain), unless configured; unbound: no victim
    configured = priority_only(config.eviction_preemptor_priority)
    return _judge(kind, request, victim, configured, PreemptorSource.CONFIGURED, view, config, now)


def _judge_delete(
    request: GuardRequest, view: ClusterView, config: GuardConfig, now: datetime, memory: GuardMemory
) -> Verdict:
    """The scheduler's DELETE of its victim, marked just before, when the mark was allowed (a cached pod's
    record keeps no mark)."""
    scheduler = marking_scheduler(request.old_object)
    return _judge_scheduler_write(GuardOperation.DELETE, request, view, config, now, memory, scheduler)


def _judge_status(
    request: GuardRequest, view: ClusterView, config: GuardConfig, now: datetime, memory: GuardMemory
) -> Verdict:
    """The scheduler's status update that newly marks its victim."""
    scheduler = marking_scheduler(request.object)
    return _judge_scheduler_write(GuardOperation.STATUS, request, view, config, now, memory, scheduler)


def _judge_scheduler_write(
    kind: GuardOperation,
    request: GuardRequest,
    view: ClusterView,
    config: GuardConfig,
    now: datetime,
    memory: GuardMemory,
    scheduler: str | None,
) -> Verdict:
    """A scheduler's write on its victim names no preemptor: the one an extender call named, else the pending
    pod it most likely preempts for, else one deleted a moment ago. A member of a `disruptionMode: all` group
    gets the decision that stands for its group in this preemption, else a new one (`Verdict.fresh_group`)."""
    pod = _victim(request, view, request.namespace or "")
    node_name = pod.node_name if pod is not None else None
    if pod is None or not node_name:
        return ALLOWED  # an unbound pod is nobody's victim
    victim = view.as_member(pod)  # at its group's priority, as the scheduler judges it
    whole = whole_group(victim)
    kept: GroupDecision | None = memory.group_verdicts.recall(whole.uid, now) if whole is not None else None
    if kept is not None and kept.adopted and not kept.exempt:
        return _borne_out(kind, request, victim, node_name, kept, view, config, now, memory, scheduler)
    if kept is not None:  # `_judge` reads the rest of it
        if kept.preemptor is None or kept.source is None:
            return ALLOWED  # not judged: none could be found
        preemptor = cached_preemptor(kept.preemptor, view) or kept.preemptor  # adopted: as the claim names it
        return _judge(kind, request, victim, preemptor, kept.source, view, config, now, kept)
    found = scheduler_preemptor(victim, node_name, whole, view, now, memory, scheduler)
    if found is None:
        return ALLOWED if whole is None else Verdict(fresh_group=(whole.uid, NO_PREEMPTOR))
    preemptor, source = found
    return _judge(kind, request, victim, preemptor, source, view, config, now)


def _borne_out(
    kind: GuardOperation,
    request: GuardRequest,
    victim: PodRecord,
    node_name: str,
    adopted: GroupDecision,
    view: ClusterView,
    config: GuardConfig,
    now: datetime,
    memory: GuardMemory,
    scheduler: str | None,
) -> Verdict:
    """An allowance another replica made for the victim's group, as this replica's own facts judge it:
    against the preemptor it names, when the caches know that pod, else the one this replica finds. Allowed
    when they bear it out; their refusal when they do not (a Lease anyone may write never deletes a pod this
    replica protects)."""
    cached = cached_preemptor(adopted.preemptor, view) if adopted.preemptor is not None else None
    if cached is not None and adopted.source is not None:
        found: tuple[PodRecord, PreemptorSource] | None = (cached, adopted.source)
    else:
        found = scheduler_preemptor(victim, node_name, whole_group(victim), view, now, memory, scheduler)
    if found is None:
        return ALLOWED
    preemptor, source = found
    return _judge(kind, request, victim, preemptor, source, view, config, now, decides_group=False)


_ENTRIES: dict[GuardOperation, Callable[[GuardRequest, ClusterView, GuardConfig, datetime, GuardMemory], Verdict]] = {
    GuardOperation.EVICTION: _judge_eviction,
    GuardOperation.DELETE: _judge_delete,
    GuardOperation.STATUS: _judge_status,
}
