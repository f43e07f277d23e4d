"""Mutated requests for every endpoint of the webhook server: the seeds, the mutation, and the server.

Shared by `test_webhook_fuzz.py` (hypothesis, a bounded budget in the suite) and `fuzz_webhooks.py` (a long
run as a script). A mutation replaces, adds or removes values at random places of a well-formed request;
the server must answer every body with 200, 400 or 503, and never reach its last-resort net for errors
no rule foresaw (`ptol_webhook_unexpected_errors_total`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from typing import Any

from preemption_toleration.admission.decisions import snapshot_of
from preemption_toleration.api.paths import (
    EXTENDER_PREEMPT_PATH,
    GUARD_PATH,
    MUTATE_PRIORITY_CLASSES_PATH,
    VALIDATE_POLICIES_PATH,
    VALIDATE_PRIORITY_CLASSES_PATH,
)
from preemption_toleration.core.annotations import (
    MINIMUM_PREEMPTABLE_PRIORITY,
    PREEMPTOR,
    PREEMPTOR_PRIORITY,
    TOLERATION_SECONDS,
)
from preemption_toleration.extender.adapter.extender_endpoint import ExtenderHooks
from preemption_toleration.guard.adapter.guard_endpoint import GuardHooks
from preemption_toleration.guard.verdicts import GuardConfig
from preemption_toleration.inventory.preemptors import PreemptorRecord
from preemption_toleration.webhooks.server import WebhookApp
from tests.builders import priority_class
from tests.unit import test_extender as extender
from tests.unit import test_guard as guard
from tests.unit.admission_payloads import PTP_KIND, PTP_RESOURCE, review
from tests.unit.guard_requests import ROWS
from tests.unit.webhook_client import webhook_app

POLICY = {
    "apiVersion": "preemption-toleration.dev/v1alpha1",
    "kind": "PreemptionTolerationPolicy",
    "metadata": {"name": "forever", "creationTimestamp": "2026-11-01T00:00:00Z"},
    "spec": {"priorityClassName": "low-non-preempted", "minimumPreemptablePriority": 10000, "tolerationSeconds": -1},
}
SELECTOR_POLICY = {
    "apiVersion": "preemption-toleration.dev/v1alpha1",
    "kind": "PreemptionTolerationPolicy",
    "metadata": {"name": "tiered", "labels": {"team": "ml"}},
    "spec": {
        "priorityClassSelector": {
            "matchLabels": {"tier": "gold"},
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
        },
        "minimumPreemptablePriority": 10000,
        "tolerationSeconds": 600,
    },
}
# Placeholders that become JSON no `json.dumps` writes: huge numbers, deep nesting.
RAW = {
    "<huge-integer>": "9" * 5000,
    "<deep-list>": "[" * 1000 + "]" * 1000,
    "<deep-object>": '{"a":' * 150 + "1" + "}" * 150,
    "<huge-float>": "1e400",
}
# Values a mutation puts in: wrong types, edge numbers, texts our parsers read.
INTERESTING: list[Any] = [
    *RAW,
    None,
    True,
    False,
    0,
    -1,
    2**31,
    2**63,
    10**30,
    1.5,
    "",
    "x",
    "10k",
    "-1",
    "9000",
    "+0100",
    "2026-13-99T25:00:00Z",
    "2026-11-22T11:00:00Z",
    "team/high-1",
    "node-1",
    "PodScheduled",
    "DisruptionTarget",
    "PreemptionByScheduler",
    "system:kube-scheduler",
    "DELETE",
    "eviction",
    "status",
    [],
    [None],
    ["x"],
    [{}],
    {},
    {"a": 1},
    {"type": "PodScheduled", "status": "True"},
    {PREEMPTOR_PRIORITY: "9000"},
    {PREEMPTOR: "team/high-1"},
    {MINIMUM_PREEMPTABLE_PRIORITY: "10000"},
    {TOLERATION_SECONDS: []},
]


def seeds() -> list[tuple[str, dict[str, Any]]]:
    """Well-formed requests for each endpoint: the guard's table, classes, policies, extender calls."""
    found: list[tuple[str, dict[str, Any]]] = []
    for row in ROWS:
        if isinstance(row.request, dict):
            found.append(
                (GUARD_PATH, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": row.request})
            )
    for body in (
        priority_class("low", 8000, "10k"),
        priority_class("low-non-preempted", 8000, "10000", "-1"),
        priority_class("research", 7000, "9000", "300"),
        {**priority_class("gold", 8000), "metadata": {"name": "gold", "labels": {"tier": "gold"}}},
    ):
        found += [
            (VALIDATE_PRIORITY_CLASSES_PATH, review(body)),
            (MUTATE_PRIORITY_CLASSES_PATH, review(body)),
            (VALIDATE_PRIORITY_CLASSES_PATH, review(body, old=body, operation="UPDATE")),
        ]
    for policy in (POLICY, SELECTOR_POLICY):
        found += [
            (VALIDATE_POLICIES_PATH, review(policy, resource=PTP_RESOURCE, kind=PTP_KIND)),
            (
                VALIDATE_POLICIES_PATH,
                review(
                    {**policy, "spec": {**policy["spec"], "tolerationSeconds": 5}},
                    old=policy,
                    operation="UPDATE",
                    resource=PTP_RESOURCE,
                    kind=PTP_KIND,
                ),
            ),
        ]
    victims = {"node-a": ["a", "b"]}
    found.append(
        (
            EXTENDER_PREEMPT_PATH,
            {
                "Pod": extender.HIGH_3CPU,
                "NodeNameToMetaVictims": {
                    node: {"Pods": [{"UID": f"uid-{name}"} for name in names], "NumPDBViolations": 0}
                    for node, names in victims.items()
                },
            },
        )
    )
    found.append(
        (
            EXTENDER_PREEMPT_PATH,
            {
                "Pod": extender.HIGH_1CPU,
                "NodeNameToVictims": {
                    node: {"Pods": [extender.pod(name, "low") for name in names], "NumPDBViolations": 1}
                    for node, names in victims.items()
                },
            },
        )
    )
    return found


def server() -> WebhookApp:
    """The whole server, on caches holding the protected victim, a pending preemptor and a node of pods."""
    victim = guard.bound("victim", 8000, "low-non-preempted")
    state = guard.snapshot(victim, guard.pending("high-1", 9000))
    admission = snapshot_of({"forever": POLICY, "tiered": SELECTOR_POLICY}, dict(guard.CLASSES))
    node_pods = [extender.pod("a", "low"), extender.pod("b", "low-non-preempted"), extender.pod("c", "low-10min")]
    app = webhook_app(
        lambda: admission,
        lambda needs: [],
        guard=GuardHooks(lambda: state, GuardConfig(), lambda refusal, count: None),
        extender=ExtenderHooks(lambda: extender.view(node_pods), PreemptorRecord()),
    )
    return app


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value, the root first."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths(child, (*prefix, index))


DELETE = object()  # a mutation that removes the value at its place


def mutate(payload: dict[str, Any], edits: Sequence[tuple[float, Any]]) -> dict[str, Any]:
    """A copy of `payload` with each edit applied: (where, in [0, 1) over its places; the new value, or
    DELETE). A new key is added under a mapping when the value is a (key, value) pair."""
    mutated = copy.deepcopy(payload)
    for where, value in edits:
        places = [p for p in paths(mutated) if p]
        if not places:
            break
        place = places[int(where * len(places))]
        parent: Any = mutated
        for step in place[:-1]:
            parent = parent[step]
        if value is DELETE:
            del parent[place[-1]]
        elif isinstance(value, tuple) and isinstance(parent, dict):
            parent[str(value[0])] = copy.deepcopy(value[1])
        else:
            parent[place[-1]] = copy.deepcopy(value)  # never shared: a later edit may change it
    return mutated


def encode(payload: Any) -> bytes:
    text = json.dumps(payload)
    for placeholder, raw in RAW.items():
        text = text.replace(json.dumps(placeholder), raw)
    return text.encode()


def answer(app: WebhookApp, path: str, body: bytes) -> int:
    """The HTTP status the server answers `body` with on `path`."""
    return app.answer(app.endpoint(path), body)[0]


def unexpected_errors(app: WebhookApp) -> float:
    return sum(
        sample.value
        for metric in app.metrics.registry.collect()
        if metric.name == "ptol_webhook_unexpected_errors"
        for sample in metric.samples
        if sample.name.endswith("_total")
    )
