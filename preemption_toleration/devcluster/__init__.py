"""A real local control plane for integration tests and demos: etcd, kube-apiserver, kube-scheduler.

See `LocalCluster` (processes, certificates, kubeconfig), `toolchain` (install and build the binaries),
`nodes` (namespaces, service accounts, simulated Nodes) and `node_agent` (the kubelet stand-in).
"""

from preemption_toleration.devcluster.cluster import (
    ClusterError,
    ComponentStatus,
    LocalCluster,
)
from preemption_toleration.devcluster.nodes import (
    SIMULATED_NODE_LABEL,
    create_node,
    delete_namespace,
    delete_node,
    ensure_default_service_account,
    ensure_namespace,
)
from preemption_toleration.devcluster.toolchain import (
    Toolchain,
    ToolchainError,
    ensure_toolchain,
    find_toolchain,
)

__all__ = [
    "SIMULATED_NODE_LABEL",
    "ClusterError",
    "ComponentStatus",
    "LocalCluster",
    "Toolchain",
    "ToolchainError",
    "create_node",
    "delete_namespace",
    "delete_node",
    "ensure_default_service_account",
    "ensure_namespace",
    "ensure_toolchain",
    "find_toolchain",
]
