"""A local control plane on loopback: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK.

KWOK (SIG Scheduling's node simulator) plays the kubelet of every Node: it keeps each Ready with its Lease
renewed, marks bound pods Running and Ready and finishes their graceful deletion. The controller-manager runs
the controllers a real cluster has (service accounts and their tokens, namespace lifecycle, garbage
collection, disruption budgets, node lifecycle).

Everything lives in one directory: certificates (`pki/`), etcd data, logs (`logs/`), kubeconfigs and
`cluster.json`, which records the processes so that another shell can find and stop them.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen
from typing import Any

import yaml
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.config import new_client_from_config

from preemption_toleration import pki
from preemption_toleration.devcluster import kueue, processes, stages
from preemption_toleration.devcluster.features import (
    KUEUE,
    ClusterFeature,
    features_named,
    gate_flags,
    runtime_config_flags,
)
from preemption_toleration.devcluster.processes import ProcessRecord
from preemption_toleration.devcluster.toolchain import KueueBuild, Toolchain, ensure_kueue, ensure_toolchain

HOST = "127.0.0.1"
ADMIN_USER = "ptol-admin"
SCHEDULER_USER = "system:kube-scheduler"
# Kueue's user as its release manifests deploy it (its service account): what its requests carry as userInfo
KUEUE_USER = "system:serviceaccount:kueue-system:kueue-controller-manager"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
SCHEDULER_CONFIG_API = "kubescheduler.config.k8s.io/v1"
STATE_FILE = "cluster.json"
# Start order; stopped in reverse. Every cluster runs the first; a feature adds its own (`FEATURE_PROCESSES`).
CONTROL_PLANE_PROCESSES = (
    "service-proxy",
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
)
FEATURE_PROCESSES = ("kueue",)
PROCESS_NAMES = CONTROL_PLANE_PROCESSES + FEATURE_PROCESSES


logger = logging.getLogger(__name__)


class ClusterError(RuntimeError):
    """A component failed to start or the directory holds no cluster; the message says which."""


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    pid: int
    running: bool
    log: str


class LocalCluster:
    """The control plane in `directory`.

    `start()` starts everything and returns when the API server's /readyz and the /healthz of the
    controller-manager, the scheduler and KWOK are OK (`nodes.create_node` then waits for a Node to be
    usable); `stop()` stops every process it recorded. `LocalCluster(directory)` on a directory where a
    cluster already runs (started by another process) attaches to it: `status()` and `stop()` work.
    Use it as a context manager to stop the cluster on exit, including on Ctrl-C.
    """

    def __init__(self, directory: str | Path, toolchain: Toolchain | None = None) -> None:
        self.directory = Path(directory).resolve()
        self._toolchain = toolchain
        self._records: dict[str, ProcessRecord] = {}
        self._kueue_build: KueueBuild | None = None  # with the kueue feature: what `restart_kueue` starts again
        self._popens: dict[str, Popen[bytes]] = {}
        self._state: dict[str, Any] = {}
        self._die_with_parent = False
        self._load_state()

    # --- paths and endpoints -----------------------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        """Admin kubeconfig (client certificate in group system:masters)."""
        return self.directory / "kubeconfig"

    @property
    def pki_dir(self) -> Path:
        return self.directory / "pki"

    @property
    def logs_dir(self) -> Path:
        return self.directory / "logs"

    @property
    def ca_cert_file(self) -> Path:
        return self.pki_dir / "ca.crt"

    @property
    def ca(self) -> pki.CertKeyPair:
        """The cluster CA: it signs the API server's certificate and every client certificate."""
        return pki.CertKeyPair(self.ca_cert_file.read_bytes(), (self.pki_dir / "ca.key").read_bytes())

    @property
    def ca_bundle(self) -> str:
        """The CA certificate, base64-encoded: the `caBundle` of a webhook's `clientConfig`."""
        return _b64(self.ca_cert_file.read_bytes())

    @property
    def server(self) -> str:
        """The API server's URL, e.g. `https://127.0.0.1:PORT`."""
        return self._recorded("server")

    @property
    def tied_to_starter(self) -> bool:
        """Its processes end with the thread that started them (a test session, `ptol demo`): only that
        process may restart them, since a restarted one would outlive it."""
        return bool(self._state.get("tiedToStarter", False))

    @property
    def features(self) -> tuple[ClusterFeature, ...]:
        """The optional features it runs with (`devcluster.features`)."""
        return features_named(self._state.get("features", ()), self.kubernetes_version)

    @property
    def kubernetes_version(self) -> str:
        """The release it runs, e.g. `1.37.2`."""
        return self._recorded("kubernetesVersion")

    def _recorded(self, key: str) -> str:
        """A value `cluster.json` records of the running cluster."""
        try:
            return str(self._state[key])
        except KeyError:
            raise ClusterError(f"no cluster in {self.directory}") from None

    @property
    def toolchain(self) -> Toolchain:
        if self._toolchain is None:
            self._toolchain = ensure_toolchain(version=self._state.get("kubernetesVersion"))
        return self._toolchain

    # --- lifecycle -------------------------------------------------------------------------------------

    def start(
        self,
        *,
        timeout: float = 120.0,
        die_with_parent: bool = False,
        extenders: Sequence[Mapping[str, Any]] = (),
        features: Sequence[str] = (),
    ) -> None:
        """Start etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK.

        `die_with_parent` ties the processes to the calling thread (for test sessions: they go away
        even if the test run is killed); the CLI leaves it off so the cluster outlives `ptol dev cluster up`.
        `extenders` are scheduler extender entries (KubeSchedulerConfiguration v1 `extenders`). `features`
        names optional features (`devcluster.features`, e.g. `pod-groups`); ClusterError names one the
        release does not offer.
        """
        if self.running_components():
            raise ClusterError(f"a cluster is already running in {self.directory}; stop it first")
        toolchain = self.toolchain  # may build: before anything is started
        try:
            chosen = features_named(features, toolchain.version)
        except ValueError as error:
            raise ClusterError(str(error)) from None
        kueue_build = ensure_kueue(logger.info) if KUEUE in chosen else None  # may build: before anything starts
        self._die_with_parent = die_with_parent
        self._reset_directory()
        names = ("etcd", "etcd-peer", "apiserver")
        ports = {name: processes.free_port() for name in names}
        self._state = {
            "server": f"https://{HOST}:{ports['apiserver']}",
            "ports": ports,
            "tiedToStarter": die_with_parent,
            "kubernetesVersion": toolchain.version,
            "features": [feature.name for feature in chosen],
        }
        try:
            self._write_pki_and_kubeconfigs()
            self._start_service_proxy(timeout)
            self._start_etcd(toolchain, ports)
            self._start_apiserver(toolchain, ports)
            self._wait_api_ready(timeout)
            self._start_controller_manager(toolchain, timeout)
            self._start_scheduler(toolchain, extenders, timeout)
            self._start_kwok(toolchain, timeout)
            if kueue_build is not None:
                self._start_kueue(kueue_build, timeout)
        except BaseException:  # includes Ctrl-C: leave nothing behind
            self.stop()
            raise

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every recorded process (process groups), newest first; idempotent."""
        for name in reversed(PROCESS_NAMES):
            record = self._records.pop(name, None)
            if record is not None:
                processes.terminate(record, timeout=timeout, popen=self._popens.pop(name, None))
            self._save_state()
        state_file = self.directory / STATE_FILE
        if state_file.exists() and not self._records:
            state_file.unlink()

    def restart_scheduler(self, extenders: Sequence[Mapping[str, Any]] = (), *, timeout: float = 60.0) -> None:
        """Restart kube-scheduler with these extenders (e.g. one with a `preemptVerb`)."""
        record = self._records.pop("kube-scheduler", None)
        if record is not None:
            processes.terminate(record, popen=self._popens.pop("kube-scheduler", None))
        self._start_scheduler(self.toolchain, extenders, timeout)

    def restart_kueue(
        self, feature_gates: Mapping[str, bool] | None = None, *, fair_sharing: bool = False, timeout: float = 120.0
    ) -> None:
        """Restart Kueue's controller manager (`--feature kueue`) with these feature gates (None: the test bed's,
        `devcluster.kueue.FEATURE_GATES`) and, with `fair_sharing`, its preemption by fair sharing, its webhooks
        registered again."""
        build = self._kueue_build
        if build is None:
            raise ClusterError("Kueue is not running in this cluster: start it with the kueue feature")
        record = self._records.pop("kueue", None)
        if record is not None:
            processes.terminate(record, popen=self._popens.pop("kueue", None))
        gates = kueue.FEATURE_GATES if feature_gates is None else feature_gates
        self._run_kueue(build, timeout, gates, fair_sharing)

    def restart_apiserver(self, *, timeout: float = 60.0) -> None:
        """Stop kube-apiserver and start it again on the same port, with etcd's data kept: every client's
        watches and connections break, as in a control-plane upgrade."""
        self.stop_apiserver()
        self.start_apiserver(timeout=timeout)

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver alone (an outage: every client's connections are refused until started)."""
        record = self._records.pop("kube-apiserver", None)
        if record is not None:
            processes.terminate(record, popen=self._popens.pop("kube-apiserver", None))

    def start_apiserver(self, *, timeout: float = 60.0) -> None:
        """Start kube-apiserver again on its port, with etcd's data, after `stop_apiserver`."""
        self._start_apiserver(self.toolchain, self._state["ports"])
        self._wait_api_ready(timeout)

    def status(self) -> list[ComponentStatus]:
        return [
            ComponentStatus(r.name, r.pid, processes.is_running(r), r.log)
            for name in PROCESS_NAMES
            if (r := self._records.get(name)) is not None
        ]

    def running_components(self) -> list[str]:
        return [s.name for s in self.status() if s.running]

    def is_ready(self) -> bool:
        """The API server answers /readyz with `ok`."""
        try:
            return self._get("/readyz") == "ok"
        except (OSError, ClusterError):
            return False

    def __enter__(self) -> LocalCluster:
        if not self.running_components():
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- clients -----------------------------------------------------------------------------------------

    async def api_client(self) -> ApiClient:
        """A kubernetes_asyncio ApiClient for the admin; close it (`async with` or `await .close()`)."""
        return await new_client_from_config(config_file=str(self.kubeconfig))

    def kubectl_argv(self, *args: str) -> list[str]:
        return [str(self.toolchain.kubectl), "--kubeconfig", str(self.kubeconfig), *args]

    def write_kubeconfig(self, path: str | Path, user: str, groups: Sequence[str] = ()) -> Path:
        """Write a kubeconfig authenticating as `user` in `groups` by a client certificate."""
        cert = pki.issue_client_cert(self.ca, user, groups)
        path = Path(path)
        path.write_text(yaml.safe_dump(self._kubeconfig_dict(user, cert)))
        path.chmod(0o600)
        return path

    def route_service(self, cluster_ip: str, port: int, target: str | Sequence[str]) -> None:
        """Send the API server's connections to a Service's `cluster_ip`:`port` to `target` ("host:port"), or
        to each of several in turn, as kube-proxy would to the Service's pods (devcluster/service_proxy.py)."""
        routes = json.loads(self._routes_file.read_text())
        routes[f"{cluster_ip}:{port}"] = target if isinstance(target, str) else list(target)
        staging = self._routes_file.with_suffix(".tmp")
        staging.write_text(json.dumps(routes))
        os.replace(staging, self._routes_file)

    # --- internals ---------------------------------------------------------------------------------------

    @property
    def _routes_file(self) -> Path:
        return self.directory / "service-routes.json"

    def _start_service_proxy(self, timeout: float) -> None:
        """The API server's egress to Services (its `cluster` egress selection) goes through this proxy."""
        self._routes_file.write_text("{}")
        socket_path = self.directory / "service-proxy.sock"
        if len(str(socket_path)) > 100:  # a Unix socket's path holds at most 107 bytes
            raise ClusterError(f"{self.directory} is too long a path for a Unix socket: pick a shorter one")
        self._spawn(
            "service-proxy",
            [
                sys.executable,
                "-m",
                "preemption_toleration.devcluster.service_proxy",
                f"--socket={socket_path}",
                f"--routes={self._routes_file}",
            ],
        )

        def listening() -> bool:
            self._check_alive("service-proxy")
            with socket.socket(socket.AF_UNIX) as probe:
                probe.settimeout(1)
                probe.connect(str(socket_path))
                return True

        self._wait("the service proxy", listening, timeout)
        egress = {
            "apiVersion": "apiserver.k8s.io/v1beta1",
            "kind": "EgressSelectorConfiguration",
            "egressSelections": [
                {
                    "name": "cluster",
                    "connection": {
                        "proxyProtocol": "HTTPConnect",
                        "transport": {"uds": {"udsName": str(socket_path)}},
                    },
                }
            ],
        }
        (self.directory / "egress-selector.yaml").write_text(yaml.safe_dump(egress))

    def _reset_directory(self) -> None:
        ours = [STATE_FILE, "kubeconfig", "pki", "logs"]
        if (
            self.directory.is_dir()
            and any(self.directory.iterdir())
            and not any((self.directory / name).exists() for name in ours)
        ):
            raise ClusterError(f"{self.directory} is not empty and holds no local cluster: pick another")
        self.directory.mkdir(parents=True, exist_ok=True)
        for sub in ("etcd", "pki", "logs"):
            shutil.rmtree(self.directory / sub, ignore_errors=True)
        self.pki_dir.mkdir(mode=0o700)
        self.logs_dir.mkdir()

    def _write_pki_and_kubeconfigs(self) -> None:
        ca = pki.generate_ca("ptol-devcluster-ca")
        self._write(self.ca_cert_file, ca.cert_pem)
        self._write(self.pki_dir / "ca.key", ca.key_pem)
        serving = pki.issue_serving_cert(
            ca,
            "kube-apiserver",
            dns_names=["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
            ip_addresses=[HOST],
        )
        self._write(self.pki_dir / "apiserver.crt", serving.cert_pem)
        self._write(self.pki_dir / "apiserver.key", serving.key_pem)
        sa_key = pki.generate_private_key_pem()
        self._write(self.pki_dir / "service-account.key", sa_key)
        # The API server reads PKCS#8 private keys for signing but only public keys for verifying.
        self._write(self.pki_dir / "service-account.pub", pki.public_key_pem(sa_key))
        self.write_kubeconfig(self.kubeconfig, ADMIN_USER, ["system:masters"])
        self.write_kubeconfig(self.directory / "scheduler.kubeconfig", SCHEDULER_USER)
        self.write_kubeconfig(self.directory / "controller-manager.kubeconfig", CONTROLLER_MANAGER_USER)

    def _kubeconfig_dict(self, user: str, cert: pki.CertKeyPair) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "ptol-dev",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority-data": _b64(self.ca_cert_file.read_bytes()),
                    },
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate-data": _b64(cert.cert_pem),
                        "client-key-data": _b64(cert.key_pem),
                    },
                }
            ],
            "contexts": [{"name": "ptol-dev", "context": {"cluster": "ptol-dev", "user": user}}],
            "current-context": "ptol-dev",
        }

    def _start_etcd(self, toolchain: Toolchain, ports: Mapping[str, int]) -> None:
        client = f"http://{HOST}:{ports['etcd']}"
        peer = f"http://{HOST}:{ports['etcd-peer']}"
        self._spawn(
            "etcd",
            [
                str(toolchain.etcd),
                "--name=ptol",
                f"--data-dir={self.directory / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=ptol={peer}",
                "--logger=zap",
            ],
        )

    def _start_apiserver(self, toolchain: Toolchain, ports: Mapping[str, int]) -> None:
        pki_dir = self.pki_dir
        self._spawn(
            "kube-apiserver",
            [
                str(toolchain.kube_apiserver),
                f"--etcd-servers=http://{HOST}:{ports['etcd']}",
                f"--bind-address={HOST}",
                f"--advertise-address={HOST}",
                f"--secure-port={ports['apiserver']}",
                f"--tls-cert-file={pki_dir / 'apiserver.crt'}",
                f"--tls-private-key-file={pki_dir / 'apiserver.key'}",
                f"--client-ca-file={self.ca_cert_file}",
                # Published to the scheduler's delegated authentication (it complains when absent);
                # no client has a certificate with the allowed name.
                f"--requestheader-client-ca-file={self.ca_cert_file}",
                "--requestheader-allowed-names=ptol-front-proxy",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                "--authorization-mode=Node,RBAC",
                # The release's default admission plugins (as every cluster has), and NodeRestriction as
                # kubeadm adds it.
                "--enable-admission-plugins=NodeRestriction",
                f"--service-account-key-file={pki_dir / 'service-account.pub'}",
                f"--service-account-signing-key-file={pki_dir / 'service-account.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.0.0.0/24",
                # Webhooks and APIs behind a Service are reached through the service proxy.
                f"--egress-selector-config-file={self.directory / 'egress-selector.yaml'}",
                # The loopback address is not a valid endpoint of the `kubernetes` Service.
                "--endpoint-reconciler-type=none",
                "--allow-privileged=true",
                "--profiling=false",
                *gate_flags(self.features),
                *runtime_config_flags(self.features),
                "--v=1",
            ],
        )

    def _start_controller_manager(self, toolchain: Toolchain, timeout: float) -> None:
        kubeconfig = self.directory / "controller-manager.kubeconfig"
        pki_dir = self.pki_dir

        def spawn(port: int) -> None:
            self._spawn(
                "kube-controller-manager",
                [
                    str(toolchain.kube_controller_manager),
                    f"--kubeconfig={kubeconfig}",
                    f"--authentication-kubeconfig={kubeconfig}",
                    f"--authorization-kubeconfig={kubeconfig}",
                    f"--bind-address={HOST}",
                    f"--secure-port={port}",
                    f"--cert-dir={pki_dir / 'controller-manager'}",
                    "--leader-elect=false",
                    # Each controller uses its own ServiceAccount in kube-system, as in a kubeadm cluster.
                    "--use-service-account-credentials=true",
                    f"--service-account-private-key-file={pki_dir / 'service-account.key'}",
                    f"--root-ca-file={self.ca_cert_file}",
                    f"--cluster-signing-cert-file={self.ca_cert_file}",
                    f"--cluster-signing-key-file={pki_dir / 'ca.key'}",
                    *gate_flags(self.features),
                    "--v=1",
                ],
            )

        self._start_on_own_port("kube-controller-manager", "controller-manager", spawn, timeout)

    def _start_scheduler(self, toolchain: Toolchain, extenders: Sequence[Mapping[str, Any]], timeout: float) -> None:
        kubeconfig = self.directory / "scheduler.kubeconfig"
        config: dict[str, Any] = {
            "apiVersion": SCHEDULER_CONFIG_API,
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(kubeconfig)},
            "leaderElection": {"leaderElect": False},
        }
        if extenders:
            config["extenders"] = [self._with_client_certificate(e, kubeconfig) for e in extenders]
        config_file = self.directory / "scheduler-config.yaml"
        config_file.write_text(yaml.safe_dump(config))

        def spawn(port: int) -> None:
            self._spawn(
                "kube-scheduler",
                [
                    str(toolchain.kube_scheduler),
                    f"--config={config_file}",
                    f"--bind-address={HOST}",
                    f"--secure-port={port}",
                    f"--authentication-kubeconfig={kubeconfig}",
                    f"--authorization-kubeconfig={kubeconfig}",
                    f"--cert-dir={self.pki_dir / 'scheduler'}",
                    *gate_flags(self.features),
                    "--v=2",
                ],
            )

        self._start_on_own_port("kube-scheduler", "scheduler", spawn, timeout)

    @staticmethod
    def _with_client_certificate(extender: Mapping[str, Any], kubeconfig: Path) -> dict[str, Any]:
        """An HTTPS extender entry with the scheduler's own client certificate (that of its kubeconfig, signed
        by the cluster's CA) as `certData`/`keyData`, unless the entry names one: as a kubeadm admin gives
        kube-scheduler's identity to an extender that authenticates its caller."""
        entry = dict(extender)
        tls = dict(entry.get("tlsConfig") or {})
        if entry.get("enableHTTPS") and "certData" not in tls and "certFile" not in tls:
            user = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]
            tls["certData"], tls["keyData"] = user["client-certificate-data"], user["client-key-data"]
            entry["tlsConfig"] = tls
        return entry

    def _start_on_own_port(
        self,
        name: str,
        port_key: str,
        spawn: Callable[[int], None],
        timeout: float,
        *,
        scheme: str = "https",
        path: str = "/healthz",
    ) -> None:
        """Start a component that serves /healthz and wait until it answers `ok`.

        Its port is chosen now, not with the others: in between, outgoing connections of the API server and
        its clients take ports from the same ephemeral range. A port taken anyway (the component exits with
        "address already in use") is replaced, a few times."""
        for attempt in range(1, 4):
            port = processes.free_port()
            self._state["ports"][port_key] = port
            self._save_state()
            try:
                spawn(port)
                self._wait_healthy(name, f"{scheme}://{HOST}:{port}", timeout, path)
                return
            except ClusterError as error:
                log = processes.log_tail(self.logs_dir / f"{name}.log", 5)
                if attempt == 3 or "address already in use" not in log:
                    raise
                self._records.pop(name, None)
                self._popens.pop(name, None)
                logger.warning("%s lost its port (%s); retrying on other ports", name, error)

    def _start_kwok(self, toolchain: Toolchain, timeout: float) -> None:
        kwok_stages = self.directory / "kwok-stages.yaml"
        kwok_stages.write_text(stages.with_keep_running(toolchain.kwok_stages.read_text()))

        def spawn(port: int) -> None:
            # Every Node of the cluster is KWOK's, including one a test or a user applies later.
            self._spawn(
                "kwok",
                [
                    str(toolchain.kwok),
                    f"--kubeconfig={self.kubeconfig}",
                    f"--config={kwok_stages}",
                    "--manage-all-nodes=true",
                    "--node-lease-duration-seconds=40",
                    f"--node-ip={HOST}",
                    f"--server-address={HOST}:{port}",  # for its /healthz (plain HTTP)
                ],
            )

        self._start_on_own_port("kwok", "kwok", spawn, timeout, scheme="http")

    def _start_kueue(self, build: KueueBuild, timeout: float) -> None:
        """Kueue's controller manager (`devcluster.kueue`): its CRDs applied, its serving and metrics certificates
        issued, started, then its webhooks registered once it serves them."""
        home = self.directory / "kueue"
        _remove_tree(home)
        certs, metrics_certs = home / "certs", home / "etc" / "upper" / kueue.METRICS_CERT_DIR.removeprefix("/etc/")
        for folder in (certs, metrics_certs, home / "etc" / "work"):
            folder.mkdir(parents=True, exist_ok=True)
        serving = pki.issue_serving_cert(self.ca, "kueue-webhook", dns_names=["localhost"], ip_addresses=[HOST])
        for folder in (certs, metrics_certs):
            self._write(folder / "tls.crt", serving.cert_pem)
            self._write(folder / "tls.key", serving.key_pem)
        groups = ["system:serviceaccounts", "system:serviceaccounts:kueue-system", "system:masters"]
        self.write_kubeconfig(home / "kueue.kubeconfig", KUEUE_USER, groups)
        self._kubectl("apply", "--server-side", *(f"--filename={crd}" for crd in build.crds))
        self._kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        self._kubectl("create", "namespace", kueue.NAMESPACE)
        self._kueue_build = build
        self._run_kueue(build, timeout, kueue.FEATURE_GATES)

    def _run_kueue(
        self, build: KueueBuild, timeout: float, feature_gates: Mapping[str, bool], fair_sharing: bool = False
    ) -> None:
        """Kueue's manager started (its home, certificates and CRDs in place) and its webhooks registered."""
        home = self.directory / "kueue"
        certs, kubeconfig = home / "certs", home / "kueue.kubeconfig"

        def spawn(health_port: int) -> None:
            # each attempt on fresh ports: a port taken meanwhile makes the manager exit (`_start_on_own_port`)
            ports = self._state["ports"]
            ports["kueue-webhook"], ports["kueue-metrics"] = processes.free_port(), processes.free_port()
            config = home / "config.yaml"
            config.write_text(
                kueue.manager_config(
                    build.manager_config.read_text(),
                    HOST,
                    ports["kueue-webhook"],
                    health_port,
                    ports["kueue-metrics"],
                    str(certs),
                    feature_gates,
                    fair_sharing,
                )
            )
            argv = [str(build.manager), f"--config={config}", f"--kubeconfig={kubeconfig}"]
            etc = home / "etc"
            private = kueue.with_private_etc(str(etc / "upper"), str(etc / "work"), argv, os.geteuid() == 0)
            self._spawn("kueue", private)

        self._start_on_own_port("kueue", "kueue", spawn, timeout, scheme="http", path="/readyz")
        base = f"https://{HOST}:{self._state['ports']['kueue-webhook']}"
        configurations = kueue.webhook_configurations(build.webhooks.read_text(), base, self.ca_bundle)
        self._kubectl("apply", "--filename=-", stdin=yaml.safe_dump_all(configurations))

    def _kubectl(self, *args: str, stdin: str | None = None) -> None:
        try:
            done = subprocess.run(self.kubectl_argv(*args), input=stdin, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired as error:
            raise ClusterError(f"kubectl {' '.join(args[:2])} did not finish within {error.timeout:.0f} s") from None
        if done.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args[:2])} failed: {done.stderr.strip()[-2000:]}")

    def _wait_healthy(self, name: str, base: str, timeout: float, path: str = "/healthz") -> None:
        def healthy() -> bool:
            self._check_alive(name)
            return self._get(path, base, verify=False) == "ok"

        self._wait(f"{name} {path}", healthy, timeout)

    def _wait_api_ready(self, timeout: float) -> None:
        def ready() -> bool:
            self._check_alive("etcd")
            self._check_alive("kube-apiserver")
            return self.is_ready()

        self._wait("kube-apiserver /readyz", ready, timeout)

    def _wait(self, what: str, condition: Any, timeout: float) -> None:
        def safe() -> bool:
            try:
                return bool(condition())
            except OSError:
                return False

        if not processes.wait_until(safe, timeout=timeout, interval=0.25):
            raise ClusterError(f"{what} not OK after {timeout:.0f} s; logs in {self.logs_dir}")

    def _check_alive(self, name: str) -> None:
        record = self._records[name]
        popen = self._popens.get(name)
        if popen is not None:
            popen.poll()
        if not processes.is_running(record):
            raise ClusterError(
                f"{name} exited during start-up; last lines of {record.log}:\n" + processes.log_tail(record.log)
            )

    def _spawn(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> None:
        record, popen = processes.spawn(
            name,
            argv,
            self.logs_dir / f"{name}.log",
            env=env,
            die_with_parent=self._die_with_parent,
        )
        self._records[name] = record
        self._popens[name] = popen
        self._save_state()

    def _get(self, path: str, base: str | None = None, *, verify: bool = True) -> str:
        """GET a health endpoint as the admin (client certificate)."""
        if verify:
            context = ssl.create_default_context(cafile=str(self.ca_cert_file))
        else:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if base is None:
            base = self.server
            context.load_cert_chain(*self._admin_cert_files())
        try:
            with urllib.request.urlopen(base + path, context=context, timeout=5) as response:
                return str(response.read().decode().strip())
        except urllib.error.HTTPError as error:
            return f"HTTP {error.code}"

    def _admin_cert_files(self) -> tuple[str, str]:
        """The admin's certificate and key as files (ssl cannot load them from memory)."""
        cert, key = self.pki_dir / "admin-health.crt", self.pki_dir / "admin-health.key"
        if not cert.exists():
            pair = pki.issue_client_cert(self.ca, ADMIN_USER, ["system:masters"])
            self._write(key, pair.key_pem)
            self._write(cert, pair.cert_pem)
        return str(cert), str(key)

    def _load_state(self) -> None:
        path = self.directory / STATE_FILE
        if not path.exists():
            return
        data = json.loads(path.read_text())
        self._state = {k: v for k, v in data.items() if k != "processes"}
        self._records = {name: ProcessRecord.from_json(r) for name, r in data.get("processes", {}).items()}

    def _save_state(self) -> None:
        if not self.directory.is_dir():
            return
        data = {**self._state, "processes": {n: r.to_json() for n, r in self._records.items()}}
        path = self.directory / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(path)

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        path.write_bytes(data)
        path.chmod(0o600)


def _remove_tree(path: Path) -> None:
    """Removes `path` whole, a directory an overlay mount left without permissions included (its `work/work`)."""

    def writable_again(function: Callable[..., Any], failed: str, _: object) -> None:
        os.chmod(os.path.dirname(failed) or ".", 0o700)
        if os.path.isdir(failed):
            os.chmod(failed, 0o700)
        function(failed)

    if path.exists():
        shutil.rmtree(path, onerror=writable_again)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
