"""Offline validation of manifests (GitOps): parse YAML text into documents and check each one.

Pure: takes text, returns findings; reading files is the CLI's job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from preemption_toleration.api.policy import KIND as POLICY_KIND
from preemption_toleration.validation.findings import Finding, error, shown
from preemption_toleration.validation.policy import parse_policy
from preemption_toleration.validation.priority_class import check_priority_class

PRIORITY_CLASS_GROUP = "scheduling.k8s.io/"


@dataclass(frozen=True)
class Document:
    source: str
    index: int  # 1-based position of the document in its source
    content: Any


@dataclass(frozen=True)
class Located:
    source: str
    index: int
    finding: Finding

    def render(self) -> str:
        return f"{self.source}:{self.index}: {self.finding.severity.value}: {self.finding.message}"


def _yaml_error(source: str, index: int, problem: yaml.YAMLError) -> Located:
    mark = getattr(problem, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    reason = getattr(problem, "problem", None) or str(problem)
    return Located(source, index, error("yaml", f"invalid YAML{where}: {reason}"))


def load_documents(text: str, source: str) -> tuple[list[Document], list[Located]]:
    """Every document of a multi-document YAML (or JSON) text; `kind: List` items are expanded.

    A syntax error ends the stream there: the documents before it are still returned.
    """
    documents: list[Document] = []
    index = 0
    try:
        for index, content in enumerate(yaml.safe_load_all(text), start=1):
            if content is None:
                continue
            if isinstance(content, Mapping) and content.get("kind") == "List":
                documents += [Document(source, index, item) for item in content.get("items") or []]
            else:
                documents.append(Document(source, index, content))
    except yaml.YAMLError as problem:
        return documents, [_yaml_error(source, index + 1, problem)]
    except RecursionError:
        return documents, [Located(source, index + 1, error("yaml", "invalid YAML: nested too deeply to read"))]
    except ValueError as problem:  # PyYAML's int(): more digits than Python converts
        reason = "a number too long to read" if "digits" in str(problem) else shown(str(problem))
        return documents, [Located(source, index + 1, error("yaml", f"invalid YAML: {reason}"))]
    return documents, []


def is_priority_class(content: Mapping[str, Any]) -> bool:
    return content.get("kind") == "PriorityClass" and str(content.get("apiVersion", "")).startswith(
        PRIORITY_CLASS_GROUP
    )


def check_documents(documents: Sequence[Document]) -> list[Located]:
    """Findings for every PriorityClass and PreemptionTolerationPolicy, each on its own; other kinds are
    ignored. Conflicts between policies are governance's question (governance.documents)."""
    located: list[Located] = []
    for document in documents:
        content = document.content
        if not isinstance(content, Mapping):
            located.append(
                Located(
                    document.source,
                    document.index,
                    error("not-an-object", f"document is a {type(content).__name__}, not a Kubernetes object."),
                )
            )
            continue
        if is_priority_class(content):
            findings = check_priority_class(content)
        elif content.get("kind") == POLICY_KIND:
            findings = parse_policy(content)[1]
        else:
            continue
        located += [Located(document.source, document.index, finding) for finding in findings]
    return located
