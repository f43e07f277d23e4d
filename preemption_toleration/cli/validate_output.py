"""What `ptol validate -o FORMAT` prints: lines for people (`text`), or the findings for a machine (`json`, and
SARIF 2.1.0 for GitHub code scanning). Findings are written as they come (the documents are not kept); the
machine formats write the summary line on stderr, so that stdout holds only the document."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

import preemption_toleration
from preemption_toleration.validation.documents import Located
from preemption_toleration.validation.findings import Severity

FORMATS = ("text", "json", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL = "ptol validate"


def writer(format_name: str, out: TextIO | None = None) -> Output:
    out = out or sys.stdout
    return {"text": Output, "json": JsonOutput, "sarif": SarifOutput}[format_name](out)


class Output:
    """`path:LINE: severity: message` lines, then the summary line."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def emit(self, located: Located) -> None:
        print(located.render(), file=self.out)

    def finish(self, summary: str) -> None:
        print(summary, file=self.out)


class JsonOutput(Output):
    """A JSON list: one object per finding, with path, line (null for the file as a whole), severity, rule
    and message."""

    def __init__(self, out: TextIO) -> None:
        super().__init__(out)
        self.count = 0

    def emit(self, located: Located) -> None:
        self.out.write(("[\n" if self.count == 0 else ",\n") + json.dumps(finding_json(located), ensure_ascii=False))
        self.count += 1

    def finish(self, summary: str) -> None:
        self.out.write("[]\n" if self.count == 0 else "\n]\n")
        print(summary, file=sys.stderr)


def finding_json(located: Located) -> dict[str, Any]:
    finding = located.finding
    return {
        "path": located.source,
        "line": located.line or None,
        "severity": finding.severity.value,
        "rule": finding.rule,
        "message": finding.message,
    }


class SarifOutput(Output):
    """A SARIF 2.1.0 log of one run (what `github/codeql-action/upload-sarif` takes): each error and warning a
    result with its rule, its level and its place (a path relative to the repository when it was given so,
    and a line: 1 for the file as a whole). Notes, which say what was skipped, are left out: code scanning
    would show each as an alert."""

    def __init__(self, out: TextIO) -> None:
        super().__init__(out)
        self.rules: dict[str, int] = {}  # the rules of the results, each at its index in the driver's rules
        self.count = 0
        self.out.write(f'{{"$schema": "{SARIF_SCHEMA}", "version": "2.1.0", "runs": [{{"results": [')

    def emit(self, located: Located) -> None:
        if located.finding.severity is Severity.NOTE:
            return
        rule = located.finding.rule
        index = self.rules.setdefault(rule, len(self.rules))
        result = {
            "ruleId": rule,
            "ruleIndex": index,
            "level": located.finding.severity.value,
            "message": {"text": located.finding.message},
            "locations": [
                {"physicalLocation": {**artifact_location(located.source), "region": {"startLine": located.line or 1}}}
            ],
        }
        self.out.write(("\n" if self.count == 0 else ",\n") + json.dumps(result, ensure_ascii=False))
        self.count += 1

    def finish(self, summary: str) -> None:
        driver = {
            "name": TOOL,
            "version": preemption_toleration.__version__,
            "rules": [{"id": rule} for rule in self.rules],
        }
        self.out.write("\n], " + json.dumps({"tool": {"driver": driver}})[1:-1] + "}]}\n")
        print(summary, file=sys.stderr)


def artifact_location(path: str) -> dict[str, Any]:
    """SARIF's artifactLocation of a path: a relative one (what code scanning matches against the
    repository) from the source root, an absolute one as a file: URI."""
    if os.path.isabs(path):
        return {"artifactLocation": {"uri": Path(path).as_uri()}}
    relative = os.path.normpath(path).replace(os.sep, "/")
    return {"artifactLocation": {"uri": quote(relative, safe="/"), "uriBaseId": "%SRCROOT%"}}
