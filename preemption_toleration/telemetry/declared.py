"""The metrics of the operator and the webhook server, one row each: what `collectors` builds and the docs'
reference table shows. A label's values are an enum where the code names them (a value not declared here
cannot be counted), and open where they come from the cluster or the server (endpoints, kinds, preemptors)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum, StrEnum

from preemption_toleration.core.protection import ProtectionKind
from preemption_toleration.extender.decisions import NodeChoice
from preemption_toleration.governance.planner import Reason
from preemption_toleration.guard.prefilter import GuardOperation
from preemption_toleration.guard.verdicts import PreemptorSource, VictimKind
from preemption_toleration.steering.plan import Declined

# Label values with nothing to say about each: one line each.
Kind = StrEnum("Kind", {"COUNTER": "counter", "GAUGE": "gauge", "HISTOGRAM": "histogram"})
Component = StrEnum("Component", {"OPERATOR": "operator", "WEBHOOK": "webhook server"})
Result = StrEnum("Result", {"OK": "ok", "FAILED": "failed"})
WriteAction = StrEnum("WriteAction", {"APPLIED": "applied", "RELEASED": "released"})
AdmissionDecision = StrEnum(
    "AdmissionDecision", {"ALLOWED": "allowed", "DENIED": "denied", "MUTATED": "mutated", "WARNED": "warned"}
)


class ResyncOutcome(StrEnum):
    RAN = "ran"  # a reconcile
    STANDBY = "standby"  # another replica is active, or this one lists the policies again
    FAILED = "failed"


class RefusalMode(StrEnum):
    ENFORCE = "enforce"
    AUDIT = "audit"  # would have refused


class NudgeOutcome(StrEnum):
    PLANNED = "planned"
    NUDGED = "nudged"  # nominated and withdrawn
    SKIPPED = "skipped"  # no longer pending, or nominated by the scheduler meanwhile
    FAILED = "failed"


class KueueBoostOutcome(StrEnum):
    APPLIED = "applied"  # our priority-boost written on a Workload holding quota
    REMOVED = "removed"  # ours removed: the window ended, or the Workload was evicted or finished
    NOT_WRITTEN = "not-written"  # wanted but not written: another writer holds it, the gate is off, ...
    NUDGED = "nudged"  # a pending Workload's annotation touched, so Kueue tries it again
    FAILED = "failed"  # a write failed (planned again later)


class SteeringOutcome(StrEnum):
    """What steering did with a refused preemption; when it declines, the reason is a `Declined`."""

    STEERED = "steered"
    AUDITED = "audited"  # audit mode
    CLAIMED_ELSEWHERE = "claimed-elsewhere"  # another replica acted within the window
    OVERTAKEN = "overtaken"  # bound before steering acted
    UNBLOCKED = "unblocked"  # a nomination upstream would not have made, which kept a preemptor off, cleared
    RESUMED = "resumed"  # finished after a restart
    RESUME_REFUSED = "resume-refused"  # a Lease left acting the cluster does not bear out
    FAILED = "failed"  # a write failed: the action given up, its Lease released
    STOPPED = "stopped"  # a victim judged again before its DELETE may not be preempted any more: given up
    RESTARTED = "restarted"  # steering started again after an error nothing foresaw
    UNCHANGED = "unchanged"  # declined before (or no node for its shape) and no cache changed, or it waits


class GroupDecisionOutcome(StrEnum):
    """How a replica settled a decision it made afresh for a victim group of `disruptionMode: all`."""

    MADE = "made"  # written: it stands for the group
    ADOPTED = "adopted"  # another replica's stood
    RENEWED = "renewed"  # the one that stood, near its end, renewed: the requests go on
    UNSHARED = "unshared"  # its Lease could not be written: this replica's alone


REFUSED_KINDS = (ProtectionKind.FOREVER, ProtectionKind.UNTIL, ProtectionKind.NOT_SCHEDULED)
REFUSED_PREEMPTOR_SERIES = 100  # preemptors with a series of their own: the most recently refused


@dataclass(frozen=True)
class Label:
    name: str
    values: tuple[str, ...] = ()  # empty: open, named at run time (`meaning` says by what)
    meaning: str = ""

    @staticmethod
    def of(name: str, values: Iterable[str | Enum]) -> Label:
        return Label(name, tuple(value.value if isinstance(value, Enum) else value for value in values))


@dataclass(frozen=True)
class Metric:
    name: str  # as scraped (a counter's with its `_total`)
    kind: Kind
    component: Component
    help: str
    labels: tuple[Label, ...] = ()
    buckets: tuple[float, ...] = ()  # a histogram's upper bounds
    # counted as plain numbers on the request path and made into metrics when scraped: no `_created` series
    hot: bool = False
    described_in: str = ""  # the docs page (and anchor) that says more, relative to docs/

    @property
    def label_names(self) -> tuple[str, ...]:
        return tuple(label.name for label in self.labels)


ENDPOINT = Label("endpoint", meaning="the webhook endpoint")
CACHE_KIND = Label(
    "kind",
    meaning="the watched resource: priorityclasses, preemptiontolerationpolicies, pods, nodes, poddisruptionbudgets, "
    "podgroups",
)
_W, _O = Component.WEBHOOK, Component.OPERATOR
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)

WEBHOOK_REQUESTS = Metric(
    "ptol_webhook_requests_total",
    Kind.COUNTER,
    _W,
    "Admission requests by endpoint and HTTP status code.",
    (ENDPOINT, Label("code", meaning="the HTTP status code")),
    hot=True,
)
WEBHOOK_DECISIONS = Metric(
    "ptol_webhook_decisions_total",
    Kind.COUNTER,
    _W,
    "Admission decisions by endpoint and outcome (allowed, denied, mutated, warned).",
    (ENDPOINT, Label.of("decision", AdmissionDecision)),
    hot=True,
    described_in="admission-webhooks.md#requests-and-answers",
)
WEBHOOK_LATENCY = Metric(
    "ptol_webhook_request_seconds",
    Kind.HISTOGRAM,
    _W,
    "Time to answer an admission request (the guard's hold of a scheduler's immediate retry left out).",
    (ENDPOINT,),
    _LATENCY_BUCKETS,
    hot=True,
    described_in="eviction-guard.md#what-the-guard-alone-cannot-do",
)
GUARD_REFUSALS = Metric(
    "ptol_guard_refusals_total",
    Kind.COUNTER,
    _W,
    "Preemptions the guard refused (mode=enforce) or would have refused (mode=audit), by request kind "
    "(delete, eviction, status), protection (Forever, Until, NotScheduled) and victim (pod, or podgroup: a "
    "member of a PodGroup, judged as its group).",
    (
        Label.of("kind", GuardOperation),
        Label.of("protection", REFUSED_KINDS),
        Label.of("mode", RefusalMode),
        Label.of("victim", VictimKind),
    ),
    hot=True,  # a scheduler retrying a protected victim makes this a hot path
    described_in="eviction-guard.md",
)
GUARD_GROUPS_LEFT_IN_PART = Metric(
    "ptol_guard_groups_left_in_part_total",
    Kind.COUNTER,
    _W,
    "PodGroups of disruptionMode all that the scheduler's preemption left in part: some members preempted, others "
    "still running (deletions the guard was not asked about, or another check refused). Each is told by a Warning "
    "Event PreemptedInPart on the PodGroup. Every replica counts what the cluster shows: take the max across them.",
    described_in="eviction-guard.md#pod-groups-kubernetes-137",
)
GUARD_GROUP_DECISIONS = Metric(
    "ptol_guard_group_decisions_total",
    Kind.COUNTER,
    _W,
    "Decisions for victim PodGroups of disruptionMode all settled with the other replicas through a Lease: made "
    "(this replica's stands), adopted (another's stood), renewed (requests went on past its end), unshared (the "
    "Lease could not be written; this replica's alone, as with one replica: look for a missing Role).",
    (Label.of("outcome", GroupDecisionOutcome),),
    described_in="eviction-guard.md#pod-groups-kubernetes-137",
)
GUARD_REFUSALS_BY_PREEMPTOR = Metric(
    "ptol_guard_refusals_by_preemptor_total",
    Kind.COUNTER,
    _W,
    f"Refusals per preemptor (namespace/name), for the {REFUSED_PREEMPTOR_SERIES} most recently refused "
    "preemptors: a fast-growing series is a scheduler retrying the same protected victim.",
    (Label("preemptor", meaning="namespace/name of a preemptor the guard refused"),),
    hot=True,
    described_in="eviction-guard.md#what-the-guard-alone-cannot-do",
)
GUARD_PREEMPTOR_SOURCES = Metric(
    "ptol_guard_preemptor_source_total",
    Kind.COUNTER,
    _W,
    "Preemptions the guard judged, by how it knew the preemptor: recorded (named by the scheduler's "
    "extender call), inferred (from pending pods), departed (from pending pods deleted in the last 30 s, "
    "when no pending one could be it), named (an Eviction's annotation), configured (an Eviction that "
    "names none, judged at --eviction-preemptor-priority).",
    (Label.of("source", PreemptorSource),),
    hot=True,
    described_in="scheduler-extender.md#the-exact-preemptor",
)
EXTENDER_NODES = Metric(
    "ptol_extender_nodes_total",
    Kind.COUNTER,
    _W,
    "Candidate nodes the scheduler extender judged, by choice: unchanged (no victim tolerates the "
    "preemptor), replaced (victims chosen without the protected pods), dropped (the preemptor cannot "
    "fit without one), recounted (the scheduler's victims, with budget violations counted without the "
    "pods that tolerate the preemptor), unknown (a victim the cache does not hold: left to the guard), across-nodes "
    "(members of a PodGroup of disruptionMode all on other nodes, which the scheduler cannot take from the answer: it "
    "preempts as it chose, left to the guard).",
    (Label.of("choice", NodeChoice),),
    described_in="scheduler-extender.md",
)
STEERING = Metric(
    "ptol_steering_total",
    Kind.COUNTER,
    _W,
    "Refused preemptions steering considered, by outcome: steered, audited (audit mode), "
    "claimed-elsewhere (another replica acted within the window), overtaken (bound before steering "
    "acted), unblocked (a nomination upstream would not have made, which kept a preemptor from its node, "
    "cleared), resumed (finished after a restart), resume-refused (a Lease left acting the cluster does not "
    "bear out), failed (a write failed: the action given up, its Lease released), stopped (a victim judged again "
    "before its DELETE may not be preempted any more: the action given up), restarted (steering started again "
    "after an error), or declined: no-evidence, "
    "unjudged (constraints the project does not judge), fits, no-node, in-progress (the "
    "scheduler's own preemption is under way), changed (the chosen node changed while planned), "
    "stale-cache (a cache is not current: nothing planned), pod-group (a preemption of or for a pod group: "
    "never steered), unchanged (declined before, or a pod of its shape found no node, and no cache changed "
    "since, or its wait is not over: not planned again).",
    (Label.of("outcome", [*SteeringOutcome, *Declined]),),
    described_in="eviction-guard.md#steering-managed-clusters",
)
STEERING_PLANS = Metric(
    "ptol_steering_plan_seconds",
    Kind.HISTOGRAM,
    _W,
    "Event-loop time each steering plan took, in slices between which the loop answers requests "
    "(its count: plans made).",
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
    described_in="eviction-guard.md#steering-managed-clusters",
)
NUDGES = Metric(
    "ptol_preemptor_nudges_total",
    Kind.COUNTER,
    _W,
    "Expiry nudges of pending preemptors held back by a time-limited toleration, by outcome: planned, "
    "nudged (nominated and withdrawn), skipped (no longer pending, or nominated by the scheduler meanwhile), "
    "failed.",
    (Label.of("outcome", NudgeOutcome),),
)
KUEUE_BOOSTS = Metric(
    "ptol_kueue_boosts_total",
    Kind.COUNTER,
    _W,
    "Writes of Kueue's priority-boost annotation on Workloads (--kueue on), by outcome: applied (a protected "
    "Workload's effective priority raised to its minimum - 1), removed (its window over, or it was evicted or "
    "finished), not-written (wanted, but another writer holds the annotation or Kueue's PriorityBoost gate is "
    "off), nudged (a pending Workload a boost kept out, tried again by Kueue), failed (a write failed: planned "
    "again).",
    (Label.of("outcome", KueueBoostOutcome),),
    described_in="tasks/kueue.md",
)
KUEUE_PROTECTED_EVICTIONS = Metric(
    "ptol_kueue_protected_evictions_total",
    Kind.COUNTER,
    _W,
    "Kueue's preemptions of a Workload its class's toleration protected from that preemptor (--kueue on), which "
    "the boost did not keep off, by protection (Forever, Until, NotScheduled): reported by a Warning Event "
    "PreemptionWouldBeRefused on the Workload, not refused. Every replica counts what it sees: take the max.",
    (Label.of("protection", REFUSED_KINDS),),
    described_in="tasks/kueue.md",
)
UNEXPECTED_ERRORS = Metric(
    "ptol_webhook_unexpected_errors_total",
    Kind.COUNTER,
    _W,
    "Requests whose judgement raised an error no rule foresaw, answered 400 (a bug: the log has the "
    "traceback), by endpoint.",
    (ENDPOINT,),
    described_in="admission-webhooks.md#faults-and-what-each-costs",
)
CACHE_OBJECTS = Metric("ptol_webhook_cache_objects", Kind.GAUGE, _W, "Objects in the watch caches.", (CACHE_KIND,))
CACHE_LISTS = Metric(
    "ptol_webhook_cache_lists_total",
    Kind.COUNTER,
    _W,
    "Full listings of a watched resource: the first one, then one per expired or failed watch.",
    (CACHE_KIND,),
)
CACHE_LIST_PAGES = Metric(
    "ptol_webhook_cache_list_pages_total",
    Kind.COUNTER,
    _W,
    "Pages of those listings (--list-page-size objects each).",
    (CACHE_KIND,),
)
CACHE_WATCH_FAILURES = Metric(
    "ptol_webhook_cache_watch_failures_total",
    Kind.COUNTER,
    _W,
    "Watches or listings that failed (API errors, broken connections): a rising count means the API server "
    "is unreachable or refuses the watch.",
    (CACHE_KIND,),
)

OPERATOR_RECONCILES = Metric(
    "ptol_operator_reconciles_total", Kind.COUNTER, _O, "Reconciles, by result.", (Label.of("result", Result),)
)
OPERATOR_WRITES = Metric(
    "ptol_operator_writes_total",
    Kind.COUNTER,
    _O,
    "PriorityClass (and, with --kueue on, WorkloadPriorityClass) writes, by action and result.",
    (Label.of("action", WriteAction), Label.of("result", Result)),
)
OPERATOR_STATUS_PATCHES = Metric("ptol_operator_status_patches_total", Kind.COUNTER, _O, "Policy status updates.")
OPERATOR_CACHE_OBJECTS = Metric(
    "ptol_operator_cache_objects",
    Kind.GAUGE,
    _O,
    "Objects the operator watches, by kind.",
    (Label("kind", meaning="priorityclasses, preemptiontolerationpolicies, workloadpriorityclasses (--kueue on)"),),
)
OPERATOR_RESYNCS = Metric(
    "ptol_operator_resyncs_total",
    Kind.COUNTER,
    _O,
    "Resyncs, by outcome: ran (a reconcile), standby (another replica is active, or this one lists the "
    "policies again; a standby looks again every 10 s), failed.",
    (Label.of("outcome", ResyncOutcome),),
)
OPERATOR_RESTARTS = Metric(
    "ptol_operator_restarts_total",
    Kind.COUNTER,
    _O,
    "Times kopf stopped by an error and was started again (after 1, 2, 5, 10, 30 s in a row).",
    described_in="operator.md",
)
OPERATOR_POLICIES = Metric(
    "ptol_operator_policies", Kind.GAUGE, _O, "Policies by Ready reason.", (Label.of("reason", Reason),)
)

METRICS = (
    OPERATOR_RECONCILES,
    OPERATOR_WRITES,
    OPERATOR_STATUS_PATCHES,
    OPERATOR_CACHE_OBJECTS,
    OPERATOR_RESYNCS,
    OPERATOR_RESTARTS,
    OPERATOR_POLICIES,
    WEBHOOK_REQUESTS,
    WEBHOOK_DECISIONS,
    WEBHOOK_LATENCY,
    UNEXPECTED_ERRORS,
    CACHE_OBJECTS,
    CACHE_LISTS,
    CACHE_LIST_PAGES,
    CACHE_WATCH_FAILURES,
    GUARD_REFUSALS,
    GUARD_GROUPS_LEFT_IN_PART,
    GUARD_GROUP_DECISIONS,
    GUARD_REFUSALS_BY_PREEMPTOR,
    GUARD_PREEMPTOR_SOURCES,
    EXTENDER_NODES,
    NUDGES,
    STEERING,
    STEERING_PLANS,
    KUEUE_BOOSTS,
    KUEUE_PROTECTED_EVICTIONS,
)
