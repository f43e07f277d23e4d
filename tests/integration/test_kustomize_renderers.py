"""config/ renders with every kustomize a user may bring, to the same objects: the one in each tested release's
kubectl (`kubectl kustomize`), and the standalone releases testbed/ builds (`kustomize build`), the oldest that
GitOps tools bundle (Argo CD and Flux render a kustomization with their own). kustomize v5.4 and v5.5 panic on
a file that deletes two objects, which kubectl 1.35's renders (see manifests/deletions.py)."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from preemption_toleration.devcluster import ensure_toolchain, find_toolchain
from preemption_toleration.devcluster.toolchain import kustomize_versions, selected_version, supported_versions
from tests.integration.components import ROOT
from tests.integration.helpers import START_SECONDS

pytestmark = pytest.mark.integration

CONFIG = ROOT / "config"
# Every kustomization a user applies on its own, and each Component added to config/default as a user would.
VARIANTS = sorted(
    str(path.parent.relative_to(CONFIG))
    for path in CONFIG.glob("**/kustomization.yaml")
    if (yaml.safe_load(path.read_text()) or {}).get("kind") != "Component"
)
COMPONENTS = sorted(
    str(path.parent.relative_to(CONFIG))
    for path in CONFIG.glob("**/kustomization.yaml")
    if (yaml.safe_load(path.read_text()) or {}).get("kind") == "Component"
)
RENDERERS = [f"kubectl {version}" for version in supported_versions()] + [
    f"kustomize {version}" for version in kustomize_versions()
]


def renderer_argv(renderer: str) -> list[str]:
    """The command that renders a kustomization directory given after it."""
    program, version = renderer.split(" ")
    if program == "kustomize":
        return [str(ensure_toolchain().kustomize[version]), "build"]
    toolchain = ensure_toolchain() if version == selected_version() else find_toolchain(version)
    if toolchain is None:
        pytest.skip(f"Kubernetes {version} is not built: `ptol dev cluster install --kubernetes-version {version}`")
    return [str(toolchain.kubectl), "kustomize"]


@functools.cache
def render(renderer: str, directory: Path) -> list[dict[str, Any]]:
    """The objects `renderer` renders from `directory`, in a fixed order (cached: the reference is read often)."""
    result = subprocess.run(
        [*renderer_argv(renderer), str(directory)], capture_output=True, text=True, timeout=START_SECONDS, check=False
    )
    if result.returncode != 0:  # a panic's stack is long: its first lines name it
        pytest.fail(f"{renderer} cannot render {directory}:\n" + "\n".join(result.stderr.splitlines()[:12]))
    return sorted((d for d in yaml.safe_load_all(result.stdout) if d), key=_identity)


def _identity(document: dict[str, Any]) -> tuple[str, str, str]:
    metadata = document["metadata"]
    return (document["kind"], metadata.get("namespace", ""), metadata["name"])


def reference() -> str:
    return f"kubectl {selected_version()}"


def test_the_renderers_are_the_tested_kubectls_and_the_oldest_kustomizes_gitops_tools_bundle() -> None:
    assert {"kubectl 1.37.2", "kubectl 1.35.4", "kustomize v5.4.3", "kustomize v5.5.0"} <= set(RENDERERS)
    assert {"default", "crd", "certmanager", "steering", "samples"} <= set(VARIANTS)


@pytest.mark.parametrize("renderer", RENDERERS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_renders_the_same_objects_with_every_kustomize(variant: str, renderer: str) -> None:
    rendered = render(renderer, CONFIG / variant)
    assert rendered and rendered == render(reference(), CONFIG / variant)


@pytest.fixture(scope="module", params=COMPONENTS)
def with_component(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What a user writes to add a Component: config/default plus the component."""
    directory = tmp_path_factory.mktemp("with-component")
    config = os.path.relpath(CONFIG, directory)
    kustomization = {"resources": [f"{config}/default"], "components": [f"{config}/{request.param}"]}
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return directory


@pytest.mark.parametrize("renderer", RENDERERS)
def test_every_component_adds_to_default_with_every_kustomize(with_component: Path, renderer: str) -> None:
    rendered = render(renderer, with_component)
    assert len(rendered) > len(render(reference(), CONFIG / "default"))
    assert rendered == render(reference(), with_component)
