"""The README and docs/ hold together: every relative link reaches a file, every #anchor a heading of its
target (GitHub's slugs), prose lines stay within 120 characters, and the two pages that say where the code is
(docs/architecture.md, docs/development.md) name only paths that exist, and every package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])  # docs/tasks/ too
WIDTH = 120

# Lines of fenced code that may be wider, because wrapping would change what they show: (page, start of the
# line). Everything else, code included, is wrapped.
WIDE_CODE_LINES = [
    # the data-flow diagram (another page's drawing, not prose)
    ("docs/architecture.md", " kubectl / GitOps ──apply──▶"),
]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
# [text](target) and ![alt](target); the text may hold code spans and brackets one level deep.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name


def prose_and_code(text: str) -> list[tuple[int, str, bool]]:
    """(line number, line, inside a fenced code block) for every line but the fences themselves."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        lines.append((number, line, fenced))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: code spans keep their text, lower case, punctuation but hyphens and
    underscores dropped, each space a hyphen."""
    text = CODE_SPAN.sub(lambda match: match.group(2).strip(), heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading counts by its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's slug in `path`, repeats numbered -1, -2, … as GitHub does."""
    seen: dict[str, int] = {}
    found = set()
    for _, line, fenced in prose_and_code(path.read_text()):
        match = None if fenced else HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link outside code, code spans left out; a link's text may go on over
    the next line."""
    lines = {number: line for number, line, fenced in prose_and_code(path.read_text()) if not fenced}
    text = "\n".join(CODE_SPAN.sub("", lines.get(number, "")) for number in range(1, max(lines, default=0) + 1))
    return [(text.count("\n", 0, match.start()) + 1, match.group(1)) for match in LINK.finditer(text)]


def broken_links(path: Path) -> list[str]:
    problems = []
    for number, target in links(path):
        if SCHEME.match(target):
            continue  # a web address: not ours to check offline
        file_part, _, anchor = target.partition("#")
        where = f"{relative(path)}:{number}: {target}"
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists():
            problems.append(f"{where}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            problems.append(f"{where}: no heading #{anchor} in {relative(destination)}")
        elif anchor and destination.suffix != ".md":
            problems.append(f"{where}: an anchor into a file that is not Markdown")
    return problems


def long_lines(path: Path) -> list[str]:
    page = relative(path)
    allowed = [start for where, start in WIDE_CODE_LINES if where == page]
    return [
        f"{page}:{number}: {len(line)} characters"
        for number, line, fenced in prose_and_code(path.read_text())
        if len(line) > WIDTH
        and not line.startswith("|")  # a table row is one line, however wide
        and not (fenced and any(line.startswith(start) for start in allowed))
    ]


@pytest.mark.parametrize("page", PAGES, ids=relative)
def test_links_reach_a_file_and_a_heading(page: Path) -> None:
    assert broken_links(page) == []


@pytest.mark.parametrize("page", PAGES, ids=relative)
def test_lines_fit_in_120_characters(page: Path) -> None:
    assert long_lines(page) == []


def test_the_pages_are_found() -> None:
    assert {"README.md", "docs/install.md", "docs/quick-start.md"} <= {relative(page) for page in PAGES}


@pytest.mark.parametrize(
    "heading, anchor",
    [
        ("Readiness", "readiness"),
        ("`kubectl get ptp`", "kubectl-get-ptp"),
        ("Faults, and what each costs", "faults-and-what-each-costs"),
        ("The scheduler extender (self-managed schedulers)", "the-scheduler-extender-self-managed-schedulers"),
        ("Without the webhook: the CRD's own rules", "without-the-webhook-the-crds-own-rules"),
        ("`--retry-hold-seconds` and `ptol_*` metrics", "--retry-hold-seconds-and-ptol_-metrics"),
        ("1. What it does", "1-what-it-does"),
        ("Managed clusters: the guard alone", "managed-clusters-the-guard-alone"),
    ],
)
def test_slugs_follow_github(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_repeated_headings_are_numbered(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Setup\n\n```\n## not a heading\n```\n\n## Setup\n\n### Setup\n")
    assert anchors(page) == {"title", "setup", "setup-1", "setup-2"}


@pytest.mark.parametrize(
    "line, targets",
    [
        ("see [TLS](admission-webhooks.md#tls) and [here](#readiness).", ["admission-webhooks.md#tls", "#readiness"]),
        ("[`PreemptionToleration`](https://example.org/x) plugin", ["https://example.org/x"]),
        ("a code span `[not](a-link.md)` is no link", []),
        ("![diagram](img/flow.png)", ["img/flow.png"]),
        ("a link whose text goes on [over\nthe next line](install.md#helm)", ["install.md#helm"]),
    ],
)
def test_links_are_found_in_prose(tmp_path: Path, line: str, targets: list[str]) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# Page\n\n{line}\n\n```\n[in code](nowhere.md)\n```\n")
    assert [target for _, target in links(page)] == targets


def test_a_broken_link_and_a_long_line_are_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## Known heading\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[ok](other.md#known-heading) [gone](missing.md) [wrong](other.md#unknown) [self](#nowhere)\n\n"
        + "x" * 121
        + f"\n\n| {'y' * 130} |\n"
    )
    problems = broken_links(page)
    assert len(problems) == 3, problems
    assert ["missing.md" in problems[0], "#unknown" in problems[1], "#nowhere" in problems[2]] == [True] * 3
    assert long_lines(page) == ["page.md:5: 121 characters"]


# --- The pages that say where the code is (docs/architecture.md, docs/development.md) match the tree ---

PACKAGE = ROOT / "preemption_toleration"
MAPS = [ROOT / "docs" / "architecture.md", ROOT / "docs" / "development.md"]
# A code span is taken for a path of this repository when it has a slash or ends in `.py`, holds nothing but
# path characters, and starts where the tree does: at the package (`core/exemption.py`, `admission/`,
# `preemption_toleration/logs.py`) or at the top of the repository (`tests/unit/…`, `config/…`).
PATH_SPAN = re.compile(r"^[\w.-]+(/[\w.-]+)*/?$")
# Spans that look like paths of the tree but name something else, with where it is.
NOT_TREE_PATHS = {
    "etcd/": "inside each testbed/kubernetes-v*/",
    "kubernetes-v1.37.2/": "a cache directory of built binaries",
    "kwok-v0.8.0/": "a cache directory of built binaries",
    "preemption-toleration.scheduling.x-k8s.io/": "the annotations' prefix",
    "hack/lib/etcd.sh": "in Kubernetes' own tree",
}
PLACEHOLDER = re.compile(r"X\.Y\.Z")


def package_members() -> set[str]:
    """Each package (a directory with `__init__.py`) and top-level module of preemption_toleration."""
    return {
        path.name if path.is_dir() else path.stem
        for path in PACKAGE.iterdir()
        if (path.is_dir() and (path / "__init__.py").exists())
        or (path.suffix == ".py" and path.stem not in ("__init__", "__main__"))
    }


def named_paths(path: Path) -> list[str]:
    """Every code span of `path`, in prose or code, that reads as a path of the tree."""
    spans = {match.group(2).strip() for match in CODE_SPAN.finditer(path.read_text())}
    found = []
    for span in sorted(spans - NOT_TREE_PATHS.keys()):
        if not PATH_SPAN.match(span) or ("/" not in span and not span.endswith(".py")):
            continue
        first = span.split("/")[0]
        if span.endswith((".py", "/")) or (ROOT / first).exists() or first in package_members():
            found.append(span)
    return found


def exists_in_tree(span: str) -> bool:
    """`span` names a file or directory below the package, below the repository, or (a bare module name like
    `test_image.py`) somewhere under tests/ or benchmarks/; `X.Y.Z` stands for any release."""
    pattern = PLACEHOLDER.sub("*", span.rstrip("/"))
    for base in (PACKAGE, ROOT):
        if any(base.glob(pattern)):
            return True
    return "/" not in span and any(any((ROOT / top).rglob(span)) for top in ("tests", "benchmarks"))


def layout_entries() -> list[str]:
    """The paths of docs/development.md's Layout block: a line's first word, below the last unindented
    directory when the line is indented by two; deeper lines go on the line before."""
    text = (ROOT / "docs" / "development.md").read_text().split("## Layout", 1)[1]
    block = text.split("```", 2)[1]
    entries, parent = [], ""
    for line in block.splitlines()[1:]:
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or indent > 2:
            continue
        word = line.split()[0]
        if indent == 0:
            parent = word if word.endswith("/") else ""
            entries.append(word)
        else:
            entries.append(parent + word)
    return entries


def layer_table_members() -> set[str]:
    """The packages and modules in docs/architecture.md's table of layers (its second column)."""
    text = (ROOT / "docs" / "architecture.md").read_text().split("## 8. Layers", 1)[1]
    rows = [line.split("|") for line in text.splitlines() if re.match(r"^\|\s*\d+\s*\|", line)]
    return {match.group(2) for row in rows for match in CODE_SPAN.finditer(row[2])}


@pytest.mark.parametrize("page", MAPS, ids=relative)
def test_every_path_a_map_names_exists(page: Path) -> None:
    assert [span for span in named_paths(page) if not exists_in_tree(span)] == []


def test_the_layout_names_existing_paths_and_every_package() -> None:
    entries = layout_entries()
    assert [entry for entry in entries if not (ROOT / entry.rstrip("/")).exists()] == []
    named = {entry.split("/")[1].removesuffix(".py") for entry in entries if entry.startswith("preemption_toleration/")}
    assert named - {""} == package_members(), "every package and module in docs/development.md's Layout"


def test_the_layer_table_names_every_package() -> None:
    adapters = {f"{path.parent.name}.adapter" for path in PACKAGE.glob("*/adapter") if (path / "__init__.py").exists()}
    assert layer_table_members() == package_members() | adapters, (
        "every package, module and feature adapter in docs/architecture.md §8's table"
    )


@pytest.mark.parametrize(
    "span, is_path",
    [
        ("core/exemption.py", True),
        ("admission/", True),
        ("preemption_toleration/logs.py", True),
        ("records/pod.py", True),  # a package that does not exist is still a path, and then reported
        ("tests/unit/test_layers.py", True),
        ("kubectl get ptp", False),
        ("k8s.io/kubernetes", False),
        ("$XDG_CACHE_HOME/preemption-toleration", False),
    ],
)
def test_paths_are_told_from_other_code_spans(tmp_path: Path, span: str, is_path: bool) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# Page\n\nsee `{span}` here\n")
    assert (named_paths(page) == [span]) is is_path
