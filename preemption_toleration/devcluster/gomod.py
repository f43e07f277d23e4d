"""The Go build modules of the test bed, written from Kubernetes' own files (pure: text in, text out).

k8s.io/kubernetes vX.Y.Z replaces each staging module (k8s.io/api, k8s.io/client-go, ...) with a path inside
its own tree, so it cannot be built as a dependency as it is. A build module of ours requires it and pins
every staging module it names to the release's v0.Y.Z; etcd's server module gets a build module of its own
at the version the release's tooling names (hack/lib/etcd.sh). The binaries are the modules' `tool`s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KUBERNETES_MODULE = "k8s.io/kubernetes"
ETCD_SERVER_MODULE = "go.etcd.io/etcd/server/v3"
KWOK_MODULE = "sigs.k8s.io/kwok"
KUEUE_MODULE = "sigs.k8s.io/kueue"
HELM_MODULE = "helm.sh/helm/v3"
KUSTOMIZE_MODULE = "sigs.k8s.io/kustomize/kustomize/v5"
# What kustomize's releases stamp into the binary (`kustomize version` then names the release).
KUSTOMIZE_VERSION_VARIABLE = "sigs.k8s.io/kustomize/api/provenance.version"
KUBERNETES_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
BUILD_MODULE_PREFIX = "preemption-toleration.test/testbed"
# The oldest `go` line a module with a `tool` directive may have.
OLDEST_TOOL_GO = "1.24"

_STAGING_REPLACE = re.compile(r"^\s*(k8s\.io/[A-Za-z0-9._-]+)\s*=>\s*\./staging/", re.MULTILINE)
_GO_DIRECTIVE = re.compile(r"^go\s+(\d+\.\d+(?:\.\d+)?)\s*$", re.MULTILINE)
_ETCD_VERSION = re.compile(r"^ETCD_VERSION=\$\{ETCD_VERSION:-([0-9]+\.[0-9]+\.[0-9]+)\}", re.MULTILINE)
_RELEASE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")


class GoModError(ValueError):
    """A file of Kubernetes' tree does not look as expected; the message says which."""


@dataclass(frozen=True)
class Release:
    """A Kubernetes release as the test bed names it: `1.37.2`."""

    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> Release:
        match = _RELEASE.match(text.strip())
        if match is None:
            raise GoModError(f"{text!r} is not a Kubernetes release such as 1.37.2")
        major, minor, patch = (int(part) for part in match.groups())
        return cls(major, minor, patch)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def tag(self) -> str:
        """The module version of k8s.io/kubernetes: `v1.37.2`."""
        return f"v{self}"

    @property
    def staging_tag(self) -> str:
        """The version of its staging modules: `v0.37.2`."""
        return f"v0.{self.minor}.{self.patch}"


def staging_modules(kubernetes_go_mod: str) -> list[str]:
    """The modules k8s.io/kubernetes' go.mod replaces with a path of its staging tree, in file order."""
    modules = _STAGING_REPLACE.findall(kubernetes_go_mod)
    if not modules:
        raise GoModError("k8s.io/kubernetes' go.mod replaces no module with ./staging/: not a Kubernetes go.mod")
    return list(dict.fromkeys(modules))


def go_directive(go_mod: str) -> str:
    """The `go` line's version (the oldest Go that builds the module)."""
    match = _GO_DIRECTIVE.search(go_mod)
    if match is None:
        raise GoModError("go.mod has no `go` line")
    return match.group(1)


def etcd_version(etcd_sh: str) -> str:
    """The etcd release a Kubernetes release tests with, from its hack/lib/etcd.sh: `3.7.0`."""
    match = _ETCD_VERSION.search(etcd_sh)
    if match is None:
        raise GoModError("hack/lib/etcd.sh sets no ETCD_VERSION default")
    return match.group(1)


def kubernetes_build_go_mod(release: Release, kubernetes_go_mod: str) -> str:
    """go.mod of the module that builds the release's four commands (go.sum comes from `go mod tidy`)."""
    tools = "".join(f"\t{KUBERNETES_MODULE}/cmd/{command}\n" for command in KUBERNETES_COMMANDS)
    pins = "".join(f"\t{module} => {module} {release.staging_tag}\n" for module in staging_modules(kubernetes_go_mod))
    return (
        f"// Builds Kubernetes {release}'s commands for the test bed (`ptol dev cluster pin` writes this file).\n"
        f"module {BUILD_MODULE_PREFIX}/kubernetes-{release.tag}\n\n"
        f"go {go_directive(kubernetes_go_mod)}\n\n"
        f"require {KUBERNETES_MODULE} {release.tag}\n\n"
        f"tool (\n{tools})\n\n"
        f"// k8s.io/kubernetes replaces its staging modules with paths of its own tree: pin them to the release.\n"
        f"replace (\n{pins})\n"
    )


def etcd_build_go_mod(release: Release, etcd: str, go: str) -> str:
    """go.mod of the module that builds etcd `etcd` (the server module's root is etcd's `main`)."""
    return (
        f"// Builds etcd {etcd}, which Kubernetes {release} names in hack/lib/etcd.sh (`ptol dev cluster pin`).\n"
        f"module {BUILD_MODULE_PREFIX}/etcd-v{etcd}\n\n"
        f"go {go}\n\n"
        f"require {ETCD_SERVER_MODULE} v{etcd}\n\n"
        f"tool {ETCD_SERVER_MODULE}\n"
    )


def kwok_build_go_mod(kwok: str, go: str) -> str:
    """go.mod of the module that builds KWOK `kwok` (e.g. v0.8.0), the test bed's node simulator."""
    return (
        "// Builds KWOK, the node simulator of the test bed (`ptol dev cluster pin --kwok` writes this file).\n"
        f"module {BUILD_MODULE_PREFIX}/kwok\n\n"
        f"go {go}\n\n"
        f"require {KWOK_MODULE} {kwok}\n\n"
        f"tool {KWOK_MODULE}/cmd/kwok\n"
    )


def kueue_build_go_mod(kueue: str, go: str) -> str:
    """go.mod of the module that builds Kueue `kueue` (e.g. v0.19.2): its controller manager, which the test bed
    runs for `--feature kueue`."""
    return (
        "// Builds Kueue's controller manager, which the test bed runs for `--feature kueue` "
        "(`ptol dev cluster pin --kueue` writes this file).\n"
        f"module {BUILD_MODULE_PREFIX}/kueue\n\n"
        f"go {newest_go(go, OLDEST_TOOL_GO)}\n\n"
        f"require {KUEUE_MODULE} {kueue}\n\n"
        f"tool {KUEUE_MODULE}/cmd/kueue\n"
    )


def kustomize_tag(text: str) -> str:
    """A kustomize release as its module version: `5.5.0` and `v5.5.0` are `v5.5.0`."""
    match = re.match(r"^v?(5\.\d+\.\d+)$", text.strip())
    if match is None:
        raise GoModError(f"{text!r} is not a kustomize v5 release such as v5.5.0")
    return f"v{match.group(1)}"


def kustomize_build_go_mod(kustomize: str, go: str) -> str:
    """go.mod of the module that builds kustomize `kustomize` (e.g. v5.5.0), which the tests render config/ with."""
    return (
        f"// Builds kustomize {kustomize}, which the tests render config/ with "
        "(`ptol dev cluster pin --kustomize` writes this file).\n"
        f"module {BUILD_MODULE_PREFIX}/kustomize-{kustomize}\n\n"
        f"go {newest_go(go, OLDEST_TOOL_GO)}\n\n"
        f"require {KUSTOMIZE_MODULE} {kustomize}\n\n"
        f"tool {KUSTOMIZE_MODULE}\n"
    )


def required_version(build_go_mod: str, module: str) -> str:
    """The version a build module requires of `module` (a `require` line, or a line of a `require` block)."""
    line = rf"^(?:require)?\s*{re.escape(module)}\s+(v\S+)\s*(?://.*)?$"
    match = re.search(line, build_go_mod, re.MULTILINE)
    if match is None:
        raise GoModError(f"the build module requires no {module}")
    return match.group(1)


def version_ldflags(release: Release, build_date: str) -> str:
    """`-X` flags that stamp the release into the binaries, as Kubernetes' hack/lib/version.sh does.

    Without them every component reports v0.0.0, which breaks version checks (kubectl's skew warning,
    Helm's kubeVersion). The git commit is not known from a module, and is left out as upstream does then.
    """
    values = {
        "gitVersion": release.tag,
        "gitMajor": str(release.major),
        "gitMinor": str(release.minor),
        "gitTreeState": "clean",
        "buildDate": build_date,
    }
    packages = ("k8s.io/client-go/pkg/version", "k8s.io/component-base/version")
    return " ".join(f"-X {package}.{key}={value}" for key, value in values.items() for package in packages)


def go_version_tuple(text: str) -> tuple[int, ...]:
    """`go1.26.8` or `1.26` as numbers, for comparing Go versions (pre-release suffixes are ignored)."""
    match = re.match(r"^(?:go)?(\d+(?:\.\d+)*)", text.strip())
    if match is None:
        raise GoModError(f"{text!r} is not a Go version")
    return tuple(int(part) for part in match.group(1).split("."))


def newest_go(*versions: str) -> str:
    """The newest of some `go` line versions: `newest_go("1.21", "1.24")` is "1.24"."""
    return max(versions, key=go_version_tuple)
