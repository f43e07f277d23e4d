"""The test bed's build modules: written from Kubernetes' own files (pure), and the ones committed in testbed/."""

from __future__ import annotations

from pathlib import Path

import pytest

from preemption_toleration.devcluster import gomod, toolchain
from preemption_toleration.devcluster.gomod import GoModError, Release
from preemption_toleration.devcluster.toolchain import (
    DEFAULT_KUBERNETES_VERSION,
    VERSION_ENV,
    ToolchainError,
    selected_version,
    supported_versions,
)

# The shape of k8s.io/kubernetes' go.mod, cut down.
KUBERNETES_GO_MOD = """\
module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
\tgo.etcd.io/etcd/client/v3 v3.7.0
\tk8s.io/api v0.0.0
\tk8s.io/client-go v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tk8s.io/streaming => ./staging/src/k8s.io/streaming
)
"""


@pytest.mark.parametrize(
    ("rule", "text", "expected"),
    [
        ("a release as people write it", "1.37.2", Release(1, 37, 2)),
        ("the module tag", "v1.35.4", Release(1, 35, 4)),
        ("spaces around it", " 1.36.3\n", Release(1, 36, 3)),
    ],
)
def test_release_parse(rule: str, text: str, expected: Release) -> None:
    assert Release.parse(text) == expected, rule


@pytest.mark.parametrize("text", ["1.37", "1.37.2.1", "latest", "v1.37.2-rc.0", "", "1.37.x"])
def test_release_parse_refuses_what_is_no_release(text: str) -> None:
    with pytest.raises(GoModError, match="is not a Kubernetes release such as 1.37.2"):
        Release.parse(text)


def test_kwok_build_module_requires_kwok_and_builds_its_command() -> None:
    text = gomod.kwok_build_go_mod("v0.8.0", "1.26.0")
    assert "module preemption-toleration.test/testbed/kwok\n" in text and "\ngo 1.26.0\n" in text
    assert gomod.required_version(text, gomod.KWOK_MODULE) == "v0.8.0"
    assert "\ntool sigs.k8s.io/kwok/cmd/kwok\n" in text


def test_kueue_build_module_requires_kueue_and_builds_its_controller_manager() -> None:
    text = gomod.kueue_build_go_mod("v0.19.2", "1.26.0")
    assert "module preemption-toleration.test/testbed/kueue\n" in text and "\ngo 1.26.0\n" in text
    assert gomod.required_version(text, gomod.KUEUE_MODULE) == "v0.19.2"
    assert "\ntool sigs.k8s.io/kueue/cmd/kueue\n" in text


def test_kustomize_build_module_requires_kustomize_and_builds_its_command() -> None:
    text = gomod.kustomize_build_go_mod("v5.5.0", "1.22.7")
    assert "module preemption-toleration.test/testbed/kustomize-v5.5.0\n" in text
    assert "\ngo 1.24\n" in text, "a `tool` line needs go 1.24 in go.mod, whatever kustomize's own says"
    assert gomod.required_version(text, gomod.KUSTOMIZE_MODULE) == "v5.5.0"
    assert "\ntool sigs.k8s.io/kustomize/kustomize/v5\n" in text


@pytest.mark.parametrize(
    ("rule", "text", "expected"),
    [("as the module tags it", "v5.4.3", "v5.4.3"), ("without the v", "5.5.0", "v5.5.0")],
)
def test_kustomize_tag(rule: str, text: str, expected: str) -> None:
    assert gomod.kustomize_tag(text) == expected, rule


@pytest.mark.parametrize("text", ["v4.5.7", "5.5", "latest", "kustomize/v5.5.0", ""])
def test_kustomize_tag_refuses_what_is_no_kustomize_v5_release(text: str) -> None:
    with pytest.raises(GoModError, match="is not a kustomize v5 release such as v5.5.0"):
        gomod.kustomize_tag(text)


@pytest.mark.parametrize(
    ("versions", "expected"), [(("1.21", "1.24"), "1.24"), (("1.26.0", "1.24"), "1.26.0"), (("1.9", "1.10"), "1.10")]
)
def test_newest_go(versions: tuple[str, ...], expected: str) -> None:
    assert gomod.newest_go(*versions) == expected


def test_release_tags() -> None:
    release = Release.parse("1.37.2")
    assert (str(release), release.tag, release.staging_tag) == ("1.37.2", "v1.37.2", "v0.37.2")


def test_staging_modules_are_the_ones_replaced_with_a_staging_path() -> None:
    assert gomod.staging_modules(KUBERNETES_GO_MOD) == ["k8s.io/api", "k8s.io/client-go", "k8s.io/streaming"]


def test_staging_modules_refuse_a_go_mod_that_is_not_kubernetes() -> None:
    with pytest.raises(GoModError, match="not a Kubernetes go.mod"):
        gomod.staging_modules("module example.com/x\n\ngo 1.26\n")


def test_kubernetes_build_module_requires_the_release_and_pins_each_staging_module() -> None:
    text = gomod.kubernetes_build_go_mod(Release.parse("1.37.2"), KUBERNETES_GO_MOD)
    assert "module preemption-toleration.test/testbed/kubernetes-v1.37.2\n" in text
    assert "\ngo 1.26.0\n" in text
    assert "\nrequire k8s.io/kubernetes v1.37.2\n" in text
    for command in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"):
        assert f"\tk8s.io/kubernetes/cmd/{command}\n" in text
    for module in ("k8s.io/api", "k8s.io/client-go", "k8s.io/streaming"):
        assert f"\t{module} => {module} v0.37.2\n" in text


@pytest.mark.parametrize(
    ("rule", "etcd_sh", "expected"),
    [
        ("the default of 1.37", "ETCD_VERSION=${ETCD_VERSION:-3.7.0}\n", "3.7.0"),
        ("among other lines", "# etcd\nETCD_HOST=x\nETCD_VERSION=${ETCD_VERSION:-3.6.6}\nETCD_PORT=2379\n", "3.6.6"),
    ],
)
def test_etcd_version_is_the_one_the_release_names(rule: str, etcd_sh: str, expected: str) -> None:
    assert gomod.etcd_version(etcd_sh) == expected, rule


def test_etcd_version_refuses_a_file_without_it() -> None:
    with pytest.raises(GoModError, match="sets no ETCD_VERSION"):
        gomod.etcd_version("ETCD_HOST=127.0.0.1\n")


@pytest.mark.parametrize(
    ("rule", "go_mod", "expected"),
    [
        ("a require line", "require sigs.k8s.io/kwok v0.8.0\n", "v0.8.0"),
        ("in a block, indirect", "require (\n\tsigs.k8s.io/kwok v0.8.0 // indirect\n)\n", "v0.8.0"),
        ("not a replace target", "replace x => sigs.k8s.io/kwok v0.1.0\nrequire sigs.k8s.io/kwok v0.8.0\n", "v0.8.0"),
    ],
)
def test_required_version(rule: str, go_mod: str, expected: str) -> None:
    assert gomod.required_version(go_mod, "sigs.k8s.io/kwok") == expected, rule


def test_version_ldflags_stamp_both_version_packages_as_upstream_does() -> None:
    flags = gomod.version_ldflags(Release.parse("1.35.4"), "2026-10-27T12:01:04Z").split(" ")
    for package in ("k8s.io/client-go/pkg/version", "k8s.io/component-base/version"):
        for key, value in [
            ("gitVersion", "v1.35.4"),
            ("gitMajor", "1"),
            ("gitMinor", "35"),
            ("gitTreeState", "clean"),
            ("buildDate", "2026-10-27T12:01:04Z"),
        ]:
            assert f"{package}.{key}={value}" in flags
    assert not any("gitCommit" in flag for flag in flags)  # unknown from a module: left out, as upstream does


@pytest.mark.parametrize(
    ("text", "expected"),
    [("go1.26.8", (1, 26, 8)), ("1.26", (1, 26)), ("go1.27rc1", (1, 27)), ("go1.21.0\n", (1, 21, 0))],
)
def test_go_version_tuple(text: str, expected: tuple[int, ...]) -> None:
    assert gomod.go_version_tuple(text) == expected


# --- what the repository pins ------------------------------------------------------------------------------


def test_the_repository_pins_the_default_and_the_oldest_supported_release() -> None:
    assert supported_versions()[:1] == [DEFAULT_KUBERNETES_VERSION]
    assert "1.35.4" in supported_versions()


@pytest.mark.parametrize("version", ["1.37.2", "1.35.4"])
def test_each_pinned_release_has_its_modules_and_their_checksums(version: str) -> None:
    module = toolchain.testbed_dir() / f"kubernetes-v{version}"
    go_mod = (module / "go.mod").read_text()
    assert gomod.required_version(go_mod, gomod.KUBERNETES_MODULE) == f"v{version}"
    minor = version.split(".")[1]
    pins = [line for line in go_mod.splitlines() if "=> k8s.io/" in line]
    assert pins and all(line.endswith(f" v0.{minor}.{version.split('.')[2]}") for line in pins)
    etcd_go_mod = (module / "etcd/go.mod").read_text()
    assert gomod.required_version(etcd_go_mod, gomod.ETCD_SERVER_MODULE).startswith("v3.")
    for folder in (module, module / "etcd"):
        sums = (folder / "go.sum").read_text()
        assert _sum_lines_are_well_formed(sums), folder


def test_the_repository_pins_the_oldest_kustomizes_gitops_tools_bundle() -> None:
    """v5.4.3 (Argo CD's) and v5.5.0 (kubectl 1.32's, Flux's): config/ must render with both."""
    assert toolchain.kustomize_versions() == ["v5.4.3", "v5.5.0"]
    for version in toolchain.kustomize_versions():
        module = toolchain.testbed_dir() / f"kustomize-{version}"
        assert gomod.required_version((module / "go.mod").read_text(), gomod.KUSTOMIZE_MODULE) == version
        assert _sum_lines_are_well_formed((module / "go.sum").read_text()), module


def _sum_lines_are_well_formed(sums: str) -> bool:
    lines = sums.splitlines()
    return bool(lines) and all(len(line.split(" ")) == 3 and line.split(" ")[2].startswith("h1:") for line in lines)


@pytest.mark.parametrize(
    ("rule", "explicit", "env", "expected"),
    [
        ("the default", None, None, DEFAULT_KUBERNETES_VERSION),
        ("the environment variable", None, "1.35.4", "1.35.4"),
        ("the option wins over the variable", "v1.37.2", "1.35.4", "1.37.2"),
    ],
)
def test_selected_version(
    rule: str, explicit: str | None, env: str | None, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env is None:
        monkeypatch.delenv(VERSION_ENV, raising=False)
    else:
        monkeypatch.setenv(VERSION_ENV, env)
    assert selected_version(explicit) == expected, rule


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1.20.2", "Kubernetes 1.20.2 has no build module in"),
        ("1.37", "'1.37' is not a Kubernetes release such as 1.37.2"),
    ],
)
def test_selected_version_refuses_a_release_the_repository_does_not_pin(text: str, message: str) -> None:
    with pytest.raises(ToolchainError, match=message):
        selected_version(text)


def test_testbed_is_beside_the_package() -> None:
    assert toolchain.testbed_dir() == Path(__file__).resolve().parents[2] / "testbed"


@pytest.mark.parametrize(
    ("rule", "machine", "module_go", "expected"),
    [
        ("a Go as new as the module's builds with itself", (1, 26, 8), "1.26.0", "local"),
        ("an older one fetches the module's", (1, 24, 2), "1.26.0", "go1.26.0"),
    ],
)
def test_the_build_uses_the_machines_go_unless_it_is_older_than_the_modules(
    rule: str, machine: tuple[int, ...], module_go: str, expected: str, tmp_path: Path
) -> None:
    (tmp_path / "go.mod").write_text(f"module example.test/x\n\ngo {module_go}\n")
    go = toolchain.GoCommand("go", machine, print)
    assert go.env(tmp_path)["GOTOOLCHAIN"] == expected, rule
    assert go.env(tmp_path)["CGO_ENABLED"] == "0" and "-mod=readonly" in go.env(tmp_path)["GOFLAGS"]


def test_a_kueue_entry_without_the_shipped_configuration_is_built_again(tmp_path: Path, monkeypatch) -> None:
    """An entry cached before its release's manager configuration was kept beside the manager is not found, so
    `ensure_kueue` builds it again; with every file, it is found, with each file's path."""
    monkeypatch.setenv("PTOL_CACHE_DIR", str(tmp_path))
    entry = tmp_path / toolchain._kueue_build().name
    (entry / toolchain.KUEUE_CRDS).mkdir(parents=True)
    (entry / toolchain.KUEUE_CRDS / "workloads.yaml").write_text("kind: CustomResourceDefinition\n")
    manager = entry / "kueue"
    manager.write_text("#!/bin/sh\n")
    manager.chmod(0o755)
    (entry / toolchain.KUEUE_WEBHOOKS).parent.mkdir(parents=True)
    (entry / toolchain.KUEUE_WEBHOOKS).write_text("kind: ValidatingWebhookConfiguration\n")
    (entry / "BUILD-INFO").write_text("sigs.k8s.io/kueue; manifests: crds, webhooks\n")
    assert toolchain.find_kueue() is None
    (entry / toolchain.KUEUE_MANAGER_CONFIG).parent.mkdir(parents=True)
    (entry / toolchain.KUEUE_MANAGER_CONFIG).write_text("kind: Configuration\n")
    found = toolchain.find_kueue()
    assert found is not None and found.manager_config == entry / toolchain.KUEUE_MANAGER_CONFIG
    assert found.manager == manager and found.crds == (entry / toolchain.KUEUE_CRDS / "workloads.yaml",)
