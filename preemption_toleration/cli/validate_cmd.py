"""`ptol validate -f PATH`: check manifests offline with the rules the webhooks use."""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import yaml

from preemption_toleration.governance.documents import between_documents
from preemption_toleration.validation.documents import KUSTOMIZATION_FILES, Located, ManifestCheck
from preemption_toleration.validation.findings import Severity, error, note

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
PATCH_FIELDS = ("patches", "patchesStrategicMerge", "patchesJson6902")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check PriorityClass and PreemptionTolerationPolicy manifests offline",
        description="Check every PriorityClass and PreemptionTolerationPolicy in the given files with the "
        "rules the admission webhooks use. Prints 'path:document: severity: message' lines and a summary "
        "line; exits 1 when any error is found, and when there is nothing to check. Kustomize files and "
        "patches are skipped with a note; other kinds are skipped and counted.",
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
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="exit 0 when the input holds no PriorityClass and no policy (by default that is an error)",
    )
    parser.set_defaults(handler=run)


def _files(path_text: str) -> list[Path]:
    path = Path(path_text)
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
    return [path]


def _patch_paths(kustomization: Path) -> Iterator[Path]:
    """The files a kustomization lists as patches (strategic-merge or JSON 6902)."""
    try:
        content = yaml.load(kustomization.read_bytes(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError, ValueError, RecursionError):
        return  # reported when the file itself is read
    if not isinstance(content, dict):
        return
    for field in PATCH_FIELDS:
        for entry in content.get(field) or []:
            target = entry.get("path") if isinstance(entry, dict) else entry
            if isinstance(target, str) and "\n" not in target:
                yield (kustomization.parent / target).resolve()


def kustomize_roles(files: list[Path]) -> dict[Path, str]:
    """Why each kustomize file of the input is skipped: a kustomization, or a patch one of them lists (the
    kustomizations of the input and those beside its files)."""
    roles: dict[Path, str] = {}
    kustomizations = {file.resolve() for file in files if file.name in KUSTOMIZATION_FILES}
    for file in files:
        kustomizations.update(
            (file.parent / name).resolve() for name in KUSTOMIZATION_FILES if (file.parent / name).is_file()
        )
    for kustomization in sorted(kustomizations):
        roles[kustomization] = "kustomize's own file"
        for patch in _patch_paths(kustomization):
            directory = os.path.relpath(kustomization.parent)
            roles.setdefault(
                patch,
                f"a kustomize patch (listed in {os.path.join(directory, kustomization.name)}), not a whole object; "
                f"to check the result: kustomize build {directory} | ptol validate -f -",
            )
    return roles


def _stdin() -> IO[bytes]:
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream put in place of stdin (tests)
        return io.BytesIO(sys.stdin.read().encode("utf-8"))
    return _seekable(buffer)


def _seekable(stream: IO[bytes]) -> IO[bytes]:
    """`stream`, or a copy of it that can seek (the reader goes back after a broken document): a pipe, a
    FIFO or `<(kustomize build ...)`, spooled to a temporary file past 16 MiB."""
    if stream.seekable():
        return stream
    spool = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)
    shutil.copyfileobj(stream, spool)
    spool.seek(0)
    return spool


def run(args: argparse.Namespace) -> int:
    check = ManifestCheck()
    shown_lines = _Printer(args.warnings_as_errors)
    for path_text in args.paths:
        if path_text == "-":
            shown_lines.emit(check.check_stream("<stdin>", _stdin()))
            continue
        files = _files(path_text)
        roles = kustomize_roles(files)
        for file in files:
            shown_lines.emit(_check_file(check, file, roles.get(file.resolve())))
    shown_lines.emit(check.finish(between_documents))
    summary = check.summary
    if summary.checked == 0:
        where = ", ".join(args.paths)
        message = (
            f"nothing to check: no PriorityClass or PreemptionTolerationPolicy in {where} "
            f"({summary.files} file{'' if summary.files == 1 else 's'}, {summary.documents} "
            f"document{'' if summary.documents == 1 else 's'})"
        )
        if args.allow_empty:
            shown_lines.emit([Located(where, 0, note("nothing-to-check", message + "."))])
        else:
            summary.counts[Severity.ERROR] += 1
            shown_lines.emit(
                [
                    Located(
                        where,
                        0,
                        error(
                            "nothing-to-check",
                            message + ". Fix: point -f at the manifests, or pass --allow-empty where an input "
                            "without them is expected.",
                        ),
                    )
                ]
            )
    print(summary.line())
    return 1 if shown_lines.failed else 0


def _check_file(check: ManifestCheck, file: Path, role: str | None) -> Iterator[Located]:
    try:
        stream = file.open("rb")
    except OSError as problem:
        check.summary.files += 1
        check.summary.counts[Severity.ERROR] += 1
        yield Located(str(file), 0, error("read", f"cannot read: {problem.strerror or problem}"))
        return
    with stream:
        try:
            yield from check.check_stream(str(file), _seekable(stream), role)
        except OSError as problem:
            check.summary.counts[Severity.ERROR] += 1
            yield Located(str(file), 0, error("read", f"cannot read: {problem.strerror or problem}"))


class _Printer:
    """Prints findings as they come (the documents are not kept) and notes whether the run fails."""

    def __init__(self, warnings_as_errors: bool) -> None:
        self.warnings_as_errors = warnings_as_errors
        self.failed = False

    def emit(self, located: Any) -> None:
        for item in located:
            severity = item.finding.severity
            if severity is Severity.ERROR or (severity is Severity.WARNING and self.warnings_as_errors):
                self.failed = True
            print(item.render())
