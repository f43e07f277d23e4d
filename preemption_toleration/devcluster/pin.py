"""`ptol dev cluster pin`: write the build modules of a Kubernetes release (or of KWOK, Kueue or a kustomize) into
`testbed/`.

go.mod is written from the release's own files (see `gomod`); `go mod tidy` then records every module's
checksum in go.sum. Both are committed: a build checks every download against them.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from preemption_toleration.devcluster import gomod
from preemption_toleration.devcluster.gomod import Release
from preemption_toleration.devcluster.toolchain import GoCommand, Progress, testbed_dir


def pin_release(version: str, progress: Progress = print) -> Path:
    """Write `testbed/kubernetes-vX.Y.Z/` (and its `etcd/`); returns the folder."""
    go = GoCommand.find(progress)
    release = Release.parse(version)
    kubernetes_source = _download(go, gomod.KUBERNETES_MODULE, release.tag, progress)
    module = testbed_dir() / f"kubernetes-{release.tag}"
    kubernetes_go_mod = (kubernetes_source / "go.mod").read_text()
    _write_and_tidy(go, module, gomod.kubernetes_build_go_mod(release, kubernetes_go_mod), progress)
    etcd = gomod.etcd_version((kubernetes_source / "hack/lib/etcd.sh").read_text())
    etcd_source = _download(go, gomod.ETCD_SERVER_MODULE, f"v{etcd}", progress)
    etcd_go = gomod.go_directive((etcd_source / "go.mod").read_text())
    _write_and_tidy(go, module / "etcd", gomod.etcd_build_go_mod(release, etcd, etcd_go), progress)
    return module


def pin_kwok(version: str, progress: Progress = print) -> Path:
    """Write `testbed/kwok/` for KWOK `version` (e.g. v0.8.0); returns the folder."""
    return _pin_tool(gomod.KWOK_MODULE, version, gomod.kwok_build_go_mod, "kwok", progress)


def pin_kueue(version: str, progress: Progress = print) -> Path:
    """Write `testbed/kueue/` for Kueue `version` (e.g. v0.19.2); returns the folder."""
    return _pin_tool(gomod.KUEUE_MODULE, version, gomod.kueue_build_go_mod, "kueue", progress)


def pin_kustomize(version: str, progress: Progress = print) -> Path:
    """Write `testbed/kustomize-vX.Y.Z/` for kustomize `version` (e.g. v5.5.0); returns the folder."""
    version = gomod.kustomize_tag(version)
    return _pin_tool(gomod.KUSTOMIZE_MODULE, version, gomod.kustomize_build_go_mod, f"kustomize-{version}", progress)


def _pin_tool(
    module_path: str, version: str, build_go_mod: Callable[[str, str], str], folder: str, progress: Progress
) -> Path:
    """The build module of a tool at `version` written into `testbed/<folder>/`, its `go` line the tool's own."""
    go = GoCommand.find(progress)
    source = _download(go, module_path, version, progress)
    go_mod = build_go_mod(version, gomod.go_directive((source / "go.mod").read_text()))
    module = testbed_dir() / folder
    _write_and_tidy(go, module, go_mod, progress)
    return module


def _download(go: GoCommand, module: str, version: str, progress: Progress) -> Path:
    progress(f"go mod download {module}@{version}")
    with tempfile.TemporaryDirectory() as scratch:
        info = json.loads(go.run(Path(scratch), "mod", "download", "-json", f"{module}@{version}", pinning=True))
    return Path(info["Dir"])


def _write_and_tidy(go: GoCommand, module: Path, go_mod: str, progress: Progress) -> None:
    module.mkdir(parents=True, exist_ok=True)
    (module / "go.mod").write_text(go_mod)
    (module / "go.sum").unlink(missing_ok=True)
    progress(f"go mod tidy in {module}")
    go.run(module, "mod", "tidy", pinning=True)
