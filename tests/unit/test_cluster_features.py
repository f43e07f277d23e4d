"""The optional features of the local control plane (`ptol dev cluster up --feature`): which release offers
each, and the flags they give the components."""

from __future__ import annotations

import pytest

from preemption_toleration.devcluster.features import POD_GROUPS, features_named, gate_flags, runtime_config_flags

CHOSEN = [
    # (rule, names, release, chosen)
    ("none asked, none chosen", [], "1.35.4", ()),
    ("pod groups on 1.37", ["pod-groups"], "1.37.2", (POD_GROUPS,)),
    ("a name given twice is one feature", ["pod-groups", "pod-groups"], "1.37.0", (POD_GROUPS,)),
]


@pytest.mark.parametrize(("rule", "names", "release", "chosen"), CHOSEN, ids=[c[0] for c in CHOSEN])
def test_features_named(rule: str, names: list[str], release: str, chosen: tuple[object, ...]) -> None:
    assert features_named(names, release) == chosen


REFUSED = [
    # (rule, names, release, message)
    (
        "pod groups before 1.37",
        ["pod-groups"],
        "1.36.3",
        "the pod-groups feature needs Kubernetes 1.37 or later, not 1.36.3",
    ),
    ("an unknown name", ["gangs"], "1.37.2", "unknown cluster feature gangs; known: pod-groups, kueue"),
]


@pytest.mark.parametrize(("rule", "names", "release", "message"), REFUSED, ids=[c[0] for c in REFUSED])
def test_a_feature_the_release_does_not_offer_is_refused(
    rule: str, names: list[str], release: str, message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        features_named(names, release)
    assert str(raised.value) == message


def test_pod_groups_turn_on_the_gate_and_serve_the_beta_api() -> None:
    assert gate_flags([POD_GROUPS]) == ["--feature-gates=GenericWorkload=true"]
    assert runtime_config_flags([POD_GROUPS]) == ["--runtime-config=scheduling.k8s.io/v1beta1=true"]
    assert gate_flags([]) == runtime_config_flags([]) == []
