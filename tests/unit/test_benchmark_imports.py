"""Every name a benchmark imports from the project (or from its tests) still exists: a benchmark is run by
hand, now and then, and a rename that breaks it would otherwise be found only on the day its figures are
needed."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
PROJECT = ("preemption_toleration", "tests")


def imported_names(script: Path) -> list[tuple[str, str | None]]:
    """(module, name) of each import of the project in `script`; name None for `import module`."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in PROJECT:
                found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.split(".")[0] in PROJECT]
    return found


@pytest.mark.parametrize("script", sorted(BENCHMARKS.glob("*.py")), ids=lambda path: path.name)
def test_what_a_benchmark_imports_exists(script: Path) -> None:
    missing = []
    for module, name in imported_names(script):
        try:
            imported = importlib.import_module(module)
        except ImportError as error:
            missing.append(f"{module}: {error}")
            continue
        if name is not None and not hasattr(imported, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name}")
    assert missing == []
