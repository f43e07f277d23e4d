"""`ptol dev cluster up|down|status|install`: the local control plane for tests and demos."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from preemption_toleration.devcluster import (
    ClusterError,
    LocalCluster,
    ToolchainError,
    create_node,
    ensure_namespace,
    ensure_toolchain,
)

DEFAULT_DIR = ".cluster"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dev = subparsers.add_parser("dev", help="developer tools")
    dev_sub = dev.add_subparsers(dest="dev_command", metavar="COMMAND", required=True)
    cluster = dev_sub.add_parser("cluster", help="a local etcd + kube-apiserver + kube-scheduler on loopback")
    actions = cluster.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)

    up = actions.add_parser("up", help="start a cluster in the background (builds it first if needed)")
    _add_dir(up)
    up.add_argument("--nodes", type=int, default=1, help="simulated nodes to create (default 1)")
    up.add_argument("--node-cpu", default="4", help="CPU capacity of each node (default 4)")
    up.add_argument("--node-memory", default="8Gi", help="memory capacity of each node (default 8Gi)")
    up.add_argument(
        "--namespace",
        action="append",
        default=[],
        metavar="NS",
        help="also create this namespace with its default ServiceAccount (repeatable)",
    )
    up.set_defaults(handler=_up)

    down = actions.add_parser("down", help="stop every process of the cluster")
    _add_dir(down)
    down.set_defaults(handler=_down)

    status = actions.add_parser("status", help="show the cluster's processes; exit 1 unless all run")
    _add_dir(status)
    status.set_defaults(handler=_status)

    install = actions.add_parser(
        "install", help="install etcd and build kube-apiserver/kube-scheduler/kubectl (idempotent)"
    )
    _add_dir(install)
    install.set_defaults(handler=_install)


def _add_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path(DEFAULT_DIR),
        help=f"the cluster's directory: certificates, logs, kubeconfig (default {DEFAULT_DIR})",
    )


def _say(message: str) -> None:
    print(message, flush=True)


def _install(args: argparse.Namespace) -> int:
    try:
        toolchain = ensure_toolchain(_say)
    except ToolchainError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for name, path in vars(toolchain).items():
        _say(f"{name}: {path}")
    return 0


def _up(args: argparse.Namespace) -> int:
    try:
        cluster = LocalCluster(args.dir)
        if cluster.running_components():
            print(f"error: a cluster already runs in {cluster.directory}", file=sys.stderr)
            return 1
        toolchain = ensure_toolchain(_say)
        cluster = LocalCluster(args.dir, toolchain)
        _say(f"starting etcd, kube-apiserver, kube-scheduler and the node agent in {cluster.directory}")
        cluster.start()
        try:
            asyncio.run(_populate(cluster, args))
        except BaseException:
            cluster.stop()
            raise
    except (ClusterError, ToolchainError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    _say(f"API server {cluster.server} is ready; logs in {cluster.logs_dir}")
    _say(f"export KUBECONFIG={cluster.kubeconfig}")
    _say(f"kubectl of the same version: {toolchain.kubectl}")
    _say(f"stop it with: ptol dev cluster down --dir {args.dir}")
    return 0


async def _populate(cluster: LocalCluster, args: argparse.Namespace) -> None:
    async with await cluster.api_client() as api:
        for namespace in ["default", *args.namespace]:
            await ensure_namespace(api, namespace)
        for index in range(1, args.nodes + 1):
            await create_node(api, f"node-{index}", cpu=args.node_cpu, memory=args.node_memory)
            _say(f"node node-{index}: cpu={args.node_cpu} memory={args.node_memory}")


def _down(args: argparse.Namespace) -> int:
    cluster = LocalCluster(args.dir)
    if not cluster.status():
        _say(f"no cluster in {cluster.directory}")
        return 0
    cluster.stop()
    _say(f"stopped the cluster in {cluster.directory}")
    return 0


def _status(args: argparse.Namespace) -> int:
    cluster = LocalCluster(args.dir)
    components = cluster.status()
    if not components:
        _say(f"no cluster in {cluster.directory}")
        return 1
    for component in components:
        state = "running" if component.running else "stopped"
        _say(f"{component.name:15} {state:8} pid {component.pid:<8} log {component.log}")
    ready = cluster.is_ready()
    _say(f"API server {cluster.server}: {'ready' if ready else 'not ready'}")
    _say(f"kubeconfig {cluster.kubeconfig}")
    return 0 if ready and all(c.running for c in components) else 1
