"""The files `ptol validate -f PATH` reads: a file, or the `.yaml`, `.yml` and `.json` files of a directory,
searched recursively.

- Each file is read once, however it is reached (`-f a.yaml -f a.yaml`, a file and its directory, two links
  to one directory): the same object twice in the input is then a real duplicate, never an echo.
- Nothing is skipped silently: a directory that cannot be listed, a file that cannot be opened, a dangling
  link or a symlink loop is an error that names the path.
- `--exclude GLOB` leaves out the files and directories it matches (counted in the summary).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

Identity = tuple[int, int]  # (device, inode): one file or directory, whatever the path to it


@dataclass(frozen=True)
class Unreadable:
    """A path that could not be read: `rule` is `read` or `symlink-loop`."""

    path: str
    rule: str
    message: str


def glob_pattern(glob: str) -> re.Pattern[str]:
    """A glob as .gitignore writes them: `*` and `?` within one directory level, `**` across levels
    (`charts/*/templates/**`, `**/templates`), `[abc]` and `[!abc]` one character; a pattern without `/`
    matches a name at any depth (`*.tmpl.yaml`, `templates`)."""
    glob = glob.strip()
    while glob.startswith("./"):
        glob = glob[2:]
    glob = glob.rstrip("/") or "/"
    if "/" not in glob:
        glob = "**/" + glob
    segments = glob.split("/")
    regex, separator = "", ""
    for position, segment in enumerate(segments):
        if segment == "**":
            if position < len(segments) - 1:
                regex += separator + "(?:.*/)?"  # any levels, none included
                separator = ""
            else:
                regex += "(?:/.*)?" if separator else ".*"  # the directory itself, or anything in it
            continue
        regex += separator + _segment(segment)
        separator = "/"
    return re.compile(regex, re.DOTALL)


def _segment(segment: str) -> str:
    regex, position = "", 0
    while position < len(segment):
        char = segment[position]
        position += 1
        if char == "*":
            regex += "[^/]*"
        elif char == "?":
            regex += "[^/]"
        elif char == "[" and (end := segment.find("]", position + 1)) != -1:
            body = segment[position:end]
            negated = body.startswith("!")
            body = body[1:] if negated else body
            regex += "[" + ("^/" if negated else "") + body.replace("\\", "\\\\").replace("^", "\\^") + "]"
            position = end + 1
        else:
            regex += re.escape(char)
    return regex


def _posix(path: str) -> str:
    return os.path.normpath(path).replace(os.sep, "/")


@dataclass
class Inputs:
    """The files of every `-f` path of one run, each once, with the excluded ones counted."""

    excludes: Sequence[str] = ()
    _patterns: list[re.Pattern[str]] = field(default_factory=list)
    _files: set[Identity] = field(default_factory=set)
    _directories: set[Identity] = field(default_factory=set)
    _excluded: dict[str, bool] = field(default_factory=dict)  # real path: a directory

    def __post_init__(self) -> None:
        self._patterns = [glob_pattern(glob) for glob in self.excludes]

    @property
    def excluded_directories(self) -> int:
        return sum(self._excluded.values())

    @property
    def excluded_files(self) -> int:
        return len(self._excluded) - self.excluded_directories

    def _exclude(self, path: str, directory: bool) -> None:
        self._excluded[os.path.realpath(path)] = directory

    def excluded(self, path: str, root: str | None = None) -> bool:
        """Whether a pattern matches `path` as printed or, inside a `-f` directory, relative to it."""
        if not self._patterns:
            return False
        candidates = [_posix(path)]
        if root is not None:
            candidates.append(_posix(os.path.relpath(path, root)))
        return any(pattern.fullmatch(candidate) for pattern in self._patterns for candidate in candidates)

    def files(self, path_text: str) -> list[str | Unreadable]:
        """The files of one `-f` path not read before, and the paths that could not be read, in order."""
        try:
            status = os.stat(path_text)
        except OSError as problem:
            return [_unreadable(path_text, problem)]
        if stat.S_ISDIR(status.st_mode):
            if self.excluded(path_text):
                self._exclude(path_text, True)
                return []
            return list(self._walk(path_text, path_text, status, {}))
        if self.excluded(path_text):
            self._exclude(path_text, False)
            return []
        return [path_text] if self._first_time(status) else []

    def _first_time(self, status: os.stat_result) -> bool:
        identity = (status.st_dev, status.st_ino)
        if identity in self._files:
            return False
        self._files.add(identity)
        return True

    def _walk(
        self, directory: str, root: str, status: os.stat_result, ancestors: dict[Identity, str]
    ) -> Iterator[str | Unreadable]:
        identity = (status.st_dev, status.st_ino)
        if identity in self._directories:
            return  # read already, through another -f path or another link
        self._directories.add(identity)
        try:
            with os.scandir(directory) as entries:
                names = sorted(entry.name for entry in entries)
        except OSError as problem:
            yield Unreadable(
                directory,
                "read",
                f"cannot read the directory: {_reason(problem)}; the files in it were not checked. Fix: make it "
                "readable, or leave it out with --exclude.",
            )
            return
        inside = {**ancestors, identity: directory}
        for name in names:
            path = os.path.join(directory, name)
            excluded = self.excluded(path, root)
            try:
                entry_status = os.stat(path)
            except OSError as problem:
                if excluded:
                    self._exclude(path, False)
                else:
                    yield _unreadable(path, problem)
                continue
            if stat.S_ISDIR(entry_status.st_mode):
                if excluded:
                    self._exclude(path, True)
                elif (back_to := _loop_target(path, directory, entry_status, inside)) is not None:
                    yield Unreadable(
                        path,
                        "symlink-loop",
                        f"symlink loop: it leads back to {back_to}, which contains it. Fix: remove the link, "
                        "or leave it out with --exclude.",
                    )
                else:
                    yield from self._walk(path, root, entry_status, inside)
            elif stat.S_ISREG(entry_status.st_mode) and name.endswith(MANIFEST_SUFFIXES):
                if excluded:
                    self._exclude(path, False)
                elif self._first_time(entry_status):
                    yield path


def _loop_target(path: str, directory: str, status: os.stat_result, inside: dict[Identity, str]) -> str | None:
    """Where a directory leads back to when it is a link to a directory that contains it (one being read,
    or one above the `-f` path: `up -> ..`), else None."""
    if (status.st_dev, status.st_ino) in inside:
        return inside[(status.st_dev, status.st_ino)]
    if not os.path.islink(path):
        return None
    target, here = os.path.realpath(path), os.path.realpath(directory)
    return os.readlink(path) if here == target or here.startswith(target.rstrip(os.sep) + os.sep) else None


def _reason(problem: OSError) -> str:
    return problem.strerror or str(problem)


def _unreadable(path: str, problem: OSError) -> Unreadable:
    """Why `path` cannot be read, in one line: a symlink loop, a dangling link, or the system's words."""
    if problem.errno == errno.ELOOP:
        return Unreadable(
            path,
            "symlink-loop",
            "symlink loop: its links lead back to each other, never to a file. Fix: point the link at a file, "
            "or remove it.",
        )
    if problem.errno == errno.ENOENT and os.path.islink(path):
        return Unreadable(
            path,
            "read",
            f"cannot read: a link to {os.readlink(path)}, which does not exist. Fix: point the link at a file, "
            "or remove it.",
        )
    return Unreadable(path, "read", f"cannot read: {_reason(problem)}")
