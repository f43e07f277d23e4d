"""The direction of dependencies (docs/architecture.md, "Layers"), read from the source: the pure packages
import no I/O library and no adapter, and no package imports one above it."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "preemption_toleration"

# The features whose package holds their pure decisions at its top and their adapter in `<feature>.adapter`.
FEATURES = ("guard", "extender", "steering", "kueue")
# Lowest first. A package may import its own layer's and lower layers' packages, never a higher one.
LAYERS: list[set[str]] = [
    {"core", "logs"},  # the contract itself; standard library only
    {"api"},  # pydantic models of what we accept and produce
    {"validation", "records", "inventory"},  # admission rules; records of pods, nodes, classes, policies; indexes
    {"governance", "extender"},  # who governs a class, the plan; the extender's victim choice
    {"admission"},  # the admission decisions: a PriorityClass or policy request and the caches in, a response out
    {"guard", "steering", "kueue"},  # the guard's decisions and nudge plan; steering's plan; Kueue's boost
    {"manifests"},  # every generated manifest: CRDs, webhook configurations, admission policy, chart sources
    {"pki", "kube", "telemetry"},  # I/O basics: certificates, the API client, informers; every metric
    {"serving"},  # what the server and every feature's adapter share: an endpoint's shape, the server's metrics
    {*(f"{feature}.adapter" for feature in FEATURES)},  # each feature's adapter: endpoint, worker, Leases, Events
    {"operator", "webhooks"},  # the adapters: kopf handlers, and the aiohttp server that serves the features
    {"devcluster"},  # the local control plane (a dev and test harness)
    {"demo"},
    {"cli"},
]
PURE = {
    *("core", "logs", "api", "validation", "records", "inventory"),
    *("governance", "extender", "admission", "guard", "steering", "kueue"),
}
PURE |= {"manifests"}  # builds manifests as dicts and text: writing them is the CLI's
IO_LIBRARIES = {
    "aiohttp",
    "kubernetes_asyncio",
    "kopf",
    "prometheus_client",
    "subprocess",
    "socket",
    "ssl",
    "urllib",
    "http",
    "ctypes",
    "cryptography",
}
# Adapters that must not know each other: each talks to the API server on its own; the server wires the
# features' adapters together, none of them imports another.
ADAPTERS = ("operator", "webhooks", *(f"{feature}.adapter" for feature in FEATURES))
SIBLINGS = {frozenset({one, other}) for one in ADAPTERS for other in ADAPTERS if one != other}
SIBLINGS -= {frozenset({"webhooks", f"{feature}.adapter"}) for feature in FEATURES}


def unit_of(parts: tuple[str, ...]) -> str:
    """The layered unit a module's path (inside the package) belongs to: its top-level package, or a
    feature's adapter."""
    if len(parts) >= 2 and parts[0] in FEATURES and parts[1] == "adapter":
        return f"{parts[0]}.adapter"
    return parts[0]


def layer_of(package: str) -> int:
    return next(index for index, layer in enumerate(LAYERS) if package in layer)


def imports() -> list[tuple[str, str, str]]:
    """(importing package, imported module, file) for every import in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) == 1:  # __init__, __main__, logs, pki
            if parts[0] in ("__init__.py", "__main__.py"):
                continue
            package = parts[0][:-3]
        else:
            package = unit_of(parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = (
                    [node.module]
                    if node.module != "preemption_toleration"
                    else [f"preemption_toleration.{alias.name}" for alias in node.names]
                )
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            found += [(package, name, str(path.relative_to(PACKAGE.parent))) for name in names]
    return found


IMPORTS = imports()


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    packages |= {p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")}
    packages |= {f"{p.parent.name}.adapter" for p in PACKAGE.glob("*/adapter") if (p / "__init__.py").exists()}
    assert packages == set().union(*LAYERS)


@pytest.mark.parametrize("package", sorted(PURE))
def test_pure_packages_import_no_io_library(package: str) -> None:
    found = [
        f"{where}: {name}"
        for importer, name, where in IMPORTS
        if importer == package and name.split(".")[0] in IO_LIBRARIES
    ]
    assert found == []


def test_core_imports_the_standard_library_only() -> None:
    found = [
        f"{where}: {name}"
        for importer, name, where in IMPORTS
        if importer == "core"
        and name.split(".")[0] not in sys.stdlib_module_names
        and not name.startswith("preemption_toleration.core")
    ]
    assert found == []


def test_no_package_imports_a_higher_layer_or_a_sibling_adapter() -> None:
    wrong = []
    for importer, name, where in IMPORTS:
        if not name.startswith("preemption_toleration."):
            continue
        imported = unit_of(tuple(name.split(".")[1:]))
        if imported == importer:
            continue
        if layer_of(imported) > layer_of(importer) or frozenset({importer, imported}) in SIBLINGS:
            wrong.append(f"{where}: {importer} imports {name}")
    assert wrong == []


def module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports() -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports, wherever the import stands (under
    TYPE_CHECKING and inside functions too: a cycle through those still ties two modules together)."""
    modules = {module_of(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from package import module` names a module; `from module import name` names the module
                found |= {
                    f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                    for alias in node.names
                }
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
        graph[module] = {name for name in found if name in modules and name != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


CYCLE_CASES = [
    ("no cycle", {"a": {"b"}, "b": set()}, []),
    ("two modules importing each other", {"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ("a cycle through a third module", {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
]


@pytest.mark.parametrize(("rule", "graph", "expected"), CYCLE_CASES, ids=[case[0] for case in CYCLE_CASES])
def test_cycles_are_found(rule: str, graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(graph) == expected, rule


def test_no_module_imports_one_that_imports_it_back() -> None:
    """Packages are layered (above); within a package, modules must not import each other in a ring either,
    even under TYPE_CHECKING."""
    assert cycles(module_imports()) == []
