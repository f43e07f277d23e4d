"""Quantities and a pod's summed requests, as the kube-scheduler computes them."""

from fractions import Fraction

import pytest

from preemption_toleration.core.quantities import (
    RULES_1_35,
    RULES_1_36,
    RULES_1_37,
    QuantityError,
    allocatable,
    parse_quantity,
    pod_requests,
    resize_rules,
)

QUANTITIES = [
    # (rule, text, exact value)
    ("plain integer", "2", Fraction(2)),
    ("milli suffix", "500m", Fraction(1, 2)),
    ("decimal fraction", "1.5", Fraction(3, 2)),
    ("leading dot", ".5", Fraction(1, 2)),
    ("binary suffix", "1Gi", Fraction(2**30)),
    ("decimal suffix", "2k", Fraction(2000)),
    ("decimal exponent", "1e3", Fraction(1000)),
    ("capital exponent", "15E-1", Fraction(3, 2)),
    ("signed", "+4", Fraction(4)),
    ("JSON number", 3, Fraction(3)),
    ("huge exponent is clamped, never computed", "1e999999", Fraction(2**63 - 1)),
]


@pytest.mark.parametrize(("rule", "text", "value"), QUANTITIES, ids=[q[0] for q in QUANTITIES])
def test_quantities(rule, text, value) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1.2.3", "1Xi", "abc", "1 Gi", True, None, "9" * 100])
def test_not_quantities(text) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def container(cpu=None, memory=None, restart=None, **extra):
    requests = {k: v for k, v in {"cpu": cpu, "memory": memory, **extra}.items() if v is not None}
    found = {"name": "c", "resources": {"requests": requests}}
    if restart:
        found["restartPolicy"] = restart
    return found


REQUESTS = [
    # (rule, spec, summed requests)
    (
        "containers are summed; cpu in millicores, rounded up",
        {"containers": [container("100m", "64Mi"), container("0.2501", "1Gi")]},
        {"cpu": 351, "memory": 64 * 2**20 + 2**30},
    ),  # 100 + ceil(250.1): each container rounded
    (
        "the largest init container wins when larger than the containers",
        {"initContainers": [container("2"), container("500m")], "containers": [container("1")]},
        {"cpu": 2000},
    ),
    (
        "the containers win when larger than every init container",
        {"initContainers": [container("1")], "containers": [container("1"), container("1")]},
        {"cpu": 2000},
    ),
    (
        "a sidecar (restartable init container) runs beside the later init containers and the containers",
        {"initContainers": [container("1", restart="Always"), container("2")], "containers": [container("1")]},
        {"cpu": 3000},
    ),
    ("overhead is added", {"containers": [container("1")], "overhead": {"cpu": "250m"}}, {"cpu": 1250}),
    (
        "extended resources count in whole units",
        {"containers": [container(**{"nvidia.com/gpu": "2"}), container(**{"nvidia.com/gpu": "1"})]},
        {"nvidia.com/gpu": 3},
    ),
    (
        "pod-level requests stand for the containers' sum (PodLevelResources)",
        {"resources": {"requests": {"cpu": "2", "memory": "1Gi"}}, "containers": [{"name": "c"}]},
        {"cpu": 2000, "memory": 2**30},
    ),
    (
        "pod-level requests replace only the resources they name",
        {"resources": {"requests": {"cpu": "2"}}, "containers": [container("500m", "64Mi")]},
        {"cpu": 2000, "memory": 64 * 2**20},
    ),
    (
        "pod-level requests win even when below the containers' sum",
        {"resources": {"requests": {"cpu": "1"}}, "containers": [container("1"), container("1")]},
        {"cpu": 1000},
    ),
    (
        "huge pages may be requested at pod level; other resources may not",
        {"resources": {"requests": {"hugepages-2Mi": "4Mi", "nvidia.com/gpu": "1"}}, "containers": [container("1")]},
        {"cpu": 1000, "hugepages-2Mi": 4 * 2**20},
    ),
    (
        "the overhead comes on top of pod-level requests",
        {"resources": {"requests": {"cpu": "2"}}, "containers": [{"name": "c"}], "overhead": {"cpu": "250m"}},
        {"cpu": 2250},
    ),
    ("no requests, nothing requested", {"containers": [{"name": "c"}]}, {}),
    ("malformed containers count as nothing", {"containers": "x", "initContainers": [1, None]}, {}),
]


@pytest.mark.parametrize(("rule", "spec", "expected"), REQUESTS, ids=[r[0] for r in REQUESTS])
def test_pod_requests(rule, spec, expected) -> None:
    assert pod_requests(spec) == expected


def test_allocatable_is_scaled_like_requests() -> None:
    node = {"status": {"allocatable": {"cpu": "3", "memory": "4Gi", "pods": "110"}}}
    assert allocatable(node) == {"cpu": 3000, "memory": 4 * 2**30, "pods": 110}


def statuses(*entries, key="containerStatuses", pod=None, resize=None):
    """A pod status: container statuses of (name, actuated cpu or None, allocated cpu or None), and more."""
    found: dict = {key: []}
    for name, actuated, allocated in entries:
        entry: dict = {"name": name}
        if actuated is not None:
            entry["resources"] = {"requests": {"cpu": actuated}}
        if allocated is not None:
            entry["allocatedResources"] = {"cpu": allocated}
        found[key].append(entry)
    if pod is not None:
        found.update(pod)
    if resize is not None:
        found["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": resize}]
    return found


def named(name, cpu=None, memory=None, restart=None):
    return {**container(cpu, memory, restart), "name": name}


RELEASES = {"1.35": RULES_1_35, "1.36": RULES_1_36, "1.37": RULES_1_37}
RESIZED = [
    # (rule, spec, status, cpu in millicores by release: 1.35, 1.36, 1.37)
    ("no status: the spec", {"containers": [named("a", "1")]}, {}, (1000, 1000, 1000)),
    (
        "a resize up not yet actuated counts the spec",
        {"containers": [named("a", "2")]},
        statuses(("a", "1", "1")),
        (2000, 2000, 2000),
    ),
    (
        "a resize down not yet actuated counts the larger status",
        {"containers": [named("a", "1")]},
        statuses(("a", "2", "2")),
        (2000, 2000, 2000),
    ),
    (
        "an infeasible resize counts the status alone",
        {"containers": [named("a", "4")]},
        statuses(("a", "1", "1"), resize="Infeasible"),
        (1000, 1000, 1000),
    ),
    (
        "a deferred resize counts the spec as well",
        {"containers": [named("a", "4")]},
        statuses(("a", "1", "1"), resize="Deferred"),
        (4000, 4000, 4000),
    ),
    (
        "up to 1.36 the larger is taken per container, from 1.37 of the sums",
        {"containers": [named("a", "2"), named("b", "1")]},
        statuses(("a", "1", "1"), ("b", "2", "2")),
        (4000, 4000, 3000),
    ),
    (
        "up to 1.36 a container status without resources leaves the spec; 1.37 reads its allocation",
        {"containers": [named("a", "1")]},
        statuses(("a", None, "3")),
        (1000, 1000, 3000),
    ),
    (
        "up to 1.36 only sidecars among the init containers read their status; 1.37 reads every one",
        {"initContainers": [named("init", "1")], "containers": [named("a", "1")]},
        statuses(("init", "3", "3"), key="initContainerStatuses"),
        (1000, 1000, 3000),
    ),
    (
        "a sidecar's status counts in every release",
        {"initContainers": [named("side", "1", restart="Always")], "containers": [named("a", "1")]},
        statuses(("side", "2", "2"), key="initContainerStatuses"),
        (3000, 3000, 3000),
    ),
    (
        "the pod-level status is read from 1.36 on (InPlacePodLevelResourcesVerticalScaling)",
        {"resources": {"requests": {"cpu": "1"}}, "containers": [{"name": "a"}]},
        statuses(pod={"resources": {"requests": {"cpu": "2"}}, "allocatedResources": {"cpu": "2"}}),
        (1000, 2000, 2000),
    ),
    (
        "from 1.37 the pod-level status stands for the containers' allocated and actuated sums",
        {"containers": [named("a", "1")]},
        statuses(("a", "1", "3"), pod={"resources": {"requests": {"cpu": "1"}}, "allocatedResources": {"cpu": "1"}}),
        (3000, 3000, 1000),
    ),
]


@pytest.mark.parametrize(("rule", "spec", "status", "cpu"), RESIZED, ids=[r[0] for r in RESIZED])
def test_requests_of_a_pod_resized_in_place(rule, spec, status, cpu) -> None:
    for (release, rules), expected in zip(RELEASES.items(), cpu, strict=True):
        assert pod_requests(spec, status, rules).get("cpu", 0) == expected, release


def test_pod_level_status_names_resources_in_1_37_only_those_of_the_spec_before() -> None:
    spec = {"resources": {"requests": {"cpu": "1"}}, "containers": [named("a", memory="64Mi")]}
    status = {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    assert pod_requests(spec, status, RULES_1_36) == {"cpu": 1000, "memory": 64 * 2**20}
    assert pod_requests(spec, status, RULES_1_37) == {"cpu": 1000, "memory": 2**30}


@pytest.mark.parametrize(("minor", "release"), [(30, "1.35"), (35, "1.35"), (36, "1.36"), (37, "1.37"), (40, "1.37")])
def test_resize_rules_by_release(minor, release) -> None:
    assert resize_rules(minor).release == release
