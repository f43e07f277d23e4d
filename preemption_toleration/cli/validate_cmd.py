"""`ptol validate -f PATH`: check manifests offline with the rules the webhooks use."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from preemption_toleration.governance.documents import conflicts
from preemption_toleration.validation.documents import Document, Located, check_documents, load_documents
from preemption_toleration.validation.findings import error

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check PriorityClass and PreemptionTolerationPolicy manifests offline",
        description="Check every PriorityClass and PreemptionTolerationPolicy in the given files with the "
        "rules the admission webhooks use. Prints 'path:document: severity: message' lines; exits 1 "
        "when any error is found. Other kinds are ignored.",
    )
    parser.add_argument(
        "-f",
        "--filename",
        dest="paths",
        action="append",
        required=True,
        metavar="PATH",
        help="a file, a directory (searched recursively for .yaml, .yml and .json) or '-' for stdin; repeatable",
    )
    parser.add_argument("--warnings-as-errors", action="store_true", help="exit 1 on warnings too")
    parser.set_defaults(handler=run)


def _sources(path_text: str) -> Iterator[tuple[str, str | None, str | None]]:
    """(name, text, problem) for each input file."""
    if path_text == "-":
        yield "<stdin>", sys.stdin.read(), None
        return
    path = Path(path_text)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
    else:
        files = [path]
    for file in files:
        try:
            yield str(file), file.read_text(encoding="utf-8"), None
        except (OSError, UnicodeDecodeError) as problem:
            yield str(file), None, f"cannot read: {getattr(problem, 'strerror', None) or problem}"


def run(args: argparse.Namespace) -> int:
    documents: list[Document] = []
    located: list[Located] = []
    for path_text in args.paths:
        for source, text, problem in _sources(path_text):
            if text is None:
                located.append(Located(source, 0, error("read", problem or "cannot read")))
                continue
            loaded, yaml_problems = load_documents(text, source)
            documents += loaded
            located += yaml_problems
    located += check_documents(documents) + conflicts(documents)
    located.sort(key=lambda item: (item.source, item.index))
    for item in located:
        print(item.render())
    failed = any(item.finding.is_error or args.warnings_as_errors for item in located)
    return 1 if failed else 0
