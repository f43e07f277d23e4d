"""`ptol validate`: what a GitOps pipeline sees (lines, exit code)."""

import io
from pathlib import Path

import pytest

from preemption_toleration.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

TEN_K = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: low-non-preempted
  annotations:
    preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority: "10k"
value: 8000
"""

EXAMPLES = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: low-non-preempted
  annotations:
    preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority: "10000"
    preemption-toleration.scheduling.x-k8s.io/toleration-seconds: "-1"
value: 8000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: low-non-preempted-10min
  annotations:
    preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority: "10000"
    preemption-toleration.scheduling.x-k8s.io/toleration-seconds: "600"
value: 8000
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ignored
data:
  minimum-preemptable-priority: "10k"
"""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    """The exit code and the error and warning lines; every run ends with its summary line, and notes (what
    was skipped) are left out here (test_validate_findings.py reads them)."""
    code = main(["validate", *args])
    lines = capsys.readouterr().out.splitlines()
    assert lines and lines[-1].startswith("summary: "), lines
    return code, [line for line in lines[:-1] if ": note: " not in line]


def test_rejects_10k_naming_class_key_and_value_on_the_annotations_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "classes.yaml"
    path.write_text(TEN_K)
    code, lines = run(capsys, "-f", str(path))
    assert code == 1
    [line] = lines
    assert line.startswith(f"{path}:6: error: ")
    assert 'PriorityClass "low-non-preempted"' in line
    assert "preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority" in line
    assert '"10k"' in line


def test_accepts_the_two_example_classes_and_ignores_other_kinds(tmp_path: Path, capsys) -> None:
    path = tmp_path / "examples.yaml"
    path.write_text(EXAMPLES)
    assert run(capsys, "-f", str(path)) == (0, [])


def test_warnings_are_printed_but_exit_0(tmp_path: Path, capsys) -> None:
    path = tmp_path / "legacy.yaml"
    path.write_text(
        EXAMPLES.replace(
            'scheduling.x-k8s.io/toleration-seconds: "600"', 'scheduling.sigs.k8s.io/toleration-seconds: "600"'
        )
    )
    code, lines = run(capsys, "-f", str(path))
    assert code == 0
    [line] = lines
    assert line.split(": ")[1] == "warning" and "legacy prefix" in line
    assert run(capsys, "--warnings-as-errors", "-f", str(path))[0] == 1


def test_lines_of_the_file_in_multi_document_files(tmp_path: Path, capsys) -> None:
    """The fourth document starts on line 26; its annotation is its sixth line: line 31 of the file, not
    "document 4"."""
    path = tmp_path / "multi.yaml"
    path.write_text(EXAMPLES + "---\n" + TEN_K.replace("name: low-non-preempted", "name: low-10k"))
    code, lines = run(capsys, "-f", str(path))
    assert code == 1
    assert [line.split(":")[1] for line in lines] == ["31"]


def test_directories_are_searched_recursively(tmp_path: Path, capsys) -> None:
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "bad.yml").write_text(TEN_K)
    (tmp_path / "good.yaml").write_text(EXAMPLES.replace("name: low-non-preempted\n", "name: low-good\n"))
    (tmp_path / "notes.txt").write_text("not a manifest: [")
    code, lines = run(capsys, "-f", str(tmp_path))
    assert code == 1
    assert len(lines) == 1 and lines[0].startswith(str(tmp_path / "nested" / "bad.yml"))


def test_stdin(monkeypatch, capsys) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(TEN_K))
    code, lines = run(capsys, "-f", "-")
    assert code == 1 and lines[0].startswith("<stdin>:6: error:")


def test_malformed_yaml_is_an_error_with_its_location(tmp_path: Path, capsys) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(EXAMPLES + "---\nmetadata:\n  name: [unclosed\n")
    code, lines = run(capsys, "-f", str(path))
    assert code == 1
    [line] = lines
    assert line.startswith(f"{path}:28: error: invalid YAML at line 28, column 1: ")


def test_missing_file_is_an_error_not_a_traceback(tmp_path: Path, capsys) -> None:
    code, lines = run(capsys, "-f", str(tmp_path / "absent.yaml"))
    assert code == 1
    assert "cannot read" in lines[0]


def test_non_object_document(tmp_path: Path, capsys) -> None:
    path = tmp_path / "scalar.yaml"
    path.write_text("just a string\n")
    code, lines = run(capsys, "-f", str(path))
    assert code == 1 and "not a Kubernetes object" in lines[0]


def test_policies_governing_the_same_class_conflict(tmp_path: Path, capsys) -> None:
    policy = """\
apiVersion: preemption-toleration.dev/v1alpha1
kind: PreemptionTolerationPolicy
metadata:
  name: {name}
spec:
  {target}
  minimumPreemptablePriority: 10000
"""
    klass = (
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: batch\n  labels:\n"
        "    tier: batch\nvalue: 8000\n"
    )
    path = tmp_path / "policies.yaml"
    path.write_text(
        "---\n".join(
            [
                klass,
                policy.format(name="first", target="priorityClassName: batch"),
                policy.format(name="second", target="priorityClassSelector: {matchLabels: {tier: batch}}"),
            ]
        )
    )
    code, lines = run(capsys, "-f", str(path))
    assert code == 1
    [line] = lines
    assert line.startswith(f"{path}:17: error:")  # the first line of the third document
    assert 'PriorityClass "batch" is already governed by PreemptionTolerationPolicy "first"' in line


def test_list_kind_items_are_checked(tmp_path: Path, capsys) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n- " + TEN_K.replace("\n", "\n  "))
    assert run(capsys, "-f", str(path))[0] == 1


def test_the_samples_are_valid(capsys) -> None:
    assert run(capsys, "-f", str(ROOT / "config" / "samples")) == (0, [])


SELECTOR_POLICY = """\
---
apiVersion: preemption-toleration.dev/v1alpha1
kind: PreemptionTolerationPolicy
metadata: {name: tiered}
spec:
  priorityClassSelector: {matchLabels: {tier: gold}}
  minimumPreemptablePriority: 10000
  tolerationSeconds: 60
"""

MALFORMED = [
    # (rule, manifest text, the line of the file, the one message printed after "PATH:LINE: error: ")
    (
        "labels that are a list, beside a selector policy",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low, labels: [a, b]}\nvalue: 8000\n"
        + SELECTOR_POLICY,
        3,
        'PriorityClass "low": metadata.labels is ["a", "b"], not a map. Fix: write labels as key: value pairs.',
    ),
    (
        "an annotation key that is not a string",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: low\n  annotations: {1: x}\n"
        "value: 8000\n",
        5,
        'PriorityClass "low": metadata.annotations has the key 1, which is not a string. Fix: quote it: "1".',
    ),
    (
        "a label key that is not a string, beside a selector policy",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: low\n  labels: {null: gold}\n"
        "value: 8000\n" + SELECTOR_POLICY,
        5,
        'PriorityClass "low": metadata.labels has the key null, which is not a string. Fix: quote it: "null" '
        "(or remove it).",
    ),
    (
        "a label value that is not a string",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: low\n  labels: {tier: 7}\n"
        "value: 8000\n" + SELECTOR_POLICY,
        5,
        'PriorityClass "low": label tier is 7, not a string. Fix: quote it: "7".',
    ),
    (
        "an integer of more digits than Python reads",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: big}\nvalue: " + "9" * 5000 + "\n",
        1,
        "invalid YAML: a number too long to read",
    ),
    (
        "JSON nested deeper than the parser's stack",
        "[" * 5000 + "]" * 5000,
        1,
        "invalid YAML at line 1: collections nested more than 1000 deep",
    ),
]


@pytest.mark.parametrize(("rule", "text", "line", "message"), MALFORMED, ids=[case[0] for case in MALFORMED])
def test_malformed_manifests_are_errors_not_tracebacks(
    tmp_path: Path, capsys, rule: str, text: str, line: int, message: str
) -> None:
    path = tmp_path / "manifest.yaml"
    path.write_text(text)
    code, lines = run(capsys, "--allow-empty", "-f", str(path))
    assert code == 1, rule
    assert lines == [f"{path}:{line}: error: {message}"], rule


def test_conflicts_follow_the_ownership_rule_oldest_then_by_name(tmp_path: Path, capsys) -> None:
    """The policy a class is governed by is the one the operator would pick: the oldest, whatever the order
    in the file; a creationTimestamp that does not parse counts as none, that is as the oldest."""
    policy = (
        "apiVersion: preemption-toleration.dev/v1alpha1\nkind: PreemptionTolerationPolicy\nmetadata:\n"
        "  name: {name}\n  creationTimestamp: '{created}'\nspec:\n  priorityClassName: batch\n"
        "  minimumPreemptablePriority: 10000\n"
    )
    fix = (
        '(the oldest that claims it). Fix: govern each class with one policy only: change "{governing}" '
        "instead, or delete it first."
    )
    for created_second, governing in (("2026-11-01T00:00:00Z", "b-old"), ("yesterday", "b-old")):
        path = tmp_path / f"policies-{created_second}.yaml"
        path.write_text(
            "---\n".join(
                [
                    policy.format(name="a-new", created="2026-11-02T00:00:00Z"),
                    policy.format(name="b-old", created=created_second),
                ]
            )
        )
        code, lines = run(capsys, "-f", str(path))
        assert code == 1
        assert lines == [
            f'{path}:1: error: PreemptionTolerationPolicy "a-new": PriorityClass "batch" is already '
            f'governed by PreemptionTolerationPolicy "{governing}" {fix.format(governing=governing)}'
        ]
