"""Every reference in the repository points into it: "architecture §N" names a section of
docs/architecture.md, and nothing cites a design document that is not here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    path
    for pattern in (
        "preemption_toleration/**/*.py",
        "tests/**/*.py",
        "benchmarks/*.py",
        "config/**/*.yaml",
        "scripts/*.sh",
        "*.md",
        "docs/*.md",
        "Dockerfile",
        "pyproject.toml",
    )
    for path in ROOT.glob(pattern)
]


def test_architecture_sections_cited_exist() -> None:
    sections = set(re.findall(r"^## (\d+)\. ", (ROOT / "docs" / "architecture.md").read_text(), re.MULTILINE))
    cited = {
        (str(path.relative_to(ROOT)), number)
        for path in SOURCES
        for number in re.findall(r"architecture §(\d+)", path.read_text())
    }
    assert cited, "nothing cites the architecture document"
    assert {(where, number) for where, number in cited if number not in sections} == set()


def test_no_reference_to_a_document_outside_the_repository() -> None:
    outside = re.compile(r"DESIGN(\.md)? ?§|\.\./shared|NOTES\.md")
    found = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in SOURCES
        if path != Path(__file__)
        for match in outside.finditer(path.read_text())
    ]
    assert found == []
