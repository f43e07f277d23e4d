"""Offline validation of manifests (GitOps): read YAML documents one at a time and check each one, then the
rules between documents (names defined twice, a policy's minimum against its class, conflicts).

Pure but for the stream it reads: takes bytes, returns findings; finding files is the CLI's job.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import IO, Any

from preemption_toleration.api.policy import API_VERSION as POLICY_API_VERSION
from preemption_toleration.api.policy import DNS_SUBDOMAIN, PreemptionTolerationPolicySpec
from preemption_toleration.api.policy import GROUP as POLICY_GROUP
from preemption_toleration.api.policy import KIND as POLICY_KIND
from preemption_toleration.core.annotations import CONTRACT_ANNOTATIONS, LEGACY_PREFIX, MINIMUM, PREFIX
from preemption_toleration.core.shapes import is_mapping
from preemption_toleration.validation.findings import (
    Finding,
    Severity,
    described,
    edit_distance,
    error,
    escaped,
    kind_of_value,
    nearest,
    note,
    shown,
)
from preemption_toleration.validation.policy import parse_policy
from preemption_toleration.validation.priority_class import check_priority_class
from preemption_toleration.validation.yaml_stream import YamlBreak, read_documents

PRIORITY_CLASS_GROUP = "scheduling.k8s.io/"
PRIORITY_CLASS_VERSION = PRIORITY_CLASS_GROUP + "v1"
# The versions of PriorityClass Kubernetes served once and serves no more (both removed in 1.22).
REMOVED_PRIORITY_CLASS_VERSIONS = {PRIORITY_CLASS_GROUP + "v1alpha1": "1.22", PRIORITY_CLASS_GROUP + "v1beta1": "1.22"}
PRIORITY_CLASS = "PriorityClass"
KUSTOMIZE_GROUP = "kustomize.config.k8s.io/"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
OUR_KINDS = (PRIORITY_CLASS, POLICY_KIND, PRIORITY_CLASS + "List", POLICY_KIND + "List")
_OUR_DOMAINS = (PREFIX.rstrip("/"), LEGACY_PREFIX.rstrip("/"))
_KEY_NAMES = tuple(contract.name for contract in CONTRACT_ANNOTATIONS)
_NAME = re.compile(DNS_SUBDOMAIN)
MAX_NAME_LENGTH = 253
# PriorityClasses and policies kept for the rules between documents (about 400 B each): past this many, the
# rest are checked one by one and said so, and memory stays flat however long the input (a cluster has tens).
MAX_KEPT = 10_000


@dataclass(frozen=True)
class Document:
    source: str
    index: int  # 1-based position of the document in its source
    content: Any


@dataclass(frozen=True)
class Located:
    source: str
    line: int  # 1-based: of the field the finding is about, else of its document; 0: the file as a whole
    finding: Finding

    @property
    def index(self) -> int:
        """The place under its former name (governance.conflicts, whose Documents carry no lines, passes a
        document's position here)."""
        return self.line

    def render(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.finding.severity.value}: {escaped(self.finding.message)}"


def _at(field: tuple[str | int, ...], finding: Finding) -> Finding:
    """`finding` of a part of an object (a list's item), placed in the whole."""
    return replace(finding, field=field + finding.field)


def is_priority_class(content: Mapping[str, Any]) -> bool:
    return content.get("kind") == PRIORITY_CLASS and str(content.get("apiVersion", "")).startswith(PRIORITY_CLASS_GROUP)


@lru_cache(maxsize=1024)
def near_kind(kind: str) -> str | None:
    """Our kind that `kind` misspells or mis-cases, if any (kinds are case-sensitive)."""
    if kind in OUR_KINDS:
        return None
    lowered = kind.lower()
    for ours in OUR_KINDS:
        if lowered == ours.lower() or edit_distance(lowered, ours.lower()) <= max(2, len(ours) // 6):
            return ours
    return None


@lru_cache(maxsize=4096)
def near_prefix(key: str) -> str | None:
    """The key `key` was meant to be, when its prefix is a near miss of ours (or it has none)."""
    domain, slash, name = key.rpartition("/")
    if not slash:
        return PREFIX + key if key in _KEY_NAMES else None
    lowered = domain.lower()
    if domain in _OUR_DOMAINS:
        return None
    close = lowered in _OUR_DOMAINS or any(
        abs(len(lowered) - len(ours)) <= 3 and edit_distance(lowered, ours) <= 3 for ours in _OUR_DOMAINS
    )
    if not close and not (lowered.startswith("preemption-toleration") and lowered != POLICY_GROUP):
        return None
    return PREFIX + nearest(name, _KEY_NAMES)


def _fixed_name(name: str) -> str:
    """A valid DNS subdomain close to `name`, for the fix of an invalid one."""
    fixed = re.sub(r"[^a-z0-9.-]+", "-", name.lower())
    fixed = re.sub(r"\.{2,}", ".", fixed).strip(".-")[:MAX_NAME_LENGTH].strip(".-")
    return fixed or "my-name"


def name_problem(subject: str, metadata: Any) -> Finding | None:
    """The API server's rule for the name of a PriorityClass and of a cluster-scoped custom resource: a DNS
    subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most
    253 characters). A missing name is the object's own rule (reported there)."""
    name = metadata.get("name") if is_mapping(metadata) else None
    if name is None or name == "" or (isinstance(name, str) and len(name) <= MAX_NAME_LENGTH and _NAME.match(name)):
        return None
    if not isinstance(name, str):
        return error(
            "invalid-name",
            f"{subject}: metadata.name is {kind_of_value(name)} ({described(name)}), not a string. "
            f'Fix: quote it: name: "{_fixed_name(described(name).strip(chr(34)))}".',
            ("metadata", "name"),
        )
    why = f"longer than {MAX_NAME_LENGTH} characters" if len(name) > MAX_NAME_LENGTH else "not a valid name"
    return error(
        "invalid-name",
        f"{subject}: metadata.name {described(name)} is {why}; the API server refuses it. Fix: use lowercase "
        "letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters, "
        f'e.g. "{_fixed_name(name)}".',
        ("metadata", "name"),
    )


def _subject(kind: str, metadata: Any) -> str:
    name = metadata.get("name") if is_mapping(metadata) else None
    shown_name = name if isinstance(name, str) and name else ("<unnamed>" if not name else described(name))
    return f'{kind} "{shown(shown_name)}"'


def _prefix_findings(subject: str, annotations: Any) -> list[Finding]:
    if not is_mapping(annotations):
        return []
    findings = []
    for key, value in annotations.items():
        if isinstance(key, str) and not key.startswith(PREFIX) and (meant := near_prefix(key)) is not None:
            findings.append(
                error(
                    "near-miss-prefix",
                    f"{subject}: annotation {shown(key, 120)}={described(value)} is read by nothing: its prefix is "
                    f"not {PREFIX}. Fix: rename it to {meant}.",
                    ("metadata", "annotations", key),
                )
            )
    return findings


@dataclass(slots=True)
class ClassRecord:
    """What the rules between documents need of a PriorityClass (kept for every class in the input)."""

    source: str
    line: int  # of the document
    value: int | None
    labels: Mapping[str, str] | None  # shared between classes with the same labels


@dataclass(slots=True)
class PolicyRecord:
    source: str
    line: int  # of the document
    name: str
    spec: PreemptionTolerationPolicySpec | None  # None when the policy is invalid
    created: Any  # metadata.creationTimestamp as written (ownership: the oldest policy governs)


@dataclass
class Summary:
    files: int = 0
    documents: int = 0
    priority_classes: int = 0
    policies: int = 0
    kustomize: int = 0  # documents of kustomize's own files and patches
    other_kinds: Counter[str] = field(default_factory=Counter)
    not_objects: int = 0  # maps without a kind (values files, CI configurations, ...)
    counts: Counter[Severity] = field(default_factory=Counter)
    excluded_directories: int = 0  # not read: matched by an exclude pattern (`ptol validate --exclude`)
    excluded_files: int = 0

    @property
    def checked(self) -> int:
        return self.priority_classes + self.policies

    def line(self) -> str:
        def plural(count: int, word: str, words: str | None = None) -> str:
            return f"{count} {word if count == 1 else (words or word + 's')}"

        skipped = [
            part
            for count, part in (
                (self.kustomize, f"{self.kustomize} kustomize"),
                (sum(self.other_kinds.values()), f"{sum(self.other_kinds.values())} of other kinds"),
                (self.not_objects, f"{self.not_objects} without a kind"),
            )
            if count
        ]
        excluded = [
            plural(count, word, words)
            for count, word, words in (
                (self.excluded_directories, "directory", "directories"),
                (self.excluded_files, "file", None),
            )
            if count
        ]
        return (
            f"summary: {plural(self.files, 'file')}, {plural(self.documents, 'document')}: "
            f"{plural(self.priority_classes, 'PriorityClass', 'PriorityClasses')} and "
            f"{plural(self.policies, POLICY_KIND, POLICY_KIND[:-1] + 'ies')} checked"
            + (f"; skipped: {', '.join(skipped)}" if skipped else "")
            + (f"; excluded: {', '.join(excluded)}" if excluded else "")
            + f"; {plural(self.counts[Severity.ERROR], 'error')}, {plural(self.counts[Severity.WARNING], 'warning')}"
        )


class ManifestCheck:
    """Checks the documents of one run of `ptol validate`, file after file, keeping only what the rules
    between documents need: the documents themselves are dropped once checked."""

    def __init__(self) -> None:
        self.summary = Summary()
        self.classes: dict[str, ClassRecord] = {}
        self.policies: dict[str, PolicyRecord] = {}
        self._label_sets: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}
        self.past_limit = 0  # PriorityClasses and policies checked alone, past MAX_KEPT

    # -- one file ---------------------------------------------------------------------------------------
    def check_stream(self, source: str, stream: IO[bytes], kustomize_role: str | None = None) -> Iterator[Located]:
        """Findings of every document of one file, as they are read. `kustomize_role`: why the file is
        kustomize's own (a kustomization, a patch it lists), so that its documents are skipped."""
        self.summary.files += 1
        for item in read_documents(stream):
            if isinstance(item, YamlBreak):
                self.summary.documents += 1
                yield self._count(Located(source, item.line, item.problem))
                after = (
                    f"reading goes on at the next document (line {item.resumed_line})"
                    if item.resumed_line is not None
                    else "the rest of the file was not checked"
                )
                yield self._count(Located(source, item.line, note("yaml", f"document {item.index}: {after}.")))
                continue
            if item.content is None and not item.problems:
                continue  # an empty document (a comment, a trailing ---)
            self.summary.documents += 1
            for line, problem in item.problems:
                yield self._count(Located(source, line, problem))
            if item.content is None:
                continue
            if kustomize_role is not None:
                self.summary.kustomize += 1
                if item.index == 1:
                    yield self._count(Located(source, item.line, note("kustomize", f"skipped: {kustomize_role}.")))
                continue
            for finding in self.check_object(item.content, source, item.line):
                yield self._count(Located(source, item.line_of(finding.field), finding))

    def check_objects(self, documents: Iterable[Document]) -> Iterator[Located]:
        for document in documents:
            self.summary.documents += 1
            for finding in self.check_object(document.content, document.source, document.index):
                yield self._count(Located(document.source, document.index, finding))

    def _count(self, located: Located) -> Located:
        self.summary.counts[located.finding.severity] += 1
        return located

    # -- one document -----------------------------------------------------------------------------------
    def check_object(self, content: Any, source: str, line: int, where: str = "") -> list[Finding]:
        """The findings of one document; `line` is where it starts, for the rules between documents."""
        if not is_mapping(content):
            if _is_json_patch(content):
                self.summary.kustomize += 1
                return [note("kustomize", f"{where}skipped: a JSON 6902 patch (kustomize's patchesJson6902).")]
            return [
                error(
                    "not-an-object",
                    f"{where}the document is {kind_of_value(content)} ({described(content)}), not a Kubernetes "
                    "object. Fix: write a map with apiVersion, kind and metadata.",
                )
            ]
        kind, api_version = content.get("kind"), content.get("apiVersion")
        if "$patch" in content or (isinstance(api_version, str) and api_version.startswith(KUSTOMIZE_GROUP)):
            self.summary.kustomize += 1
            what = "a strategic-merge patch ($patch)" if "$patch" in content else f"kustomize's {shown(kind)}"
            return [note("kustomize", f"{where}skipped: {what}.")]
        if not isinstance(kind, str) or not kind:
            return self._without_kind(content, api_version, where)
        items = content.get("items")
        if kind.endswith("List") and isinstance(items, list):
            return self._list(kind, items, source, line, where)
        if kind == PRIORITY_CLASS:
            return self._priority_class(content, api_version, source, line, where)
        if kind == POLICY_KIND:
            return self._policy(content, source, line, where)
        meant = near_kind(kind)
        if meant is None and isinstance(api_version, str):
            if api_version.startswith(PRIORITY_CLASS_GROUP):
                meant = PRIORITY_CLASS
            elif api_version.startswith(POLICY_GROUP + "/"):
                meant = POLICY_KIND
        if meant is not None:
            return [
                error(
                    "unknown-kind",
                    f"{where}{_subject(shown(kind), content.get('metadata'))}: kind {described(kind)} is not a "
                    f"kind of the API (kinds are case-sensitive), so it is not checked. Fix: kind: {meant}.",
                    ("kind",),
                )
            ]
        self.summary.other_kinds[kind] += 1
        return []

    def _without_kind(self, content: Mapping[str, Any], api_version: Any, where: str) -> list[Finding]:
        spec, metadata = content.get("spec"), content.get("metadata")
        ours = (
            isinstance(api_version, str) and api_version.startswith((PRIORITY_CLASS_GROUP, POLICY_GROUP + "/"))
        ) or (
            is_mapping(metadata)
            and is_mapping(metadata.get("annotations"))
            and any(isinstance(key, str) and key.startswith(PREFIX) for key in metadata["annotations"])
        )
        meant = PRIORITY_CLASS
        if is_mapping(spec) and (MINIMUM.spec_field in spec or "priorityClassName" in spec):
            ours, meant = True, POLICY_KIND
        if not ours:
            self.summary.not_objects += 1
            return []
        return [
            error(
                "unknown-kind",
                f"{where}a document without a kind looks like a {meant}, so it is not checked. Fix: add kind: {meant}.",
            )
        ]

    def _list(self, kind: str, items: list[Any], source: str, line: int, where: str) -> list[Finding]:
        item_kind = kind[: -len("List")] if kind[: -len("List")] in (PRIORITY_CLASS, POLICY_KIND) else None
        findings: list[Finding] = []
        for position, item in enumerate(items):
            if item_kind is not None and is_mapping(item) and "kind" not in item:
                api_version = PRIORITY_CLASS_VERSION if item_kind == PRIORITY_CLASS else POLICY_API_VERSION
                item = {"kind": item_kind, "apiVersion": item.get("apiVersion", api_version), **item}
            found = self.check_object(item, source, line, f"{where}items[{position}]: ")
            findings += [_at(("items", position), finding) for finding in found]
        return findings

    def _priority_class(
        self, content: Mapping[str, Any], api_version: Any, source: str, line: int, where: str
    ) -> list[Finding]:
        self.summary.priority_classes += 1
        metadata = content.get("metadata")
        subject = _subject(PRIORITY_CLASS, metadata)
        findings = _class_api_version(subject, api_version)
        findings += check_priority_class(content)
        if is_mapping(metadata):
            if (problem := name_problem(subject, metadata)) is not None:
                findings.append(problem)
            findings += _prefix_findings(subject, metadata.get("annotations"))
            name = metadata.get("name")
            if isinstance(name, str) and name and self._keeps(name, self.classes):
                findings += self._defined_twice(self.classes, PRIORITY_CLASS, name, source, line)
                value = content.get("value")
                labels = metadata.get("labels")
                self.classes[name] = ClassRecord(
                    source,
                    line,
                    value if isinstance(value, int) and not isinstance(value, bool) else None,
                    self._shared_labels(labels),
                )
        return [_prefixed(finding, where) for finding in findings] if where else findings

    def _shared_labels(self, labels: Any) -> Mapping[str, str] | None:
        if not is_mapping(labels) or not labels:
            return None
        pairs = tuple((str(key), str(value)) for key, value in labels.items())
        return self._label_sets.setdefault(pairs, dict(pairs))

    def _policy(self, content: Mapping[str, Any], source: str, line: int, where: str) -> list[Finding]:
        self.summary.policies += 1
        metadata = content.get("metadata")
        subject = _subject(POLICY_KIND, metadata)
        model, findings = parse_policy(content)
        if (problem := name_problem(subject, metadata)) is not None:
            findings.append(problem)
        name = metadata.get("name") if is_mapping(metadata) else None
        if isinstance(name, str) and name and self._keeps(name, self.policies):
            findings += self._defined_twice(self.policies, POLICY_KIND, name, source, line)
            created = metadata.get("creationTimestamp") if is_mapping(metadata) else None
            self.policies[name] = PolicyRecord(source, line, name, model.spec if model else None, created)
        return [_prefixed(finding, where) for finding in findings] if where else findings

    def _keeps(self, name: str, records: Mapping[str, Any]) -> bool:
        """Whether this object is kept for the rules between documents (a name already kept always is)."""
        if name in records or len(self.classes) + len(self.policies) < MAX_KEPT:
            return True
        self.past_limit += 1
        return False

    def _defined_twice(
        self, records: Mapping[str, ClassRecord | PolicyRecord], kind: str, name: str, source: str, line: int
    ) -> list[Finding]:
        earlier = records.get(name)
        if earlier is None:
            return []
        return [
            error(
                "duplicate-name",
                f'{kind} "{shown(name)}" is defined twice in the input (first at {earlier.source}:{earlier.line}); '
                "applied together, the later one replaces the earlier. Fix: rename or remove one (to check "
                "overlays for different clusters, run ptol validate on each on its own).",
                ("metadata", "name"),
            )
        ]

    # -- between documents ------------------------------------------------------------------------------
    def finish(self, rules: Callable[[ManifestCheck], list[Located]] | None = None) -> list[Located]:
        """The rules between documents, once every file is read, sorted by place and counted. They are
        governance's (governance.conflicts.between_documents: a policy's minimum against its classes, and
        conflicts), passed in: validation does not import governance."""
        found = rules(self) if rules is not None else []
        if self.past_limit:
            found.append(
                Located(
                    "<input>",
                    0,
                    note(
                        "kept",
                        f"{self.past_limit} PriorityClasses and policies past the first {MAX_KEPT:,} were checked "
                        "one by one, not against the others (duplicate names, a policy's minimum against its "
                        "classes, conflicts); validate them in smaller parts for those rules.",
                    ),
                )
            )
        found.sort(key=lambda item: (item.source, item.line))
        for located in found:
            self._count(located)
        return found


def _prefixed(finding: Finding, where: str) -> Finding:
    return replace(finding, message=where + finding.message)


def _class_api_version(subject: str, api_version: Any) -> list[Finding]:
    """A PriorityClass's apiVersion: scheduling.k8s.io/v1, the one version served since 1.22."""
    if api_version == PRIORITY_CLASS_VERSION:
        return []
    if isinstance(api_version, str) and api_version in REMOVED_PRIORITY_CLASS_VERSIONS:
        return [
            error(
                "removed-api-version",
                f"{subject}: apiVersion {api_version} was removed in Kubernetes "
                f"{REMOVED_PRIORITY_CLASS_VERSIONS[api_version]}; the API server refuses it. "
                f"Fix: apiVersion: {PRIORITY_CLASS_VERSION} (the fields are the same).",
                ("apiVersion",),
            )
        ]
    written = "(missing)" if api_version is None else described(api_version)
    return [
        error(
            "api-version",
            f"{subject}: apiVersion {written} does not serve PriorityClass. Fix: apiVersion: {PRIORITY_CLASS_VERSION}.",
            ("apiVersion",),
        )
    ]


def _is_json_patch(content: Any) -> bool:
    return (
        isinstance(content, list)
        and bool(content)
        and all(is_mapping(op) and "op" in op and "path" in op for op in content)
    )


def load_documents(text: str, source: str) -> tuple[list[Document], list[Located]]:
    """Every document of a multi-document YAML (or JSON) text, and the problems of the text (syntax errors,
    repeated keys, aliases); a syntax error skips to the next document. `kind: List` items are expanded."""
    documents: list[Document] = []
    problems: list[Located] = []
    for item in read_documents(io.BytesIO(text.encode("utf-8"))):
        if isinstance(item, YamlBreak):
            problems.append(Located(source, item.line, item.problem))
            continue
        problems += [Located(source, line, problem) for line, problem in item.problems]
        content = item.content
        if content is None:
            continue
        if is_mapping(content) and content.get("kind") == "List":
            documents += [Document(source, item.index, entry) for entry in content.get("items") or []]
        else:
            documents.append(Document(source, item.index, content))
    return documents, problems
