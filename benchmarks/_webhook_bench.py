"""Helpers of the webhook benchmarks (webhook_throughput.py, delete_latency.py).

`ptol webhook` and the bare aiohttp yardstick as child processes (pinned to a CPU if asked), plain HTTPS
calls to them on loopback, their CPU time and /metrics, AdmissionReviews as kube-apiserver sends them,
a pod of realistic size, raw JSON from the API server, and percentiles.
"""

from __future__ import annotations

import json
import math
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Awaitable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the repository root on the path, for tests.metrics
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.devcluster.components import ComponentProcess
from preemption_toleration.devcluster.processes import free_port
from preemption_toleration.logs import REGISTERED
from tests.metrics import total

BENCHMARKS = Path(__file__).resolve().parent
ROOT = BENCHMARKS.parent
CRD_FILE = ROOT / "crds" / "preemptiontolerationpolicies.yaml"
HOST = "127.0.0.1"
# The servers under test answer on loopback with certificates of their own making: not verified here.
_UNVERIFIED = ssl.create_default_context()
_UNVERIFIED.check_hostname = False
_UNVERIFIED.verify_mode = ssl.CERT_NONE


def https(url: str, body: bytes | None = None, timeout: float = 5.0) -> tuple[int, bytes]:
    """GET (or POST `body` as JSON to) a loopback HTTPS URL: (status, body)."""
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=_UNVERIFIED) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def wait_ok(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 120.0) -> None:
    """Wait until `url` answers 200; exit with the log's name if the server dies or takes too long."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{url}: the server exited ({process.returncode}); log: {log}")
        try:
            if https(url, timeout=2)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} not OK within {timeout:.0f} s; log: {log}")


def pin(pid: int, cpu: int | None) -> None:
    """Run `pid` on one CPU (None: leave it where it is)."""
    if cpu is not None:
        os.sched_setaffinity(pid, {cpu})


def pin_control_plane(cluster: LocalCluster, cpu: int | None) -> None:
    """Move every thread of the control plane's processes (Go runs many) to `cpu`: off the CPU whose time
    the servers under test are measured on, where its background work (leases, heartbeats, etcd) would
    evict their caches at random moments."""
    if cpu is None:
        return
    for component in cluster.status():
        if not component.running:
            continue
        for task in Path(f"/proc/{component.pid}/task").iterdir():
            try:
                os.sched_setaffinity(int(task.name), {cpu})
            except ProcessLookupError:  # a thread that has just ended
                continue


@contextmanager
def ptol_webhook(
    cluster: LocalCluster,
    *,
    register: bool = False,
    cpu: int | None = None,
    log_name: str = "ptol-webhook.log",
    extra_args: Sequence[str] = (),
    ready_timeout: float = 120.0,
    code: str | None = None,
) -> Iterator[tuple[str, int]]:
    """`ptol webhook` (guard enforced) on a free loopback port, caches synced: (base URL, pid).

    With `register`, its webhook configurations call it by URL (and are removed when it stops). With
    `code`, the package of another checkout at that path runs instead of this one's."""
    port = free_port()
    base = f"https://{HOST}:{port}"
    extra = ["--register-url", base] if register else []
    process = ComponentProcess(
        "webhook",
        cluster.kubeconfig,
        cluster.logs_dir / log_name,
        "--host",
        HOST,
        "--port",
        str(port),
        "--guard",
        "enforce",
        *extra,
        *extra_args,
        # another checkout's package first on the path, and not this one's (-P: no working directory on it)
        launcher=(sys.executable, "-P", "-m", "preemption_toleration") if code else (),
        env={"PYTHONPATH": code} if code else None,
    )
    since = process.start()
    try:
        assert process.process is not None
        pin(process.process.pid, cpu)
        if register:
            process.wait_for(REGISTERED, since, timeout=ready_timeout)
        wait_ok(f"{base}/readyz", process.process, process.log_path, timeout=ready_timeout)
        yield base, process.process.pid
    finally:
        process.stop()


@contextmanager
def bare_webhook(log: Path, *, cpu: int | None = None, ca_file: Path | None = None) -> Iterator[tuple[str, int]]:
    """benchmarks/_bare_webhook.py on a free loopback port: (base URL, pid). With `ca_file`, its CA's
    certificate is written there before it serves."""
    port = free_port()
    ca = ["--ca-file", str(ca_file)] if ca_file is not None else []
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, str(BENCHMARKS / "_bare_webhook.py"), "--port", str(port), *ca],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        pin(process.pid, cpu)
        base = f"https://{HOST}:{port}"
        wait_ok(f"{base}/healthz", process, log)
        yield base, process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14 and 15


def served(base: str, endpoint: str) -> tuple[float, float]:
    """(requests answered, seconds spent answering them) on `endpoint` of `ptol webhook` at `base`."""
    status, text = https(f"{base}/metrics")
    if status != 200:
        raise RuntimeError(f"{base}/metrics answered {status}")
    page = text.decode()
    return (
        total(page, "ptol_webhook_requests_total", endpoint=endpoint),
        total(page, "ptol_webhook_request_seconds_sum", endpoint=endpoint),
    )


def review(
    operation: str,
    gvk: tuple[str, str, str],
    gvr: tuple[str, str, str],
    user: tuple[str, list[str]],
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
    options: dict[str, Any],
    sub_resource: str | None = None,
) -> dict[str, Any]:
    """An AdmissionReview as kube-apiserver sends it (admission.k8s.io/v1)."""
    kind = dict(zip(("group", "version", "kind"), gvk, strict=True))
    resource = dict(zip(("group", "version", "resource"), gvr, strict=True))
    metadata = (obj or old or {})["metadata"]
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": metadata["name"],
        "operation": operation,
        "userInfo": {"username": user[0], "groups": user[1]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", **options},
    }
    if "namespace" in metadata:
        request["namespace"] = metadata["namespace"]
    if sub_resource:
        request["subResource"] = request["requestSubResource"] = sub_resource
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}


def decision(base: str, path: str, body: bytes) -> str:
    """What the server answers to one request (and a check that it is a 200 for this uid)."""
    status, answer = https(base + path, body)
    response = json.loads(answer).get("response", {}) if status == 200 else {}
    if status != 200 or response.get("uid") != json.loads(body)["request"]["uid"]:
        raise SystemExit(f"{base}{path} answered {status}: {answer[:500]!r}")
    words = ["allowed" if response["allowed"] else f"denied {response['status']['code']}"]
    return "+".join(words + ["patch"] * bool(response.get("patch")) + ["warnings"] * bool(response.get("warnings")))


def log_problems(log: Path) -> list[str]:
    """The warnings, errors and tracebacks in a component's log."""
    lines = log.read_text(errors="replace").splitlines()
    return [line for line in lines if " WARNING " in line or " ERROR " in line or "Traceback" in line]


def install_crd(cluster: LocalCluster) -> None:
    """Our CRD, established: the webhook server watches the policies."""
    subprocess.run(cluster.kubectl_argv("apply", "-f", str(CRD_FILE)), check=True, capture_output=True)
    subprocess.run(
        cluster.kubectl_argv(
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/preemptiontolerationpolicies.preemption-toleration.dev",
        ),
        check=True,
        capture_output=True,
    )


async def raw(call: Awaitable[Any]) -> dict[str, Any]:
    """The JSON of a kubernetes_asyncio call made with `_preload_content=False`, exactly as the API sent it."""
    response = await call
    try:
        return dict(json.loads(await response.read()))
    finally:
        response.release()


OWNER_NAME = "resnet152-run-42"
OWNER_UID = "0f4c9a43-2f64-4a5e-9a3c-77c54bb2f1a6"  # of pods that are never stored in an API server


async def create_owner(api: ApiClient, namespace: str) -> str:
    """The uid of the object the stored pods name as their owner, created: the garbage collector deletes a
    pod whose owner does not exist. A ConfigMap, since a Job's controller would release or delete them."""
    body = {"metadata": {"name": OWNER_NAME}, "data": {"epochs": "90"}}
    created = await client.CoreV1Api(api).create_namespaced_config_map(namespace, body)
    return str(created.metadata.uid)


def realistic_pod(
    name: str,
    *,
    node: str | None = None,
    priority_class: str | None = None,
    scheduler: str | None = None,
    owner_uid: str = OWNER_UID,
) -> dict[str, Any]:
    """A training job's pod as a controller writes it: labels, owner, env, probes, volumes, a sidecar.

    With the API server's managedFields and KWOK's status it weighs a few KB, like a real one. A pod stored in
    an API server needs `owner_uid` from `create_owner`."""
    env: list[dict[str, Any]] = [
        {"name": f"TRAINING_{key}", "value": value}
        for key, value in (
            ("DATASET", "s3://datasets/imagenet-21k/shards"),
            ("EPOCHS", "90"),
            ("BATCH_SIZE", "256"),
            ("LEARNING_RATE", "0.1"),
            ("CHECKPOINT_DIR", "/checkpoints/resnet152"),
            ("LOG_LEVEL", "info"),
        )
    ]
    env += [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    ]
    main = {
        "name": "trainer",
        "image": "registry.example/ml/trainer:2024.11.3",
        "command": ["python", "-m", "train"],
        "args": ["--config=/etc/trainer/config.yaml", "--resume"],
        "env": env,
        "ports": [{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/trainer"},
            {"name": "checkpoints", "mountPath": "/checkpoints"},
        ],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 9090}, "periodSeconds": 10},
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "allowPrivilegeEscalation": False},
    }
    sidecar = {
        "name": "log-shipper",
        "image": "registry.example/infra/log-shipper:1.9",
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
        "volumeMounts": [{"name": "checkpoints", "mountPath": "/checkpoints", "readOnly": True}],
    }
    spec: dict[str, Any] = {
        "containers": [main, sidecar],
        "terminationGracePeriodSeconds": 30,
        "restartPolicy": "Never",
        "volumes": [
            {"name": "config", "configMap": {"name": "trainer-config"}},
            {"name": "checkpoints", "emptyDir": {}},
        ],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if scheduler:
        spec["schedulerName"] = scheduler
    labels = {
        "app.kubernetes.io/name": "trainer",
        "app.kubernetes.io/part-of": "resnet152",
        "team": "vision",
        "job-name": "resnet152-run-42",
        "controller-uid": owner_uid,
    }
    annotations = {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9090",
        "kubectl.kubernetes.io/default-container": "trainer",
    }
    owner = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": OWNER_NAME,
        "controller": True,
        "uid": owner_uid,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": spec,
        "metadata": {"name": name, "labels": labels, "annotations": annotations, "ownerReferences": [owner]},
    }


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..100) of `values`."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]
