"""`ptol dev cluster up|down|status|install|pin`: the local control plane for tests and demos (and `ptol dev
manifests`, registered from dev_manifests.py)."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import threading
from pathlib import Path

from preemption_toleration.cli import dev_manifests
from preemption_toleration.cli.failures import EXIT_USAGE
from preemption_toleration.cli.kubernetes_release import kubernetes_release, variable_problem
from preemption_toleration.cli.values import count, dns_label, quantity
from preemption_toleration.devcluster import (
    ClusterError,
    LocalCluster,
    ToolchainError,
    create_node,
    ensure_namespace,
    ensure_toolchain,
)
from preemption_toleration.devcluster.features import FEATURES
from preemption_toleration.devcluster.gomod import GoModError
from preemption_toleration.devcluster.image import ensure_base
from preemption_toleration.devcluster.pin import pin_kueue, pin_kustomize, pin_kwok, pin_release
from preemption_toleration.devcluster.toolchain import DEFAULT_KUBERNETES_VERSION, VERSION_ENV, ensure_kueue

DEFAULT_DIR = ".cluster"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dev = subparsers.add_parser("dev", help="developer tools")
    dev_sub = dev.add_subparsers(dest="dev_command", metavar="COMMAND", required=True)
    dev_manifests.register(dev_sub)
    cluster = dev_sub.add_parser(
        "cluster",
        help="a local control plane on loopback: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK",
    )
    actions = cluster.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)

    up = actions.add_parser("up", help="start a cluster in the background (builds it first if needed)")
    _add_dir(up)
    _add_version(up)
    up.add_argument("--nodes", type=count, default=1, help="simulated nodes to create (default 1)")
    up.add_argument("--node-cpu", type=quantity, default="4", help="CPU capacity of each node (default 4)")
    up.add_argument("--node-memory", type=quantity, default="8Gi", help="memory capacity of each node (default 8Gi)")
    up.add_argument(
        "--namespace",
        action="append",
        default=[],
        type=dns_label,
        metavar="NS",
        help="also create this namespace with its default ServiceAccount (repeatable)",
    )
    up.add_argument(
        "--feature",
        action="append",
        default=[],
        choices=list(FEATURES),
        metavar="NAME",
        help="start with an optional feature (repeatable): "
        + "; ".join(f"{f.name}: {f.summary}, Kubernetes {'.'.join(map(str, f.since))}+" for f in FEATURES.values()),
    )
    up.set_defaults(handler=_up)

    down = actions.add_parser("down", help="stop every process of the cluster")
    _add_dir(down)
    down.set_defaults(handler=_down)

    status = actions.add_parser("status", help="show the cluster's processes; exit 1 unless all run")
    _add_dir(status)
    status.set_defaults(handler=_status)

    install = actions.add_parser(
        "install",
        help="build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, KWOK, helm and kustomize "
        "(idempotent)",
    )
    _add_dir(install)
    _add_version(install, repeatable=True)
    install.add_argument(
        "--kueue",
        action="store_true",
        help="also build Kueue's controller manager (testbed/kueue/), which `up --feature "
        "kueue` runs (built when first asked for otherwise)",
    )
    install.add_argument(
        "--image-base",
        action="store_true",
        help="also make the Debian base the image is built from (podman and mmdebstrap, scripts/image-tools.sh), "
        "beside the builds (made when the image is first built otherwise)",
    )
    install.set_defaults(handler=_install)

    pin = actions.add_parser(
        "pin", help="write the build modules (go.mod, go.sum) of a Kubernetes release into testbed/"
    )
    pin.add_argument("version", nargs="?", help="the release, e.g. 1.36.3")
    pin.add_argument("--kwok", metavar="VERSION", help="pin KWOK, the node simulator, at VERSION (e.g. v0.8.0)")
    pin.add_argument(
        "--kueue", metavar="VERSION", help="pin Kueue, whose controller manager `--feature kueue` runs (e.g. v0.19.2)"
    )
    pin.add_argument(
        "--kustomize", metavar="VERSION", help="add a kustomize the tests render config/ with (e.g. v5.5.0)"
    )
    pin.set_defaults(handler=_pin)


def _add_version(parser: argparse.ArgumentParser, *, repeatable: bool = False) -> None:
    what = "build this release (repeatable; default" if repeatable else "run this release (default"
    parser.add_argument(
        "--kubernetes-version",
        action="append" if repeatable else "store",
        type=kubernetes_release,
        metavar="X.Y.Z",
        help=f"{what} ${VERSION_ENV}, else {DEFAULT_KUBERNETES_VERSION})",
    )


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
    if not args.kubernetes_version and (problem := variable_problem("dev cluster install")):
        return problem
    base = _base_beside() if args.image_base else None
    built = _build(args)
    if base is not None:
        base.join()
        if base.failed is not None:
            print(f"error: the image's Debian base: {base.failed}", file=sys.stderr)
            return 1
    return built


class _Base(threading.Thread):
    """The Debian base made in a thread of its own: mostly downloads and unpacking, beside Go's builds, which
    take the CPU."""

    def __init__(self) -> None:
        super().__init__(name="image-base", daemon=True)
        self.failed: str | None = None

    def run(self) -> None:
        try:
            _say(f"image base: {ensure_base(_say)}")
        except (ToolchainError, OSError, subprocess.SubprocessError) as error:
            self.failed = str(error)


def _base_beside() -> _Base:
    base = _Base()
    base.start()
    return base


def _build(args: argparse.Namespace) -> int:
    for version in args.kubernetes_version or [None]:
        try:
            toolchain = ensure_toolchain(_say, version)
        except ToolchainError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        for name, value in vars(toolchain).items():
            if isinstance(value, dict):  # one per version: kustomize
                for version_name, path in value.items():
                    _say(f"{name} {version_name}: {path}")
            else:
                _say(f"{name}: {value}")
    if args.kueue:
        try:
            _say(f"kueue: {ensure_kueue(_say).manager}")
        except ToolchainError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    return 0


def _pin(args: argparse.Namespace) -> int:
    if args.version is None and args.kwok is None and args.kueue is None and args.kustomize is None:
        print(
            "error: name a release (e.g. `ptol dev cluster pin 1.36.3`), --kwok VERSION, --kueue VERSION or "
            "--kustomize VERSION",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        if args.version is not None:
            _say(f"wrote {pin_release(args.version, _say)}")
        if args.kwok is not None:
            _say(f"wrote {pin_kwok(args.kwok, _say)}")
        if args.kueue is not None:
            _say(f"wrote {pin_kueue(args.kueue, _say)}")
        if args.kustomize is not None:
            _say(f"wrote {pin_kustomize(args.kustomize, _say)}")
    except (ToolchainError, GoModError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _up(args: argparse.Namespace) -> int:
    if not args.kubernetes_version and (problem := variable_problem("dev cluster up")):
        return problem
    try:
        cluster = LocalCluster(args.dir)
        if cluster.running_components():
            print(f"error: a cluster already runs in {cluster.directory}", file=sys.stderr)
            return 1
        toolchain = ensure_toolchain(_say, args.kubernetes_version)
        cluster = LocalCluster(args.dir, toolchain)
        with_features = f" with {', '.join(args.feature)}" if args.feature else ""
        _say(
            f"starting Kubernetes {toolchain.version}{with_features}: etcd, kube-apiserver, "
            f"kube-controller-manager, kube-scheduler and KWOK in {cluster.directory}"
        )
        cluster.start(features=args.feature)
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
        _say(f"{component.name:24} {state:8} pid {component.pid:<8} log {component.log}")
    ready = cluster.is_ready()
    _say(f"API server {cluster.server}: {'ready' if ready else 'not ready'}")
    if features := cluster.features:
        _say(f"features {', '.join(feature.name for feature in features)}")
    _say(f"kubeconfig {cluster.kubeconfig}")
    return 0 if ready and all(c.running for c in components) else 1
