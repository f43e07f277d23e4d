"""The project's image, built from the repository's Dockerfile with podman, and run as the chart runs it.

No container registry is reachable from the test machines, so the Dockerfile's default base (a Python image)
cannot be pulled. The base is made here instead: a Debian bookworm root filesystem with Debian's Python,
made by mmdebstrap from the machine's own Debian sources, cached outside the repository and imported into
podman. The Dockerfile takes it as its `BASE_IMAGE` build argument, so the file built is the one users build.

podman runs containers with runc and without default ulimits (`containers_conf`): crun refuses the
machines' cgroups in hybrid mode, and podman's default ulimits exceed their hard limits.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from preemption_toleration.devcluster.toolchain import ToolchainError, cache_root

BASE_IMAGE = "localhost/ptol-debian-base:bookworm"
IMAGE = "localhost/preemption-toleration:dev"
SUITE = "bookworm"
# What the Dockerfile needs of a base: Python 3.11 with its venv module, and CA certificates for pip.
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
# The chart's securityContext: a read-only root filesystem, UID and GID 65532, every capability dropped.
RUN_AS = "65532:65532"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
_BUILD_CA = "/etc/ptol-build-ca.crt"

Progress = Callable[[str], None]


def image_tools_missing() -> list[str]:
    """The programs an image build needs that are not on PATH (scripts/image-tools.sh installs them)."""
    return [tool for tool in ("podman", "mmdebstrap", "runc") if shutil.which(tool) is None]


def containers_conf() -> Path:
    """podman's configuration for these machines (see the module's docstring), in the cache."""
    path = cache_root() / "podman" / "containers.conf"
    text = '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n'
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def podman(*args: str, timeout: float = 1800, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONTAINERS_CONF": str(containers_conf())}
    result = subprocess.run(["podman", *args], capture_output=True, text=True, env=env, timeout=timeout, check=False)
    if check and result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-20:])
        raise ToolchainError(f"`podman {' '.join(args[:2])}` failed with exit code {result.returncode}:\n{tail}")
    return result


def debian_sources(apt_dir: Path = Path("/etc/apt")) -> list[Path]:
    """The machine's apt source files that serve the suite (one-line or deb822), for mmdebstrap to use as
    they are: the base comes from the mirror the machine already reaches, whatever it is."""
    candidates = [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*.list"))]
    candidates += sorted((apt_dir / "sources.list.d").glob("*.sources"))
    suite = re.compile(rf"(^|\s){SUITE}(\s|$)", re.MULTILINE)
    found = []
    for path in candidates:
        if not path.is_file():
            continue
        lines = [line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")]
        if suite.search("\n".join(lines)):
            found.append(path)
    return found


def _base_archive() -> Path:
    return cache_root() / f"debian-{SUITE}-python3.tar"


def ensure_base(progress: Progress = print) -> str:
    """The Debian base in podman: imported from the cached root filesystem, made first when missing."""
    if podman("image", "exists", BASE_IMAGE, check=False).returncode == 0:
        return BASE_IMAGE
    archive = _base_archive()
    if not archive.is_file():
        sources = debian_sources()
        if not sources:
            raise ToolchainError(f"no apt source of Debian {SUITE} on this machine for mmdebstrap to use")
        progress(f"making a Debian {SUITE} root filesystem with {', '.join(BASE_PACKAGES)} (mmdebstrap, minutes)")
        archive.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(dir=archive.parent) as work:
            partial = Path(work) / archive.name
            argv = ["mmdebstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", SUITE, str(partial)]
            result = subprocess.run([*argv, *map(str, sources)], capture_output=True, text=True, check=False)
            if result.returncode != 0:
                tail = "\n".join(result.stderr.strip().splitlines()[-20:])
                raise ToolchainError(f"mmdebstrap failed with exit code {result.returncode}:\n{tail}")
            partial.rename(archive)  # complete, or not there at all
        progress(f"made {archive.name} in {int(time.monotonic() - started)} s")
    progress(f"importing {archive.name} into podman as {BASE_IMAGE}")
    podman("import", str(archive), BASE_IMAGE)
    return BASE_IMAGE


def build_image(root: Path, progress: Progress = print, tag: str = IMAGE) -> str:
    """`podman build` of the repository's Dockerfile on the Debian base; podman's layer cache makes a
    rebuild of unchanged sources quick. The build reaches the package index the way this machine does:
    its CA bundle is mounted for the build's pip (not kept in the image)."""
    base = ensure_base(progress)
    argv = ["build", "--network", "host", "--build-arg", f"BASE_IMAGE={base}", "--tag", tag]
    if HOST_CA_BUNDLE.is_file():
        argv += ["--volume", f"{HOST_CA_BUNDLE}:{_BUILD_CA}:ro", "--build-arg", f"PIP_CERT={_BUILD_CA}"]
    if index := os.environ.get("PIP_INDEX_URL"):
        argv += ["--build-arg", f"PIP_INDEX_URL={index}"]
    progress(f"building {tag} from {root / 'Dockerfile'}")
    started = time.monotonic()
    podman(*argv, str(root))
    progress(f"built {tag} in {int(time.monotonic() - started)} s")
    return tag


@dataclass(frozen=True)
class ImageFacts:
    size_bytes: int


def image_facts(tag: str = IMAGE) -> ImageFacts:
    size = podman("image", "inspect", "--format", "{{.Size}}", tag).stdout.strip()
    return ImageFacts(size_bytes=int(size))


def run_argv(tag: str, name: str, mounts: Sequence[tuple[Path, str]], env: dict[str, str]) -> list[str]:
    """`podman run` of the image as the chart runs it (read-only root, UID 65532, no capability), on the
    host's network (the local control plane is on loopback); the image's arguments follow."""
    argv = ["podman", "run", "--rm", "--name", name, "--network", "host", "--read-only", "--user", RUN_AS]
    argv += ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    for source, target in mounts:
        argv += ["--volume", f"{source}:{target}:ro"]
    for key, value in env.items():
        argv += ["--env", f"{key}={value}"]
    return [*argv, tag]
