"""`ptol validate -f PATH`: check manifests offline with the rules the webhooks use."""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

import yaml

from preemption_toleration.cli.validate_inputs import Inputs, Unreadable
from preemption_toleration.cli.validate_output import FORMATS, Output, writer
from preemption_toleration.governance.conflicts import between_documents
from preemption_toleration.validation.documents import KUSTOMIZATION_FILES, Located, ManifestCheck
from preemption_toleration.validation.findings import Severity, error, note

PATCH_FIELDS = ("patches", "patchesStrategicMerge", "patchesJson6902")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check PriorityClass and PreemptionTolerationPolicy manifests offline",
        description="Check every PriorityClass and PreemptionTolerationPolicy in the given files with the "
        "rules the admission webhooks use. Prints 'path:line: severity: message' lines and a summary line (-o "
        "json: a JSON list of findings; -o sarif: a SARIF 2.1.0 log for GitHub code scanning; both print the "
        "summary on stderr). Each file is read once; a file or directory that cannot be read, a dangling link "
        "and a symlink loop are errors. Kustomize files and patches are skipped with a note; other kinds are "
        "skipped and counted. Exit codes: 0 when something was checked and no error was found, 1 on any error "
        "(and when there is nothing to check), 2 on a usage error.",
        epilog="Rules and examples: docs/validation-rules.md",
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
    parser.add_argument(
        "--exclude",
        dest="excludes",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave out the files and directories the pattern matches, as printed or relative to the -f "
        "directory: * and ? within a directory level, ** across levels, no / for a name at any depth "
        "(e.g. 'charts/*/templates/**', '*.tmpl.yaml'); repeatable",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=FORMATS,
        default="text",
        help="text lines (default), json (a list of findings: path, line, severity, rule, message) or sarif "
        "(SARIF 2.1.0, for GitHub code scanning)",
    )
    parser.add_argument("--warnings-as-errors", action="store_true", help="exit 1 on warnings too")
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="exit 0 when the input holds no PriorityClass and no policy (by default that is an error)",
    )
    parser.set_defaults(handler=run)


def _patch_paths(kustomization: Path) -> Iterator[str]:
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
            if isinstance(target, str) and "\n" not in target and "\0" not in target:
                yield os.path.realpath(kustomization.parent / target)


def kustomize_roles(files: Iterable[Path]) -> dict[str, str]:
    """Why each kustomize file of the input is skipped, by its real path: a kustomization, or a patch one of
    them lists (the kustomizations of the input and those beside its files)."""
    roles: dict[str, str] = {}
    files = list(files)
    kustomizations = {os.path.realpath(file) for file in files if file.name in KUSTOMIZATION_FILES}
    for file in files:
        kustomizations.update(
            os.path.realpath(file.parent / name) for name in KUSTOMIZATION_FILES if (file.parent / name).is_file()
        )
    for real_path in sorted(kustomizations):
        kustomization = Path(real_path)
        roles[real_path] = "kustomize's own file"
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
    shown_lines = _Printer(writer(args.output), args.warnings_as_errors)
    inputs = Inputs(args.excludes)
    for path_text in args.paths:
        if path_text == "-":
            shown_lines.emit(check.check_stream("<stdin>", _stdin()))
            continue
        found = inputs.files(path_text)
        roles = kustomize_roles(Path(item) for item in found if isinstance(item, str))
        for item in found:
            if isinstance(item, Unreadable):
                check.summary.counts[Severity.ERROR] += 1
                shown_lines.emit([Located(item.path, 0, error(item.rule, item.message))])
            else:
                shown_lines.emit(_check_file(check, Path(item), roles.get(os.path.realpath(item))))
    shown_lines.emit(check.finish(between_documents))
    summary = check.summary
    summary.excluded_directories, summary.excluded_files = inputs.excluded_directories, inputs.excluded_files
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
    shown_lines.output.finish(summary.line())
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
    """Writes findings as they come (the documents are not kept) and notes whether the run fails."""

    def __init__(self, output: Output, warnings_as_errors: bool) -> None:
        self.output = output
        self.warnings_as_errors = warnings_as_errors
        self.failed = False

    def emit(self, located: Iterable[Located]) -> None:
        for item in located:
            severity = item.finding.severity
            if severity is Severity.ERROR or (severity is Severity.WARNING and self.warnings_as_errors):
                self.failed = True
            self.output.emit(item)
