"""Quantities and a pod's summed requests, as the kube-scheduler computes them."""

from fractions import Fraction

import pytest

from preemption_toleration.core.resources import QuantityError, allocatable, parse_quantity, pod_requests

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
