"""Optional features a local control plane can start with (`ptol dev cluster up --feature NAME`), each
declared once: the feature gates it turns on in kube-apiserver, kube-controller-manager and kube-scheduler,
the API versions the API server serves only when asked (`--runtime-config`), and the first release where it
behaves as our docs say.

`pod-groups`: PodGroups (`scheduling.k8s.io/v1beta1`), gang scheduling and the scheduler's workload-aware
preemption, which preempts for and of whole pod groups. In 1.37 the `GenericWorkload` gate covers all three
(beta, off by default); the controller-manager needs it too, for its PodGroupProtection controller (without
it a deleted PodGroup keeps its finalizer), and v1beta1 is a beta API the API server serves only when asked.
1.36 has them under other gates and an alpha API (`v1alpha2`, `disruptionMode` a string), 1.35 has no PodGroup
at all: only 1.37 is offered.

`kueue`: Kueue's controller manager beside the control plane (`devcluster.kueue`), built from the Go modules
pinned in testbed/kueue/ when first asked for; its own feature gates are its configuration's, not the
components'.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ClusterFeature:
    name: str  # as `--feature` takes it
    summary: str
    gates: tuple[str, ...]  # turned on in kube-apiserver, kube-controller-manager and kube-scheduler
    apis: tuple[str, ...]  # group/version the API server serves only with --runtime-config
    since: tuple[int, int]  # (major, minor) of the first release where it is offered


POD_GROUPS = ClusterFeature(
    "pod-groups",
    "PodGroups (scheduling.k8s.io/v1beta1), gang scheduling and workload-aware preemption",
    gates=("GenericWorkload",),
    apis=("scheduling.k8s.io/v1beta1",),
    since=(1, 37),
)

KUEUE = ClusterFeature(
    "kueue",
    "Kueue's controller manager (testbed/kueue/), its CRDs and webhooks, the batch/Job integration and the "
    "PriorityBoost gate on",
    gates=(),
    apis=(),
    since=(1, 37),  # its live tests run on 1.37.2 alone so far
)

FEATURES: dict[str, ClusterFeature] = {feature.name: feature for feature in (POD_GROUPS, KUEUE)}


def _minor(version: str) -> tuple[int, int]:
    major, minor, *_ = (int(part) for part in version.split("."))
    return major, minor


def features_named(names: Iterable[str], version: str) -> tuple[ClusterFeature, ...]:
    """The features `names` name, in declaration order, each once. Raises ValueError saying which name is
    unknown, or which feature the release `version` (e.g. `1.36.3`) does not offer."""
    wanted = set(names)
    if unknown := sorted(wanted - FEATURES.keys()):
        raise ValueError(f"unknown cluster feature {', '.join(unknown)}; known: {', '.join(FEATURES)}")
    chosen = tuple(feature for name, feature in FEATURES.items() if name in wanted)
    for feature in chosen:
        if _minor(version) < feature.since:
            since = ".".join(map(str, feature.since))
            raise ValueError(f"the {feature.name} feature needs Kubernetes {since} or later, not {version}")
    return chosen


def gate_flags(features: Sequence[ClusterFeature]) -> list[str]:
    """The `--feature-gates` flag of the components (none when no feature has gates)."""
    gates = [gate for feature in features for gate in feature.gates]
    return [f"--feature-gates={','.join(f'{gate}=true' for gate in gates)}"] if gates else []


def runtime_config_flags(features: Sequence[ClusterFeature]) -> list[str]:
    """The API server's `--runtime-config` flag (none when no feature needs an API served)."""
    apis = [api for feature in features for api in feature.apis]
    return [f"--runtime-config={','.join(f'{api}=true' for api in apis)}"] if apis else []
