"""A real local control plane for integration tests and demos: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and KWOK, of a current Kubernetes release.

See `LocalCluster` (processes, certificates, kubeconfig), `toolchain` (build and cache the binaries from the
Go modules pinned in `testbed/`), `gomod` (those build modules, written by `pin`) and `nodes` (namespaces and
Nodes, waited for until the controllers made them usable).
"""

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
from preemption_toleration.devcluster.toolchain import (
    DEFAULT_KUBERNETES_VERSION,
    Toolchain,
    ToolchainError,
    ensure_toolchain,
    find_toolchain,
)

__all__ = [
    "DEFAULT_KUBERNETES_VERSION",
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
