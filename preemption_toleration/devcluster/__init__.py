"""A real local control plane for integration tests and demos (a dev and test harness): etcd,
kube-apiserver, kube-controller-manager, kube-scheduler and KWOK of a current Kubernetes release, with
`LocalCluster` (processes, certificates, kubeconfig), `toolchain` and `gomod` (the binaries, built from the
Go modules pinned in `testbed/` by `pin`) and `nodes` (namespaces and Nodes, waited for until usable)."""

from preemption_toleration.devcluster.cluster import (
    ClusterError,
    ComponentStatus,
    LocalCluster,
)
from preemption_toleration.devcluster.nodes import (
    NotReadyError,
    create_node,
    delete_namespace,
    delete_node,
    ensure_namespace,
    wait_node_schedulable,
)
from preemption_toleration.devcluster.stages import KEEP_RUNNING_LABEL
from preemption_toleration.devcluster.toolchain import (
    DEFAULT_KUBERNETES_VERSION,
    Toolchain,
    ToolchainError,
    ensure_toolchain,
    find_toolchain,
)

__all__ = [
    "DEFAULT_KUBERNETES_VERSION",
    "KEEP_RUNNING_LABEL",
    "ClusterError",
    "ComponentStatus",
    "LocalCluster",
    "NotReadyError",
    "Toolchain",
    "ToolchainError",
    "create_node",
    "delete_namespace",
    "delete_node",
    "ensure_namespace",
    "ensure_toolchain",
    "find_toolchain",
    "wait_node_schedulable",
]
