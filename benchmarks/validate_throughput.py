"""`ptol validate` on one large multi-document file, against loading the same file with libyaml alone.

Writes a GitOps-like file of N documents (PriorityClasses with toleration annotations and labels, policies
naming them, Deployments; every document about 370 bytes, so 140,000 documents are about 51 MB, the size of
issue #29's file; one Deployment in seven takes its resources from an anchor, so the alias count runs on
every document), then, each in a fresh process so that peak memory is its own:

- the C loader alone: `yaml.load_all(file, Loader=yaml.CSafeLoader)`, every document built and dropped;
- `ptol validate -f FILE`'s work (ManifestCheck and the conflicts, findings printed to /dev/null).

Reports seconds, the ratio (target: at most 3 ×) and peak RSS for each size (target: flat in the number of
documents). Saves the figures to benchmarks/results/validate_throughput.json. Run:

    .venv/bin/python benchmarks/validate_throughput.py [--sizes 35000,140000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import save_results, shown


def document(i: int) -> str:
    kind = i % 7
    if kind in (0, 1, 2):
        return f"""apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: class-{i}
  labels:
    team: team-{i % 50}
  annotations:
    preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority: "10000"
    preemption-toleration.scheduling.x-k8s.io/toleration-seconds: "600"
value: 8000
description: A class of team {i % 50}, guaranteed ten minutes against priorities below 10000.
"""
    if kind == 3:
        return f"""apiVersion: preemption-toleration.dev/v1alpha1
kind: PreemptionTolerationPolicy
metadata:
  name: policy-{i}
spec:
  priorityClassName: class-{i - 1}-batch
  minimumPreemptablePriority: 10000
  tolerationSeconds: 600
"""
    resources = "&resources {requests: {cpu: 100m, memory: 128Mi}}" if kind == 4 else "*resources"
    body = f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  namespace: team-{i % 50}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: app-{i}}}
  template:
    metadata:
      labels: {{app: app-{i}}}
    spec:
      priorityClassName: class-{i - 4}
      containers:
      - name: main
        image: registry.example/app:1.{i}
        resources: RESOURCES
"""
    if kind != 4:  # an alias needs its anchor in the same document
        body = body.replace(
            "      - name: main\n", "      - name: side\n        resources: &resources {}\n      - name: main\n"
        )
    return body.replace("RESOURCES", resources)


def write_file(path: Path, count: int) -> int:
    with path.open("w") as out:
        for i in range(count):
            if i:
                out.write("---\n")
            out.write(document(i))
    return path.stat().st_size


def child(mode: str, file: str) -> None:
    """In a fresh process: time one mode, print seconds and peak RSS as JSON."""
    import os

    import yaml

    from preemption_toleration.governance.conflicts import between_documents
    from preemption_toleration.validation.documents import ManifestCheck

    started = time.perf_counter()
    if mode == "load":
        with open(file, "rb") as stream:
            documents = sum(1 for _ in yaml.load_all(stream, Loader=yaml.CSafeLoader))
        findings = 0
    else:
        check = ManifestCheck()
        findings = 0
        with open(file, "rb") as stream, open(os.devnull, "w") as sink:
            for located in check.check_stream(file, stream):
                print(located.render(), file=sink)
                findings += 1
            for located in check.finish(between_documents):
                print(located.render(), file=sink)
                findings += 1
        documents = check.summary.documents
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps({"seconds": seconds, "peak_rss_mib": peak_kib / 1024, "documents": documents, "findings": findings})
    )


def measure(mode: str, file: Path) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(file)], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(output.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="35000,140000")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for count in (int(size) for size in args.sizes.split(",")):
            file = Path(directory) / f"manifests-{count}.yaml"
            size = write_file(file, count)
            load = measure("load", file)
            validate = measure("validate", file)
            rows.append(
                {
                    "documents": count,
                    "megabytes": round(size / 1e6, 1),
                    "c_loader_s": round(load["seconds"], 2),
                    "validate_s": round(validate["seconds"], 2),
                    "ratio": round(validate["seconds"] / load["seconds"], 2),
                    "c_loader_peak_rss_mib": round(load["peak_rss_mib"], 1),
                    "validate_peak_rss_mib": round(validate["peak_rss_mib"], 1),
                    "findings": validate["findings"],
                }
            )
            file.unlink()
    print(
        f"{'documents':>10} {'MB':>6} {'C loader s':>11} {'validate s':>11} {'ratio':>6} "
        f"{'RSS load MiB':>13} {'RSS validate MiB':>17}"
    )
    for row in rows:
        print(
            f"{row['documents']:>10} {row['megabytes']:>6} {row['c_loader_s']:>11} {row['validate_s']:>11} "
            f"{row['ratio']:>6} {row['c_loader_peak_rss_mib']:>13} {row['validate_peak_rss_mib']:>17}"
        )
    print("targets: ratio <= 3; peak RSS flat in the number of documents")
    print(f"saved to {shown(save_results('validate_throughput', {'rows': rows}))}")


if __name__ == "__main__":
    main()
