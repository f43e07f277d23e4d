"""Reading multi-document YAML (or JSON) for `ptol validate`: one document at a time, with libyaml.

- The C parser (`yaml.CSafeLoader`) scans, parses and composes; only the construction of each document's
  Python objects is Python. The pure-Python loader is used only where PyYAML was built without libyaml.
- Documents are read from a binary stream one at a time: memory does not grow with the number of
  documents in a file.
- A mapping that repeats a key is reported with both lines (kubectl refuses it; other tools keep one of
  the values silently).
- Aliases are counted on each composed document before any Python object is built: a document whose
  aliases would expand it by more than `MAX_ALIAS_EXPANSION` nodes (a "billion laughs") or that refers to
  itself is refused, and the next document is read.
- Collections nested more than `MAX_DEPTH` deep are refused before the parser sees them (PyYAML's
  composer recurses in C, and the process would crash on a deep enough input).
- After a syntax error, reading resumes at the next `---` line, so the documents after a broken one are
  still checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import yaml
from yaml.constructor import BaseConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from preemption_toleration.validation.findings import Field, Finding, described, error, shown

# Aliases may add this many nodes to a document beyond the nodes written: far more than any manifest's
# anchors need, far less than a "billion laughs" expands to.
MAX_ALIAS_EXPANSION = 100_000
MAX_DEPTH = 1_000
READ_SIZE = 1 << 20

_BaseLoader: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BRACKETS = re.compile(rb"[\[\]{}]")
_COMPACT = re.compile(rb"(?:[-?][ \t]+){%d}" % (MAX_DEPTH // 2))
_SEPARATOR = re.compile(rb"^---(?:[ \t\r\n]|$)")
_SEPARATOR_IN_CHUNK = re.compile(rb"^---[ \t\r]*\n", re.MULTILINE)


class TooDeep(Exception):
    """Raised from the stream's read(): the input nests collections more than MAX_DEPTH deep."""

    def __init__(self, offset: int) -> None:
        super().__init__(offset)
        self.offset = offset


class _Watched:
    """The binary stream the parser reads: notes whether an alias (`*`) can occur, and refuses collections
    nested too deeply (counted on brackets and on compact `- - -` chains, quotes not understood: it may
    over-count, never under-count for inputs that are not crafted against it)."""

    def __init__(self, stream: IO[bytes], start: int) -> None:
        self.stream = stream
        self.offset = start  # of the next byte read
        self.star = False
        self.depth = 0
        self.name = getattr(stream, "name", "<stream>")
        self.pending: TooDeep | None = None  # found in a chunk whose earlier documents are still to read

    def read(self, size: int = -1) -> bytes:
        if self.pending is not None:
            raise self.pending
        data = self.stream.read(max(size, READ_SIZE))  # libyaml keeps what is more than it asked for
        if not isinstance(data, bytes):
            data = data.encode("utf-8")
        if not self.star and b"*" in data:
            self.star = True
        try:
            self._check_depth(data)
        except TooDeep as deep:
            # The documents before the deep one in this chunk are still read: hand libyaml the chunk up to
            # the deep document's `---` line, and refuse on the next read.
            cut = _after_last_separator(data, deep.offset - self.offset)
            if cut is None:
                raise
            self.pending, data = deep, data[:cut]
        self.offset += len(data)
        return data

    def _check_depth(self, data: bytes) -> None:
        opening = data.count(b"[") + data.count(b"{")
        if self.depth + opening > MAX_DEPTH:
            self._scan(data)
        elif opening or self.depth:
            self.depth = max(0, self.depth + opening - data.count(b"]") - data.count(b"}"))
        if (b"- " in data or b"? " in data) and (found := _COMPACT.search(data)) is not None:
            raise TooDeep(self.offset + found.start())

    def _scan(self, data: bytes) -> None:
        depth = self.depth
        for match in _BRACKETS.finditer(data):
            if match.group() in b"[{":
                depth += 1
                if depth > MAX_DEPTH:
                    raise TooDeep(self.offset + match.start())
            elif depth:
                depth -= 1
        self.depth = depth


def _after_last_separator(data: bytes, end: int) -> int | None:
    """The offset just past the last `---` line that starts before `end` in `data`, or None."""
    ends = [match.end() for match in _SEPARATOR_IN_CHUNK.finditer(data, 0, end)]
    return ends[-1] if ends else None


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    """The safe loader (libyaml's when built with it) that notes the keys a mapping repeats."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.repeated: list[tuple[Any, int, int]] = []  # (key, first line, repeated line), 1-based

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        own = node.value
        self.flatten_mapping(node)  # `<<` merges: their keys may be overridden, own keys may not repeat
        mapping = BaseConstructor.construct_mapping(self, node, deep=deep)
        if node.value is not own or len(mapping) != len(own):
            self._note_repeats(own)
        return mapping

    def _note_repeats(self, pairs: list[tuple[Node, Node]]) -> None:
        first: dict[Any, int] = {}
        for key_node, _ in pairs:
            key = self.construct_object(key_node)
            try:
                line = first.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:
                continue  # an unhashable key: the constructor reports it
            if line != key_node.start_mark.line + 1:
                self.repeated.append((key, line, key_node.start_mark.line + 1))


def alias_expansion(root: Node, limit: int) -> int | None:
    """How many nodes the aliases of a composed document add to it (stops above `limit`); None when the
    document refers to itself (an alias inside its own anchor). Memoised: linear in the nodes written."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    distinct = 0
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            if isinstance(node, MappingNode):
                size = 1 + sum(sizes[id(k)] + sizes[id(v)] for k, v in node.value)
            else:
                size = 1 + sum(sizes[id(child)] for child in node.value)
            sizes[key] = size
            active.discard(key)
            if size - distinct > limit:
                return size - distinct
            continue
        if key in sizes:
            continue
        distinct += 1
        if isinstance(node, ScalarNode):
            sizes[key] = 1
            continue
        if key in active:
            return None
        active.add(key)
        stack.append((node, True))
        children = [part for pair in node.value for part in pair] if isinstance(node, MappingNode) else node.value
        stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes[id(root)] - distinct


@dataclass
class YamlDocument:
    """One document: its 1-based number in the file, the line it starts on, its content (None for an empty
    document or one refused), the problems of its text (repeated keys, aliases, a value not read) with the
    1-based line of each, and its composed nodes (kept while it is checked: they know the line of each key)."""

    index: int
    line: int
    content: Any
    problems: list[tuple[int, Finding]] = field(default_factory=list)
    node: Node | None = None
    base_line: int = 0  # the 0-based line of the file where the run of the parser that read it started

    def line_of(self, path: Field) -> int:
        """The 1-based line of the deepest part of `path` written in the document (the document's own line
        when none is)."""
        if self.node is None or not path:
            return self.line
        return field_line(self.node, path) + 1 + self.base_line


def field_line(root: Node, path: Sequence[str | int]) -> int:
    """The 0-based line (counted from the run's start) of the key `path` leads to in a composed document, or
    of the deepest part of it there is: keys are matched by their text (the last of repeated keys, as the
    constructed map keeps), list positions by number."""
    node, line = root, root.start_mark.line
    for part in path:
        if isinstance(node, MappingNode):
            found = None
            for key, value in node.value:
                if isinstance(key, ScalarNode) and key.value == str(part):
                    found = key, value
            if found is None:
                break
            line, node = found[0].start_mark.line, found[1]
        elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line
        else:
            break
    return line


@dataclass
class YamlBreak:
    """A syntax error that ended a run of the parser: `resumed_line` is where reading goes on (the next
    `---` line), None when nothing of the file after it was read."""

    index: int
    line: int  # 1-based, where the error is (the run's first line when the parser did not say)
    problem: Finding
    resumed_line: int | None


def _where(mark: Any, base_line: int) -> str:
    return f" at line {mark.line + 1 + base_line}, column {mark.column + 1}" if mark is not None else ""


def _syntax_problem(problem: Exception, base_line: int) -> tuple[str, int | None]:
    """(the message, the 0-based line of the file it is at)."""
    mark = getattr(problem, "problem_mark", None)
    if isinstance(problem, yaml.reader.ReaderError):
        reason = "the file is not UTF-8 text" if problem.encoding else shown(problem.reason)
        return f"invalid YAML: {reason} (character {problem.position + 1} of the document)", None
    reason = getattr(problem, "problem", None) or str(problem)
    context = getattr(problem, "context", None)
    text = f"invalid YAML{_where(mark, base_line)}: {shown(reason, 120)}"
    if context:
        text += f" ({shown(context, 80)})"
    return text, None if mark is None else mark.line + base_line


def _construction_problem(problem: Exception, base_line: int) -> str:
    if isinstance(problem, RecursionError):
        return "invalid YAML: nested too deeply to read"
    if isinstance(problem, ValueError) and "digits" in str(problem):
        return "invalid YAML: a number too long to read"
    mark = getattr(problem, "problem_mark", None)
    reason = getattr(problem, "problem", None) or str(problem)
    return f"invalid YAML{_where(mark, base_line)}: {shown(reason, 120)}"


def _line_of_offset(stream: IO[bytes], offset: int, start: tuple[int, int]) -> int:
    """The 0-based line of `offset`, counted from `start` (byte offset, line) of the run that read it, in
    chunks: the file is scanned once in all, however many documents are broken."""
    position, line = start
    stream.seek(position)
    while position < offset:
        chunk = stream.read(min(READ_SIZE, offset - position))
        if not chunk:
            break
        line += chunk.count(b"\n")
        position += len(chunk)
    return line


def _next_separator(stream: IO[bytes], from_line: int, start: tuple[int, int]) -> tuple[int, int] | None:
    """(byte offset, 0-based line) of the first `---` line at or after `from_line`, or None; read from
    `start` (byte offset, line) of the run that failed, which is at or before it."""
    offset, first_line = start
    stream.seek(offset)
    for line_number, line in enumerate(stream, start=first_line):
        if line_number >= from_line and _SEPARATOR.match(line):
            return offset, line_number
        offset += len(line)
    return None


def read_documents(stream: IO[bytes]) -> Iterator[YamlDocument | YamlBreak]:
    """Every document of a seekable binary stream, in order, and a YamlBreak for each syntax error."""
    start_offset, base_line, index = 0, 0, 0
    while True:
        stream.seek(start_offset)
        watched = _Watched(stream, start_offset)
        loader = _Loader(watched)
        failed_at: int | None = None
        produced = 0
        try:
            while loader.check_node():
                node = loader.get_node()
                index += 1
                produced += 1
                yield _document(loader, node, index, base_line, watched.star)
        except TooDeep as deep:
            line = _line_of_offset(stream, deep.offset, (start_offset, base_line))
            failed_at = line
            message = f"invalid YAML at line {line + 1}: collections nested more than {MAX_DEPTH} deep"
            problem = error("yaml", message)
        except (yaml.YAMLError, RecursionError) as broken:
            message, failed_at = _syntax_problem(broken, base_line)
            problem = error("yaml", message)
        else:
            return
        finally:
            loader.dispose()
        resume = None
        if failed_at is not None:
            # a run that fails at once on its own `---` line moves on to the next one
            resume = _next_separator(
                stream, failed_at + (1 if produced == 0 and failed_at == base_line else 0), (start_offset, base_line)
            )
        line = (base_line if failed_at is None else failed_at) + 1
        if resume is None:
            yield YamlBreak(index + 1, line, problem, None)
            return
        yield YamlBreak(index + 1, line, problem, resume[1] + 1)
        index += 1  # the broken document
        start_offset, base_line = resume


def _document(loader: _Loader, node: Node, index: int, base_line: int, may_alias: bool) -> YamlDocument:
    line = node.start_mark.line + 1 + base_line
    if may_alias:
        added = alias_expansion(node, MAX_ALIAS_EXPANSION)
        if added is None or added > MAX_ALIAS_EXPANSION:
            why = (
                "an alias refers to the node that holds it (a document that never ends)"
                if added is None
                else f"its aliases expand it by more than {MAX_ALIAS_EXPANSION:,} nodes (an alias bomb)"
            )
            return YamlDocument(index, line, None, [(line, error("alias-expansion", f"document not read: {why}."))])
    loader.repeated = []
    try:
        content = loader.construct_document(node)
    except (yaml.YAMLError, RecursionError, ValueError) as problem:
        loader.constructed_objects, loader.recursive_objects, loader.state_generators = {}, {}, []
        loader.deep_construct = False
        mark = getattr(problem, "problem_mark", None)
        at = line if mark is None else mark.line + 1 + base_line
        return YamlDocument(index, line, None, [(at, error("yaml", _construction_problem(problem, base_line)))])
    problems = [
        (
            again + base_line,
            error(
                "duplicate-key",
                f"the key {described(key)} appears twice in one map (lines {first + base_line} and "
                f"{again + base_line}); kubectl refuses it and other tools keep one of the values silently. "
                "Fix: keep one.",
            ),
        )
        for key, first, again in loader.repeated
    ]
    return YamlDocument(index, line, content, problems, node, base_line)
