"""The binaries of the local control plane: installed from Debian, built once, cached outside the repo.

etcd comes from Debian's `etcd-server`. kube-apiserver, kube-scheduler and kubectl v1.20.2 are built from
Debian's `kubernetes` source package (bookworm's `1.20.5+really1.20.2`) with Debian's Go 1.19, after two
changes:
- the upstream fix that makes the 1.20 scheduler call extenders during preemption (kubernetes#102971,
  PR #103019 / #103030);
- the vendored `github.com/modern-go/reflect2` v1.0.1 replaced by Debian's v1.0.2: v1.0.1 predates Go 1.18's
  map iterator and crashes kube-apiserver (SIGSEGV in `mapiterinit`) on the first custom resource it stores.
The build goes to a temporary directory in the cache and is renamed into place, so a half-built cache is never
used. kubectl comes from the same source so that client and server are the same version.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

KUBERNETES_VERSION = "1.20.2"
DEBIAN_SOURCE_PACKAGE = "kubernetes"
# Debian's upstream version of the source package; the Debian revision (-1.1+deb12uN) may change.
DEBIAN_UPSTREAM_VERSION = "1.20.5+really1.20.2"
BUILT_BINARIES = ("kube-apiserver", "kube-scheduler", "kubectl")
RUNTIME_APT_PACKAGES = ("etcd-server",)
REFLECT2_APT_PACKAGE = "golang-github-modern-go-reflect2-dev"
BUILD_APT_PACKAGES = ("golang-go", "rsync", "jq", "make", "dpkg-dev", REFLECT2_APT_PACKAGE)
_REFLECT2_VENDOR_DIR = "vendor/github.com/modern-go/reflect2"
APT_SOURCES_DIR = Path("/etc/apt/sources.list.d")
DEB_SRC_FILE = APT_SOURCES_DIR / "preemption-toleration-deb-src.sources"
# Marks a complete cache entry: written last, before the directory is renamed into place.
_STAMP = "BUILD-INFO"

Progress = Callable[[str], None]


class ToolchainError(RuntimeError):
    """The toolchain cannot be installed or built; the message says what to do."""


@dataclass(frozen=True)
class Toolchain:
    """Absolute paths of the programs a LocalCluster runs."""

    etcd: Path
    kube_apiserver: Path
    kube_scheduler: Path
    kubectl: Path


def cache_root() -> Path:
    """`$PTOL_CACHE_DIR`, else `$XDG_CACHE_HOME/preemption-toleration`, else `~/.cache/...`."""
    explicit = os.environ.get("PTOL_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "preemption-toleration"


def binaries_dir() -> Path:
    return cache_root() / f"kubernetes-{KUBERNETES_VERSION}"


def find_toolchain() -> Toolchain | None:
    """The installed toolchain, or None when anything is missing (nothing is installed or built)."""
    bins = binaries_dir()
    etcd = shutil.which("etcd")
    if etcd is None or not (bins / _STAMP).is_file():
        return None
    if not all(os.access(bins / name, os.X_OK) for name in BUILT_BINARIES):
        return None
    return Toolchain(
        etcd=Path(etcd),
        kube_apiserver=bins / "kube-apiserver",
        kube_scheduler=bins / "kube-scheduler",
        kubectl=bins / "kubectl",
    )


def ensure_toolchain(progress: Progress = print) -> Toolchain:
    """Install and build whatever is missing (idempotent; minutes on the first call, instant after)."""
    found = find_toolchain()
    if found is not None:
        return found
    apt = _Apt(progress)
    apt.ensure_installed(RUNTIME_APT_PACKAGES)
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(root / ".lock"):
        if not (binaries_dir() / _STAMP).is_file():
            apt.ensure_installed(BUILD_APT_PACKAGES)
            _build_into_cache(apt, progress)
    found = find_toolchain()
    if found is None:
        raise ToolchainError(f"toolchain still incomplete after installing; see {root}")
    return found


# --- the scheduler fix ---------------------------------------------------------------------------------

_PROFILE_OPTION_ANCHOR = (
    "\t\tframeworkruntime.WithCaptureProfile(frameworkruntime.CaptureProfile(c.frameworkCapturer)),\n"
)
_EXTENDERS_OPTION = "\t\tframeworkruntime.WithExtenders(extenders),\n"


def patch_scheduler_factory(source: str) -> str:
    """Pass the configured extenders to the scheduling profiles (upstream PR #103019 / #103030).

    Without it the 1.20 DefaultPreemption plugin sees no extenders and never calls their `preemptVerb`.
    Idempotent; raises when the code does not look like 1.20's `pkg/scheduler/factory.go`.
    """
    if _EXTENDERS_OPTION in source:
        return source
    if source.count(_PROFILE_OPTION_ANCHOR) != 1:
        raise ToolchainError("pkg/scheduler/factory.go changed: cannot apply the extender fix")
    return source.replace(_PROFILE_OPTION_ANCHOR, _PROFILE_OPTION_ANCHOR + _EXTENDERS_OPTION)


def replace_vendored_reflect2(source: Path) -> None:
    """Swap the vendored reflect2 v1.0.1 for the v1.0.2 sources of Debian's package (same API)."""
    listing = subprocess.run(
        ["dpkg", "-L", REFLECT2_APT_PACKAGE], capture_output=True, text=True, check=True
    ).stdout.split()
    debian_dir = next((Path(p).parent for p in listing if p.endswith("/modern-go/reflect2/reflect2.go")), None)
    if debian_dir is None or not (debian_dir / "go_above_118.go").is_file():
        raise ToolchainError(f"{REFLECT2_APT_PACKAGE} does not hold reflect2 >= 1.0.2 sources")
    vendored = source / _REFLECT2_VENDOR_DIR
    for old in [*vendored.glob("*.go"), *vendored.glob("*.s")]:
        old.unlink()
    for new in [*debian_dir.glob("*.go"), *debian_dir.glob("*.s")]:
        shutil.copy2(new, vendored / new.name)


# --- apt --------------------------------------------------------------------------------------------------


def deb_src_stanzas(sources: str) -> str:
    """deb822 `.sources` text with one `deb-src` stanza for each stanza that has `Types: deb`.

    Comments are dropped and every other field (URIs, Suites, Components, Signed-By) is kept.
    """
    out: list[str] = []
    for stanza in re.split(r"\n[ \t]*\n", sources.strip()):
        fields = [line for line in stanza.splitlines() if line.strip() and not line.startswith("#")]
        types = next((f for f in fields if f.lower().startswith("types:")), None)
        if types is None or "deb" not in types.split(":", 1)[1].split():
            continue
        kept = [f for f in fields if f is not types]
        out.append("\n".join(["Types: deb-src", *kept]))
    return "\n\n".join(out) + ("\n" if out else "")


def deb_src_lines(sources_list: str) -> list[str]:
    """One-line-style `deb-src` lines for each `deb` line of a `sources.list`."""
    return ["deb-src" + line.strip()[3:] for line in sources_list.splitlines() if line.strip().startswith("deb ")]


class _Apt:
    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._updated = False

    def ensure_installed(self, packages: Sequence[str]) -> None:
        missing = [p for p in packages if not _dpkg_installed(p)]
        if not missing:
            return
        self._require_root(f"apt-get install {' '.join(missing)}")
        self.update()
        self._progress(f"apt-get install {' '.join(missing)}")
        _run(
            ["apt-get", "install", "-y", "--no-install-recommends", *missing],
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )

    def update(self, force: bool = False) -> None:
        if self._updated and not force:
            return
        self._progress("apt-get update")
        _run(["apt-get", "update"])
        self._updated = True

    def ensure_source_available(self) -> None:
        """Make `apt-get source kubernetes` find bookworm's 1.20.2, adding a deb-src entry if needed."""
        if self._source_version_available():
            return
        self.update()
        if self._source_version_available():
            return
        self._require_root("adding a deb-src entry")
        self._write_deb_src_entry()
        self.update(force=True)
        if not self._source_version_available():
            raise ToolchainError(
                f"apt has no source package {DEBIAN_SOURCE_PACKAGE} {DEBIAN_UPSTREAM_VERSION}*; "
                f"check the deb-src entry in {DEB_SRC_FILE}"
            )

    def _source_version_available(self) -> bool:
        result = subprocess.run(
            ["apt-cache", "showsrc", DEBIAN_SOURCE_PACKAGE],
            capture_output=True,
            text=True,
            check=False,
        )
        versions = re.findall(r"^Version:\s*(\S+)", result.stdout, flags=re.MULTILINE)
        return any(v.startswith(DEBIAN_UPSTREAM_VERSION + "-") for v in versions)

    def _write_deb_src_entry(self) -> None:
        # Copy the machine's own mirrors rather than naming one.
        stanzas = "".join(
            deb_src_stanzas(p.read_text()) for p in sorted(APT_SOURCES_DIR.glob("*.sources")) if p != DEB_SRC_FILE
        )
        if stanzas.strip():
            DEB_SRC_FILE.write_text(stanzas)
            self._progress(f"added deb-src entries in {DEB_SRC_FILE}")
            return
        lines: list[str] = []
        for path in [Path("/etc/apt/sources.list"), *sorted(APT_SOURCES_DIR.glob("*.list"))]:
            if path.is_file():
                lines += deb_src_lines(path.read_text())
        if not lines:
            raise ToolchainError("no apt 'deb' entry found to derive a deb-src entry from")
        list_file = DEB_SRC_FILE.with_suffix(".list")
        list_file.write_text("\n".join(lines) + "\n")
        self._progress(f"added deb-src entries in {list_file}")

    @staticmethod
    def _require_root(what: str) -> None:
        if os.geteuid() != 0:
            raise ToolchainError(f"{what} needs root; run `ptol dev cluster install` as root")


def _dpkg_installed(package: str) -> bool:
    result = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False)
    return result.returncode == 0 and result.stdout.strip() == "install ok installed"


# --- build ------------------------------------------------------------------------------------------------


def _build_into_cache(apt: _Apt, progress: Progress) -> None:
    root = cache_root()
    for stale in root.glob(".build-*"):  # left by an interrupted build
        shutil.rmtree(stale, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    try:
        apt.ensure_source_available()
        source = _fetch_source(work, progress)
        factory = source / "pkg/scheduler/factory.go"
        factory.write_text(patch_scheduler_factory(factory.read_text()))
        progress("applied the scheduler fix: extenders are called during preemption (PR #103030)")
        replace_vendored_reflect2(source)
        progress("replaced the vendored reflect2 v1.0.1 with Debian's v1.0.2 (Go >= 1.18 map iteration)")
        _make(source, work, progress)
        staging = work / "out"
        staging.mkdir()
        built = source / "_output/bin"
        for name in BUILT_BINARIES:
            shutil.copy2(built / name, staging / name)
        (staging / _STAMP).write_text(
            f"kubernetes {KUBERNETES_VERSION} from Debian source {source.name}\n"
            "patched: pkg/scheduler/factory.go passes WithExtenders to profiles (PR #103030)\n"
            f"replaced: {_REFLECT2_VENDOR_DIR} v1.0.1 -> v1.0.2 from Debian's {REFLECT2_APT_PACKAGE}\n"
        )
        target = binaries_dir()
        if target.exists():  # incomplete (no stamp): replace it
            shutil.rmtree(target)
        os.rename(staging, target)
        progress(f"cached {', '.join(BUILT_BINARIES)} in {target}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _fetch_source(work: Path, progress: Progress) -> Path:
    progress(f"apt-get source {DEBIAN_SOURCE_PACKAGE}")
    download = work / "download"
    download.mkdir()
    _run(["apt-get", "source", "--download-only", DEBIAN_SOURCE_PACKAGE], cwd=download)
    dscs = sorted(download.glob(f"{DEBIAN_SOURCE_PACKAGE}_{DEBIAN_UPSTREAM_VERSION}-*.dsc"))
    if not dscs:
        raise ToolchainError(f"apt-get source did not fetch {DEBIAN_UPSTREAM_VERSION}")
    source = work / dscs[-1].stem
    # dpkg-source also applies Debian's own patches (security fixes).
    _run(["dpkg-source", "--no-check", "-x", str(dscs[-1]), str(source)], cwd=download)
    shutil.rmtree(download)
    return source


def _make(source: Path, work: Path, progress: Progress) -> None:
    targets = " ".join(f"cmd/{name}" for name in BUILT_BINARIES)
    env = {
        **os.environ,
        "CGO_ENABLED": "0",
        "GOFLAGS": "",
        "GOCACHE": str(work / "gocache"),  # thrown away with the work directory
        "KUBE_VERBOSE": "1",
    }
    progress(f"building {targets} (CGO_ENABLED=0); this takes several minutes")
    log_path = cache_root() / "build.log"
    started = time.monotonic()
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(60):
            progress(f"  still building ({int(time.monotonic() - started) // 60} min so far)")

    threading.Thread(target=heartbeat, daemon=True).start()
    try:
        with log_path.open("w", buffering=1) as log:
            proc = subprocess.Popen(
                ["make", f"WHAT={targets}"],
                cwd=source,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                # hack/ prints "+++ [time] Building go targets ..." and the targets indented below.
                if line.startswith(("+++", "    ", "make:")) or "error" in line.lower():
                    progress("  " + line.rstrip())
            returncode = proc.wait()
    finally:
        done.set()
    if returncode != 0:
        raise ToolchainError(f"make failed with exit code {returncode}; see {log_path}")
    progress(f"built in {int(time.monotonic() - started)} s")


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    """Serialise builds between processes (e.g. two test runs starting at once)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(argv: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-20:])
        raise ToolchainError(f"`{' '.join(argv)}` failed with exit code {result.returncode}:\n{tail}")
