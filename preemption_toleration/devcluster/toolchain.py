"""The binaries of the local control plane: built once per Kubernetes release from Go modules, cached.

Each supported release has a build module in the repository's `testbed/` folder (go.mod and go.sum, written by
`ptol dev cluster pin`): `testbed/kubernetes-vX.Y.Z/` builds kube-apiserver, kube-controller-manager,
kube-scheduler and kubectl; its `etcd/` builds the etcd that release names; `testbed/kwok/` builds KWOK, the
node simulator; `testbed/helm/` builds helm, which the chart's tests run; each `testbed/kustomize-vX.Y.Z/` builds
a kustomize the tests render config/ with. The machine's Go (see `golang`) builds them with
CGO_ENABLED=0 and the release stamped in; every module's checksum is checked against the committed go.sum
(`-mod=readonly`, then `go mod verify`). A build goes to a temporary directory in the cache and is renamed
into place when complete, so a half-built cache is never used.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from preemption_toleration.devcluster import golang, gomod
from preemption_toleration.devcluster.gomod import Release

DEFAULT_KUBERNETES_VERSION = "1.37.2"
VERSION_ENV = "PTOL_KUBERNETES_VERSION"
KWOK_STAGE_FILES = (
    # KWOK's "fast" stages (what kwokctl installs): nodes Ready at once with a Lease renewed, pods Running
    # and Ready once bound, deleted pods gone at once.
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)
# Kueue's manifests of its release that the test bed applies, copied beside its manager
KUEUE_CRDS = "config/components/crd/bases"
KUEUE_WEBHOOKS = "config/components/webhook/manifests.yaml"
KUEUE_MANAGER_CONFIG = "config/components/manager/controller_manager_config.yaml"  # as its release installs it
# Marks a complete cache entry: written last, before the directory is renamed into place.
_STAMP = "BUILD-INFO"

Progress = Callable[[str], None]


class ToolchainError(RuntimeError):
    """The toolchain cannot be built; the message says what to do."""


@dataclass(frozen=True)
class Toolchain:
    """Absolute paths of the programs a LocalCluster runs, and the release they are."""

    version: str
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    kwok: Path
    kwok_stages: Path
    helm: Path
    # the standalone kustomize of each release in testbed/, by version (`v5.5.0`), oldest first
    kustomize: dict[str, Path]


def testbed_dir() -> Path:
    """The repository's `testbed/` folder (the build modules live beside the package, not in it)."""
    return Path(__file__).resolve().parents[2] / "testbed"


def supported_versions() -> list[str]:
    """The releases the repository has build modules for, newest first."""
    found = [Release.parse(p.name.removeprefix("kubernetes-")) for p in testbed_dir().glob("kubernetes-v*")]
    return [str(r) for r in sorted(found, key=lambda r: (r.major, r.minor, r.patch), reverse=True)]


def selected_version(explicit: str | None = None) -> str:
    """`explicit`, else `$PTOL_KUBERNETES_VERSION`, else the default; refused unless the repo pins it."""
    text = explicit or os.environ.get(VERSION_ENV) or DEFAULT_KUBERNETES_VERSION
    try:
        version = str(Release.parse(text))
    except gomod.GoModError as error:
        raise ToolchainError(str(error)) from None
    if not testbed_dir().is_dir():
        raise ToolchainError(f"no {testbed_dir()}: the local control plane is built from a checkout of the repository")
    if version not in supported_versions():
        raise ToolchainError(
            f"Kubernetes {version} has no build module in {testbed_dir()}; "
            f"supported: {', '.join(supported_versions())} (`ptol dev cluster pin {version}` adds one)"
        )
    return version


def cache_root() -> Path:
    """`$PTOL_CACHE_DIR`, else `$XDG_CACHE_HOME/preemption-toleration`, else `~/.cache/...`."""
    explicit = os.environ.get("PTOL_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "preemption-toleration"


@dataclass(frozen=True)
class _Build:
    """One cache entry: what it holds and the build modules it is made from."""

    name: str
    binaries: tuple[str, ...]
    files: tuple[str, ...] = ()  # other files it holds (an entry made before one was added is made again)

    @property
    def directory(self) -> Path:
        return cache_root() / self.name

    def complete(self) -> bool:
        return (
            (self.directory / _STAMP).is_file()
            and all(os.access(self.directory / binary, os.X_OK) for binary in self.binaries)
            and all((self.directory / file).is_file() for file in self.files)
        )


def _kubernetes_build(version: str) -> _Build:
    return _Build(f"kubernetes-v{version}", ("etcd", *gomod.KUBERNETES_COMMANDS))


def _kwok_build() -> _Build:
    version = gomod.required_version((testbed_dir() / "kwok/go.mod").read_text(), gomod.KWOK_MODULE)
    return _Build(f"kwok-{version}", ("kwok",))


def _helm_build() -> _Build:
    version = gomod.required_version((testbed_dir() / "helm/go.mod").read_text(), gomod.HELM_MODULE)
    return _Build(f"helm-{version}", ("helm",))


def _kueue_build() -> _Build:
    version = gomod.required_version((testbed_dir() / "kueue/go.mod").read_text(), gomod.KUEUE_MODULE)
    return _Build(f"kueue-{version}", ("kueue",), (KUEUE_WEBHOOKS, KUEUE_MANAGER_CONFIG))


def kustomize_versions() -> list[str]:
    """The kustomize releases the repository has build modules for (`v5.4.3`), oldest first."""
    found = [p.name.removeprefix("kustomize-") for p in testbed_dir().glob("kustomize-v*")]
    return sorted(found, key=lambda tag: gomod.go_version_tuple(tag.removeprefix("v")))


def _kustomize_build(version: str) -> _Build:
    return _Build(f"kustomize-{version}", ("kustomize",))


_Maker = Callable[["GoCommand", _Build, Progress], None]


def _tool_builds() -> list[tuple[_Build, _Maker]]:
    """The builds every release shares, each with the function that makes it."""
    shared: list[tuple[_Build, _Maker]] = [(_kwok_build(), _build_kwok), (_helm_build(), _build_helm)]
    return shared + [(_kustomize_build(version), _build_kustomize) for version in kustomize_versions()]


def find_toolchain(version: str | None = None) -> Toolchain | None:
    """The built toolchain of that release (default: the selected one), or None when anything is missing."""
    version = selected_version(version)
    kubernetes, kwok, helm = _kubernetes_build(version), _kwok_build(), _helm_build()
    if not (kubernetes.complete() and all(build.complete() for build, _ in _tool_builds())):
        return None
    bins = kubernetes.directory
    return Toolchain(
        version=version,
        etcd=bins / "etcd",
        kube_apiserver=bins / "kube-apiserver",
        kube_controller_manager=bins / "kube-controller-manager",
        kube_scheduler=bins / "kube-scheduler",
        kubectl=bins / "kubectl",
        kwok=kwok.directory / "kwok",
        kwok_stages=kwok.directory / "stages.yaml",
        helm=helm.directory / "helm",
        kustomize={version: _kustomize_build(version).directory / "kustomize" for version in kustomize_versions()},
    )


def ensure_toolchain(progress: Progress = print, version: str | None = None) -> Toolchain:
    """Build whatever is missing (idempotent; minutes on the first call for a release, instant after)."""
    version = selected_version(version)
    found = find_toolchain(version)
    if found is not None:
        return found
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(root / ".lock", progress):
        go = GoCommand.find(progress)
        kubernetes = _kubernetes_build(version)
        if not kubernetes.complete():
            _build_kubernetes(go, version, kubernetes, progress)
        for build, make in _tool_builds():
            if not build.complete():
                make(go, build, progress)
    found = find_toolchain(version)
    if found is None:
        raise ToolchainError(f"toolchain still incomplete after building; see {root}")
    return found


@dataclass(frozen=True)
class KueueBuild:
    """Kueue's controller manager, and the manifests of its release a cluster applies (`devcluster.kueue`)."""

    version: str
    manager: Path
    crds: tuple[Path, ...]  # config/components/crd/bases/*.yaml
    webhooks: Path  # config/components/webhook/manifests.yaml
    manager_config: Path  # config/components/manager/controller_manager_config.yaml


def find_kueue() -> KueueBuild | None:
    """The built Kueue (`testbed/kueue/`), or None when it is not built."""
    build = _kueue_build()
    if not build.complete():
        return None
    version = build.name.removeprefix("kueue-")
    crds = tuple(sorted((build.directory / KUEUE_CRDS).glob("*.yaml")))
    directory = build.directory
    return KueueBuild(version, directory / "kueue", crds, directory / KUEUE_WEBHOOKS, directory / KUEUE_MANAGER_CONFIG)


def ensure_kueue(progress: Progress = print) -> KueueBuild:
    """Kueue, built when missing: only for a cluster that runs it (`--feature kueue`), minutes the first time."""
    found = find_kueue()
    if found is not None:
        return found
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(root / ".lock", progress):
        build = _kueue_build()
        if not build.complete():
            _build_kueue(GoCommand.find(progress), build, progress)
    found = find_kueue()
    if found is None:
        raise ToolchainError(f"Kueue still incomplete after building; see {root}")
    return found


# --- go ---------------------------------------------------------------------------------------------------


class GoCommand:
    """The machine's `go`, with the environment every build uses."""

    def __init__(self, path: str, version: tuple[int, ...], progress: Progress) -> None:
        self.path = path
        self.version = version
        self.progress = progress

    @classmethod
    def find(cls, progress: Progress) -> GoCommand:
        """The machine's Go, else the one scripts/setup.sh installed into the environment (see `golang`)."""
        try:
            found = golang.find_go()
        except golang.NoGoError as error:
            raise ToolchainError(str(error)) from None
        return cls(found.path, found.version, progress)

    def env(self, module: Path, *, work: Path | None = None, pinning: bool = False) -> dict[str, str]:
        # Outside a module (pinning downloads into a scratch directory) any Go does.
        wanted = gomod.go_directive((module / "go.mod").read_text()) if (module / "go.mod").is_file() else "1"
        env = {
            **os.environ,
            "CGO_ENABLED": "0",
            # Pinning (`go mod tidy`) writes go.sum; a build never changes go.mod or go.sum.
            "GOFLAGS": "-buildvcs=false" if pinning else "-mod=readonly -trimpath -buildvcs=false",
            "GOWORK": "off",
        }
        # An older Go fetches the toolchain the module asks for (the module proxy serves it); a newer one
        # builds with itself, whatever GOTOOLCHAIN the machine sets.
        env["GOTOOLCHAIN"] = "local" if self.version >= gomod.go_version_tuple(wanted) else f"go{wanted}"
        if work is not None:
            env["TMPDIR"] = str(work)
        return env

    def run(self, module: Path, *args: str, work: Path | None = None, pinning: bool = False) -> str:
        argv = [self.path, *args]
        env = self.env(module, work=work, pinning=pinning)
        result = subprocess.run(argv, cwd=module, env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-20:])
            command = f"go {' '.join(args)}"
            raise ToolchainError(f"`{command}` in {module} failed with exit code {result.returncode}:\n{tail}")
        return result.stdout

    def prepare(self, module: Path, what: str) -> None:
        """Download the module's dependencies and check each against the committed go.sum."""
        self.progress(f"{what}: go mod download")
        self.run(module, "mod", "download")
        self.progress(f"{what}: go mod verify (every module against the committed go.sum)")
        self.run(module, "mod", "verify")

    def build(self, module: Path, package: str, output: Path, ldflags: str, work: Path) -> None:
        self.progress(f"  go build {package}")
        started = time.monotonic()
        with _heartbeat(self.progress, started):
            self.run(module, "build", "-o", str(output), "-ldflags", f"-s -w {ldflags}".strip(), package, work=work)
        self.progress(f"  built {output.name} in {int(time.monotonic() - started)} s")

    def module_time(self, module: Path, dependency: str) -> str:
        """When the proxy first served `dependency` at the version the module requires (its release time)."""
        info = json.loads(self.run(module, "list", "-m", "-json", dependency))
        return str(info.get("Time") or "1970-01-01T00:00:00Z")


# --- builds -----------------------------------------------------------------------------------------------


def _build_kubernetes(go: GoCommand, version: str, target: _Build, progress: Progress) -> None:
    release = Release.parse(version)
    module = testbed_dir() / f"kubernetes-{release.tag}"
    etcd_module = module / "etcd"
    started = time.monotonic()
    progress(f"building Kubernetes {release} (four commands and etcd) with {go.path}; minutes the first time")
    go.prepare(module, f"kubernetes {release.tag}")
    go.prepare(etcd_module, "etcd")
    ldflags = gomod.version_ldflags(release, go.module_time(module, gomod.KUBERNETES_MODULE))
    with _staging(target) as staging:
        for command in gomod.KUBERNETES_COMMANDS:
            go.build(module, f"{gomod.KUBERNETES_MODULE}/cmd/{command}", staging / command, ldflags, staging.parent)
        go.build(etcd_module, gomod.ETCD_SERVER_MODULE, staging / "etcd", "", staging.parent)
        reported = _run_version(staging / "kube-apiserver", "--version")
        if release.tag not in reported:
            raise ToolchainError(f"the built kube-apiserver reports {reported!r}, not {release.tag}")
        etcd = gomod.required_version((etcd_module / "go.mod").read_text(), gomod.ETCD_SERVER_MODULE)
        (staging / _STAMP).write_text(
            f"kubernetes {release.tag} ({reported}), etcd {etcd}\n"
            f"go {'.'.join(map(str, go.version))}; modules as pinned in {module.name}/go.sum and etcd/go.sum\n"
            f"built in {int(time.monotonic() - started)} s\n"
        )
    progress(f"cached Kubernetes {release} in {target.directory} ({int(time.monotonic() - started)} s)")


@dataclass(frozen=True)
class _GoTool:
    """A tool built from its pinned module in testbed/: how it is shown, and what it is for."""

    shown: str  # as progress names it (KWOK, helm, kustomize)
    purpose: str

    @contextlib.contextmanager
    def building(self, go: GoCommand, target: _Build, module: Path, progress: Progress) -> Iterator[tuple[Path, str]]:
        """The staging directory and the version being built, with progress said before and after."""
        version = target.name.removeprefix(f"{self.shown.lower()}-")
        progress(f"building {self.shown} {version}, {self.purpose}")
        go.prepare(module, f"{self.shown.lower()} {version}")
        with _staging(target) as staging:
            yield staging, version
        progress(f"cached {self.shown} {version} in {target.directory}")


_KWOK = _GoTool("KWOK", "the node simulator")
_HELM = _GoTool("helm", "for the chart's tests")
_KUSTOMIZE = _GoTool("kustomize", "which the tests render config/ with")
_KUEUE = _GoTool("Kueue", "whose controller manager `--feature kueue` runs")


def _build_kwok(go: GoCommand, target: _Build, progress: Progress) -> None:
    module = testbed_dir() / "kwok"
    with _KWOK.building(go, target, module, progress) as (staging, version):
        go.build(module, f"{gomod.KWOK_MODULE}/cmd/kwok", staging / "kwok", "", staging.parent)
        source = Path(go.run(module, "list", "-m", "-f", "{{.Dir}}", gomod.KWOK_MODULE).strip())
        stages = [(source / name).read_text().strip() for name in KWOK_STAGE_FILES]
        (staging / "stages.yaml").write_text("\n---\n".join(stages) + "\n")
        (staging / _STAMP).write_text(f"{gomod.KWOK_MODULE} {version}; stages: {', '.join(KWOK_STAGE_FILES)}\n")


def _build_helm(go: GoCommand, target: _Build, progress: Progress) -> None:
    module = testbed_dir() / "helm"
    with _HELM.building(go, target, module, progress) as (staging, version):
        # what helm's own Makefile stamps, so `helm version` names the release
        ldflags = f"-X {gomod.HELM_MODULE}/internal/version.version={version}"
        go.build(module, f"{gomod.HELM_MODULE}/cmd/helm", staging / "helm", ldflags, staging.parent)
        (staging / _STAMP).write_text(f"{gomod.HELM_MODULE} {version}\n")


def _build_kueue(go: GoCommand, target: _Build, progress: Progress) -> None:
    module = testbed_dir() / "kueue"
    with _KUEUE.building(go, target, module, progress) as (staging, version):
        # what Kueue's Makefile stamps, so its start-up log names the release
        ldflags = f"-X {gomod.KUEUE_MODULE}/pkg/version.GitVersion={version}"
        go.build(module, f"{gomod.KUEUE_MODULE}/cmd/kueue", staging / "kueue", ldflags, staging.parent)
        source = Path(go.run(module, "list", "-m", "-f", "{{.Dir}}", gomod.KUEUE_MODULE).strip())
        # file by file: the module cache's modes (read-only) are not copied into ours
        (staging / KUEUE_CRDS).mkdir(parents=True)
        for crd in (source / KUEUE_CRDS).glob("*.yaml"):
            shutil.copyfile(crd, staging / KUEUE_CRDS / crd.name)
        for manifest in (KUEUE_WEBHOOKS, KUEUE_MANAGER_CONFIG):
            (staging / manifest).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / manifest, staging / manifest)
        manifests = ", ".join((KUEUE_CRDS, KUEUE_WEBHOOKS, KUEUE_MANAGER_CONFIG))
        (staging / _STAMP).write_text(f"{gomod.KUEUE_MODULE} {version}; manifests: {manifests}\n")


def _build_kustomize(go: GoCommand, target: _Build, progress: Progress) -> None:
    module = testbed_dir() / target.name
    with _KUSTOMIZE.building(go, target, module, progress) as (staging, version):
        # what kustomize's releases stamp, so `kustomize version` names the release
        ldflags = f"-X {gomod.KUSTOMIZE_VERSION_VARIABLE}=kustomize/{version}"
        go.build(module, gomod.KUSTOMIZE_MODULE, staging / "kustomize", ldflags, staging.parent)
        reported = _run_version(staging / "kustomize", "version")
        if reported != version:
            raise ToolchainError(f"the built kustomize reports {reported!r}, not {version}")
        (staging / _STAMP).write_text(f"{gomod.KUSTOMIZE_MODULE} {version}\n")


@contextlib.contextmanager
def _staging(target: _Build) -> Iterator[Path]:
    """A directory to build into, renamed to the target when the body completes (removed otherwise)."""
    root = cache_root()
    for stale in root.glob(f".build-{target.name}-*"):  # left by an interrupted build
        shutil.rmtree(stale, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=f".build-{target.name}-", dir=root))
    try:
        staging = work / "out"
        staging.mkdir()
        yield staging
        if target.directory.exists():  # incomplete (no stamp): replace it
            shutil.rmtree(target.directory)
        os.rename(staging, target.directory)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def _heartbeat(progress: Progress, started: float) -> Iterator[None]:
    done = threading.Event()

    def beat() -> None:
        while not done.wait(60):
            progress(f"  still building ({int(time.monotonic() - started) // 60} min so far)")

    threading.Thread(target=beat, daemon=True).start()
    try:
        yield
    finally:
        done.set()


def _run_version(binary: Path, *args: str) -> str:
    result = subprocess.run([str(binary), *args], capture_output=True, text=True, check=False)
    return (result.stdout + result.stderr).strip()


@contextlib.contextmanager
def exclusive_lock(path: Path, progress: Progress) -> Iterator[None]:
    """Serialise builds between processes (e.g. two test runs starting at once). The holder writes who it is
    into the lock file; a process that must wait says so at once, naming the holder, and when its turn comes."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waited = time.monotonic()
            holder = describe_holder(path.read_text(errors="replace"), time.time())
            progress(f"waiting for the build lock {path}, held by {holder}; going on when it is released")
            fcntl.flock(fd, fcntl.LOCK_EX)
            progress(f"took the build lock after waiting {_duration(time.monotonic() - waited)}")
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder_record(os.getpid(), command_line(sys.argv), time.time()).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # a lock file that names someone is held by them
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def holder_record(pid: int, command: str, since: float) -> str:
    """What the holder of the build lock writes into it."""
    return json.dumps({"pid": pid, "command": command, "since": since}) + "\n"


def describe_holder(record: str, now: float) -> str:
    """Who holds the build lock, from what it wrote: `pid 4242 (ptol dev cluster install) for 9 min`."""
    try:
        holder = json.loads(record)
        pid, command, since = int(holder["pid"]), str(holder["command"]), float(holder["since"])
    except (ValueError, TypeError, KeyError):  # an older ptol writes nothing; a new holder may not have yet
        return "another process, which does not say which"
    return f"pid {pid} ({command}) for {_duration(now - since)}"


def command_line(argv: list[str]) -> str:
    """The command a person typed, from `sys.argv`: `ptol dev cluster install`, `pytest tests/integration`."""
    if not argv:
        return "python"
    program = Path(argv[0]).name
    if program == "__main__.py":  # python -m PACKAGE
        program = Path(argv[0]).parent.name
    elif program == "-c":
        program = "python -c"
    return " ".join([program, *map(shlex.quote, argv[1:])])


def _duration(seconds: float) -> str:
    return f"{int(seconds)} s" if seconds < 120 else f"{int(seconds) // 60} min"
