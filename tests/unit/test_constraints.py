"""Which of a pod's scheduling constraints the project judges exactly, one row per rule."""

import pytest

from preemption_toleration.core.constraints import (
    HOST_PORTS,
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    RESOURCE_CLAIMS,
    TOPOLOGY_SPREAD,
    VOLUMES,
    unjudged_constraints,
)

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
TERM = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
SPREAD = {"maxSkew": 1, "topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "x"}}}

CASES = [
    ("a plain pod is judged", {"containers": [{"name": "c"}]}, ()),
    (
        "node selector, required node affinity and tolerations are judged",
        {
            "nodeSelector": {"zone": "a"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
            "tolerations": [{"operator": "Exists"}],
        },
        (),
    ),
    ("required pod affinity is not judged", {"affinity": {"podAffinity": {REQUIRED: [TERM]}}}, (POD_AFFINITY,)),
    (
        "required pod anti-affinity is not judged",
        {"affinity": {"podAntiAffinity": {REQUIRED: [TERM]}}},
        (POD_ANTI_AFFINITY,),
    ),
    (
        "preferred pod affinity filters no node: judged",
        {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]}}},
        (),
    ),
    ("a topology spread that refuses nodes is not judged", {"topologySpreadConstraints": [SPREAD]}, (TOPOLOGY_SPREAD,)),
    (
        "a topology spread that only scores is judged",
        {"topologySpreadConstraints": [{**SPREAD, "whenUnsatisfiable": "ScheduleAnyway"}]},
        (),
    ),
    (
        "a host port, in an init container too, is not judged",
        {"initContainers": [{"name": "i", "ports": [{"containerPort": 80, "hostPort": 8080}]}]},
        (HOST_PORTS,),
    ),
    ("a container port without host port is judged", {"containers": [{"ports": [{"containerPort": 80}]}]}, ()),
    ("a persistent volume claim is not judged", {"volumes": [{"name": "d", "persistentVolumeClaim": {}}]}, (VOLUMES,)),
    ("a generic ephemeral volume is not judged", {"volumes": [{"name": "d", "ephemeral": {}}]}, (VOLUMES,)),
    ("emptyDir and configMap volumes are judged", {"volumes": [{"emptyDir": {}}, {"configMap": {"name": "c"}}]}, ()),
    ("resource claims are not judged", {"resourceClaims": [{"name": "gpu"}]}, (RESOURCE_CLAIMS,)),
    ("malformed fields read as absent", {"affinity": "x", "volumes": {"a": 1}, "containers": [None]}, ()),
]


@pytest.mark.parametrize(("rule", "spec", "expected"), CASES, ids=[case[0] for case in CASES])
def test_unjudged_constraints(rule: str, spec: dict, expected: tuple[str, ...]) -> None:
    assert unjudged_constraints(spec) == expected, rule
