"""The image users install: its size, and how long `ptol` takes to start in it against the same command from the
checkout's virtual environment on the host, side by side in one run.

Builds the Dockerfile with podman on the Debian base the tests use (devcluster/image.py; podman's layer cache
makes a rebuild of unchanged sources quick), then times, `--repeat` times each and alternating:

- `ptol --version` in a container run as the chart runs it (read-only root, UID 65532, no capability):
  podman's own start and stop included, which a kubelet's container runtime has too;
- `ptol --version` from `.venv/bin/ptol` on the host: the interpreter and the imports alone;
- `ptol webhook --help` in the container and on the host: the webhook server's imports (aiohttp,
  kubernetes_asyncio, pydantic) as well.

Reports the image's size, each median and the ratio. Saves the figures to benchmarks/results/image.json. Run:

    .venv/bin/python benchmarks/image.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import save_results, shown

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from preemption_toleration.devcluster import image as images  # noqa: E402


def seconds(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=env, timeout=300)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tag = images.build_image(ROOT)
    size = images.image_facts(tag).size_bytes
    env = {**os.environ, "CONTAINERS_CONF": str(images.containers_conf())}
    host = [str(ROOT / ".venv" / "bin" / "ptol")]
    commands = {"--version": ["--version"], "webhook --help": ["webhook", "--help"]}
    figures: dict[str, dict[str, float]] = {}
    for label, command in commands.items():
        in_container, on_host = [], []
        for round_ in range(args.repeat):
            container = images.run_argv(tag, f"ptol-bench-{os.getpid()}-{round_}", [], {})
            in_container.append(seconds([*container, *command], env))
            on_host.append(seconds([*host, *command], env))
        figures[label] = {
            "container_s": statistics.median(in_container),
            "host_s": statistics.median(on_host),
        }
        figures[label]["ratio"] = figures[label]["container_s"] / figures[label]["host_s"]
    print(f"image {tag}: {size / 1e6:.0f} MB")
    for label, figure in figures.items():
        print(
            f"ptol {label}: {figure['container_s']:.2f} s in the container, {figure['host_s']:.2f} s on the host "
            f"({figure['ratio']:.1f} ×), median of {args.repeat}"
        )
    path = save_results("image", {"image": tag, "size_bytes": size, "repeat": args.repeat, "start": figures})
    print(f"saved to {shown(path)}")


if __name__ == "__main__":
    main()
