"""The image's build, without a container engine: the Dockerfile's build stage builds a wheel from the files
it copies; the wheel must hold the whole package and its commands, and work without the checkout."""

from __future__ import annotations

import email
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "preemption_toleration"


def build_stage_copies(dockerfile: str) -> list[str]:
    """The sources that the first stage of the Dockerfile COPYs into its work directory."""
    sources: list[str] = []
    stages = 0
    for line in dockerfile.splitlines():
        words = line.split()
        stages += words[:1] == ["FROM"]
        if stages == 1 and words[:1] == ["COPY"]:
            # only the plain form is read here: a flag or the JSON form needs this function taught first
            assert not any(w.startswith(("--", "[")) for w in words[1:]), f"unread COPY form: {line}"
            sources += words[1:-1]
    return sources


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    context = tmp_path_factory.mktemp("context")
    sources = build_stage_copies((ROOT / "Dockerfile").read_text())
    assert PACKAGE in sources and "pyproject.toml" in sources, sources
    for source in sources:
        origin = ROOT / source
        if origin.is_dir():
            shutil.copytree(origin, context / source, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(origin, context / source)
    out = tmp_path_factory.mktemp("wheels")
    # the build backend comes from the test extras, so that the test needs no package index
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(out),
            str(context),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    [built] = out.glob("*.whl")
    return built


def test_the_wheel_holds_every_module_and_both_commands(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {str(p.relative_to(ROOT)) for p in (ROOT / PACKAGE).rglob("*.py")}
    assert modules - names == set(), "modules missing from the wheel"
    [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert f"ptol = {PACKAGE}.cli.main:main" in text and f"kubectl-ptol = {PACKAGE}.cli.main:main" in text


def test_the_wheel_carries_the_apache_license(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    [license_file] = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    assert archive.read(license_file) == (ROOT / "LICENSE").read_bytes()
    assert b"Apache License\n                           Version 2.0, January 2004" in archive.read(license_file)


def test_the_wheel_requires_what_pyproject_lists(wheel: Path) -> None:
    [metadata] = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA")]
    message = email.message_from_bytes(zipfile.ZipFile(wheel).read(metadata))
    required = {
        re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0].lower().replace("_", "-")
        for r in message.get_all("Requires-Dist") or []
        if "extra ==" not in r
    }
    assert {
        "kopf",
        "kubernetes-asyncio",
        "aiohttp",
        "pydantic",
        "cryptography",
        "pyyaml",
        "prometheus-client",
    } <= required


def test_the_installed_wheel_works_without_the_checkout(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}

    def ptol(*args: str) -> str:
        result = subprocess.run(
            [sys.executable, "-m", PACKAGE, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    where = subprocess.run(
        [sys.executable, "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(site)), where  # not the checkout
    assert ptol("crd") == (ROOT / "config" / "crd" / "preemptiontolerationpolicies.yaml").read_text()
    assert ptol("webhook-config") == (ROOT / "config" / "webhook" / "webhooks.yaml").read_text()
    assert "validate" in ptol("--help")
    assert (site / "bin" / "ptol").exists()


def test_every_runtime_dependency_is_pinned_within_what_pyproject_allows() -> None:
    """constraints.txt (scripts/lock.sh) pins each runtime dependency at a version pyproject accepts, and
    the Dockerfile and scripts/setup.sh install with it."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pinned = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pinned[canonicalize_name(name)] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for requirement in map(Requirement, project["dependencies"]):
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{name} is not in constraints.txt"
        assert requirement.specifier.contains(pinned[name]), f"{name}=={pinned[name]} is not {requirement.specifier}"
    assert "--constraint constraints.txt" in (ROOT / "Dockerfile").read_text()
    assert "constraints.txt" in build_stage_copies((ROOT / "Dockerfile").read_text())
    assert "--constraint constraints.txt" in (ROOT / "scripts" / "setup.sh").read_text()


def test_the_base_image_is_an_exact_release() -> None:
    """Both stages start from one pinned Python and Debian release, never a moving tag like 3.11-slim."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    [base] = re.findall(r"^ARG BASE_IMAGE=(\S+)$", dockerfile, re.MULTILINE)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", base), base
    assert re.findall(r"^FROM (\S+)", dockerfile, re.MULTILINE) == ["${BASE_IMAGE}", "${BASE_IMAGE}"]
