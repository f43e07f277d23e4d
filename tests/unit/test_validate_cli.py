"""`ptol validate`: what a GitOps pipeline sees (lines, exit code)."""

import errno
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from preemption_toleration.cli.main import main
from preemption_toleration.cli.validate_inputs import glob_pattern

ROOT = Path(__file__).resolve().parents[2]

ANNOTATION_PREFIX = "preemption-toleration.scheduling.x-k8s.io/"


def class_manifest(name: str, annotations: dict[str, str]) -> str:
    """A PriorityClass of value 8000 as one YAML document, its annotations quoted and in the order given."""
    lines = "".join(f'    {ANNOTATION_PREFIX}{key}: "{value}"\n' for key, value in annotations.items())
    return (
        f"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {name}\n"
        f"  annotations:\n{lines}value: 8000\n"
    )


# The annotation line of the value that does not parse is line 6.
TEN_K = class_manifest("low-non-preempted", {"minimum-preemptable-priority": "10k"})
EXAMPLES = (
    class_manifest("low-non-preempted", {"minimum-preemptable-priority": "10000", "toleration-seconds": "-1"})
    + "---\n"
    + class_manifest("low-non-preempted-10min", {"minimum-preemptable-priority": "10000", "toleration-seconds": "600"})
    + "---\n"
    + """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: ignored
data:
  minimum-preemptable-priority: "10k"
"""
)


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


# -- what is read: every file once, nothing skipped silently, --exclude (issue #35 §5.3) ---------------------


def summary_of(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    """The exit code, the error and warning lines, and the summary line."""
    code = main(["validate", *args])
    lines = capsys.readouterr().out.splitlines()
    return code, [line for line in lines[:-1] if ": note: " not in line], lines[-1]


def deny(monkeypatch: pytest.MonkeyPatch, function: str, path: Path) -> None:
    """Makes os.scandir or Path.open refuse `path` with EACCES, as chmod 000 does for a user that is not
    root (tests run as root, which any mode lets read)."""
    if function == "scandir":
        real_scandir = os.scandir

        def scandir(target: Any = ".") -> Any:
            if os.fspath(target) == str(path):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real_scandir(target)

        monkeypatch.setattr(os, "scandir", scandir)
    else:
        real_open = Path.open

        def open_(self: Path, *args: Any, **kwargs: Any) -> Any:
            if self == path:
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real_open(self, *args, **kwargs)

        monkeypatch.setattr(Path, "open", open_)


def unlistable_directory(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    (tmp / "team").mkdir()
    (tmp / "team" / "bad.yaml").write_text(TEN_K)  # not read: the run must not pass for want of it
    deny(monkeypatch, "scandir", tmp / "team")
    return [str(tmp)], (
        f"{tmp}/team: error: cannot read the directory: Permission denied; the files in it were not checked. "
        "Fix: make it readable, or leave it out with --exclude."
    )


def mode_000_directory(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    (tmp / "team").mkdir()
    (tmp / "team" / "bad.yaml").write_text(TEN_K)
    (tmp / "team").chmod(0)  # given back by the test, so that the directory can be removed
    return [str(tmp)], (
        f"{tmp}/team: error: cannot read the directory: Permission denied; the files in it were not checked. "
        "Fix: make it readable, or leave it out with --exclude."
    )


def unopenable_file(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    (tmp / "secret.yaml").write_text(TEN_K)
    deny(monkeypatch, "open", tmp / "secret.yaml")
    return [str(tmp)], f"{tmp}/secret.yaml: error: cannot read: Permission denied"


def dangling_link(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    (tmp / "gone.yaml").symlink_to("moved.yaml")
    return [str(tmp)], (
        f"{tmp}/gone.yaml: error: cannot read: a link to moved.yaml, which does not exist. Fix: point the link at "
        "a file, or remove it."
    )


LOOP = "symlink loop: its links lead back to each other, never to a file. Fix: point the link at a file, or remove it."


def looping_file_link(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    (tmp / "a.yaml").symlink_to("b.yaml")
    (tmp / "b.yaml").symlink_to("a.yaml")
    return [str(tmp)], f"{tmp}/a.yaml: error: {LOOP}\n{tmp}/b.yaml: error: {LOOP}"


def looping_link_given_with_f(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    (tmp / "self.yaml").symlink_to("self.yaml")
    return [str(tmp / "good.yaml"), str(tmp / "self.yaml")], f"{tmp}/self.yaml: error: {LOOP}"


def link_to_a_parent_directory(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    (tmp / "team").mkdir()
    (tmp / "team" / "up").symlink_to("..")
    return [str(tmp)], (
        f"{tmp}/team/up: error: symlink loop: it leads back to {tmp}, which contains it. Fix: remove the link, "
        "or leave it out with --exclude."
    )


UNREADABLE = [
    pytest.param(unlistable_directory, id="a directory that cannot be listed is an error (EACCES, as root too)"),
    pytest.param(
        mode_000_directory,
        id="a directory of mode 000 is an error",
        marks=pytest.mark.skipif(os.geteuid() == 0, reason="root reads any mode; the case above runs as root"),
    ),
    pytest.param(unopenable_file, id="a file that cannot be opened is an error (EACCES, as root too)"),
    pytest.param(dangling_link, id="a dangling link is an error naming its target"),
    pytest.param(looping_file_link, id="two links to each other are a symlink-loop line each"),
    pytest.param(looping_link_given_with_f, id="a looping link given with -f is one line, not a bug report"),
    pytest.param(link_to_a_parent_directory, id="a link to a directory that contains it is a symlink loop"),
]


@pytest.mark.parametrize("make", UNREADABLE)
def test_what_cannot_be_read_is_an_error_never_a_silent_skip(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, make: Any
) -> None:
    (tmp_path / "good.yaml").write_text(EXAMPLES)
    paths, expected = make(tmp_path, monkeypatch)
    try:
        code = main(["validate", *(arg for path in paths for arg in ("-f", path))])
    finally:
        if (tmp_path / "team").exists():
            (tmp_path / "team").chmod(0o755)
    out, err = capsys.readouterr()
    assert [line for line in out.splitlines() if ": error: " in line] == expected.splitlines()
    assert code == 1 and err == ""


DUPLICATES = [
    # (case, the -f paths under the test's directory, relative to it)
    ("one file given twice", ["a.yaml", "a.yaml"]),
    ("a file and its directory", ["a.yaml", "."]),
    ("a directory and the same directory spelled otherwise", [".", "sub/.."]),
    ("a link to a file of the input", ["."], "link.yaml"),
]


@pytest.mark.parametrize("case", DUPLICATES, ids=[case[0] for case in DUPLICATES])
def test_each_file_is_read_once_so_it_is_not_defined_twice(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, case: tuple[Any, ...]
) -> None:
    (tmp_path / "a.yaml").write_text(EXAMPLES)
    (tmp_path / "sub").mkdir()
    if len(case) > 2:
        (tmp_path / case[2]).symlink_to("a.yaml")
    monkeypatch.chdir(tmp_path)
    code, lines, summary = summary_of(capsys, *(arg for path in case[1] for arg in ("-f", path)))
    assert (code, lines) == (0, [])
    assert summary.startswith("summary: 1 file, 3 documents: 2 PriorityClasses"), summary


BROKEN_TEMPLATE = "apiVersion: v1\nkind: ConfigMap\ndata: {{ toYaml .Values.data | nindent 2 }}\n"
EXCLUDES = [
    # (case, --exclude patterns, the files with errors, the summary's end)
    ("nothing excluded", [], ["charts/app/templates/cm.yaml", "classes/low.tmpl.yaml"], "; 2 errors, 0 warnings"),
    (
        "a path with ** leaves out a directory",
        ["charts/*/templates/**"],
        ["classes/low.tmpl.yaml"],
        "; excluded: 1 directory; 1 error, 0 warnings",
    ),
    (
        "a name without / matches at any depth",
        ["templates", "*.tmpl.yaml"],
        [],
        "; excluded: 1 directory, 1 file; 0 errors, 0 warnings",
    ),
    (
        "relative to the -f directory",
        ["app/templates/*.yaml", "low.tmpl.*"],
        [],
        "; excluded: 2 files; 0 errors, 0 warnings",
    ),
    (
        "** across levels",
        ["**/templates/**/*.yaml", "classes/**/*.tmpl.yaml"],
        [],
        "; excluded: 2 files; 0 errors, 0 warnings",
    ),
]


@pytest.mark.parametrize(("case", "patterns", "failing", "end"), EXCLUDES, ids=[case[0] for case in EXCLUDES])
def test_exclude_leaves_out_what_it_matches_and_counts_it(
    tmp_path: Path,
    capsys,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
    patterns: list[str],
    failing: list[str],
    end: str,
) -> None:
    (tmp_path / "charts" / "app" / "templates").mkdir(parents=True)
    (tmp_path / "charts" / "app" / "templates" / "cm.yaml").write_text(BROKEN_TEMPLATE)
    (tmp_path / "classes").mkdir()
    (tmp_path / "classes" / "low.yaml").write_text(EXAMPLES)
    (tmp_path / "classes" / "low.tmpl.yaml").write_text(BROKEN_TEMPLATE)
    monkeypatch.chdir(tmp_path)
    code, lines, summary = summary_of(
        capsys, "-f", "charts", "-f", "classes", *(arg for glob in patterns for arg in ("--exclude", glob))
    )
    assert sorted({line.split(":")[0] for line in lines}) == failing, case
    assert code == (1 if failing else 0) and summary.endswith(end), summary


def test_the_charts_templates_excluded_leave_the_chart_clean(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """Helm templates are not YAML until rendered (they are checked with helm template | ptol validate -f -)."""
    monkeypatch.chdir(ROOT)
    code, lines, summary = summary_of(capsys, "-f", "charts")
    assert code == 1 and any("invalid YAML" in line for line in lines)
    code, lines, summary = summary_of(capsys, "-f", "charts", "--exclude", "charts/*/templates/**", "--allow-empty")
    assert (code, lines) == (0, [])
    assert summary.endswith("; excluded: 1 directory; 0 errors, 0 warnings"), summary


GLOBS = [
    # (glob, path, matches)
    ("charts/*/templates/**", "charts/app/templates", True),
    ("charts/*/templates/**", "charts/app/templates/deep/cm.yaml", True),
    ("charts/*/templates/**", "charts/app/sub/templates/cm.yaml", False),
    ("*.tmpl.yaml", "a/b/low.tmpl.yaml", True),
    ("*.yaml", "a/low.yml", False),
    ("./classes/*.yaml", "classes/low.yaml", True),
    ("classes/*.yaml", "classes/sub/low.yaml", False),
    ("a/**/b.yaml", "a/b.yaml", True),
    ("a/**/b.yaml", "a/x/y/b.yaml", True),
    ("low-?.yaml", "low-1.yaml", True),
    ("low-[!0-9].yaml", "low-1.yaml", False),
    ("low-[0-9].yaml", "low-1.yaml", True),
    ("templates/", "charts/app/templates", True),
]


@pytest.mark.parametrize(("glob", "path", "matches"), GLOBS, ids=[f"{g} {'~' if m else '!~'} {p}" for g, p, m in GLOBS])
def test_exclude_patterns_are_gitignore_globs(glob: str, path: str, matches: bool) -> None:
    assert bool(glob_pattern(glob).fullmatch(path)) is matches


# -- machine-readable output ----------------------------------------------------------------------------------


def two_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """classes.yaml, relative: an error on line 6 and a warning on line 24."""
    monkeypatch.chdir(tmp_path)
    legacy = EXAMPLES.replace(
        'scheduling.x-k8s.io/toleration-seconds: "600"', 'scheduling.sigs.k8s.io/toleration-seconds: "600"'
    )
    Path("classes.yaml").write_text(TEN_K.replace("low-non-preempted", "low-10k") + "---\n" + legacy)
    return "classes.yaml"


def test_json_output_is_a_list_of_findings_and_the_summary_goes_to_stderr(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = two_findings(tmp_path, monkeypatch)
    code = main(["validate", "-o", "json", "-f", path])
    out, err = capsys.readouterr()
    findings = json.loads(out)
    assert code == 1
    assert [{key: item[key] for key in ("path", "line", "severity", "rule")} for item in findings] == [
        {"path": path, "line": 6, "severity": "error", "rule": "invalid-integer"},
        {"path": path, "line": 24, "severity": "warning", "rule": "legacy-prefix"},
    ]
    assert findings[0]["message"].startswith('PriorityClass "low-10k": annotation ')
    assert err.startswith("summary: 1 file, 4 documents") and err.endswith("; 1 error, 1 warning\n")


def test_json_output_of_a_clean_run_is_an_empty_list(tmp_path: Path, capsys) -> None:
    path = tmp_path / "examples.yaml"
    path.write_text(EXAMPLES)
    assert main(["validate", "-o", "json", "-f", str(path)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == [] and err.startswith("summary: ")


def test_sarif_output_is_what_github_code_scanning_reads(tmp_path: Path, capsys, monkeypatch) -> None:
    path = two_findings(tmp_path, monkeypatch)
    (tmp_path / "gone.yaml").symlink_to("moved.yaml")
    (tmp_path / "kustomization.yaml").write_text("resources: [classes.yaml]\n")  # a note: not an alert
    code = main(["validate", "-o", "sarif", "-f", path, "-f", "gone.yaml", "-f", "kustomization.yaml"])
    out, err = capsys.readouterr()
    log = json.loads(out)
    assert code == 1 and err.startswith("summary: ")
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    [run_] = log["runs"]
    assert run_["tool"]["driver"]["name"] == "ptol validate"
    rules = [rule["id"] for rule in run_["tool"]["driver"]["rules"]]
    places = [
        (
            rules[result["ruleIndex"]],
            result["ruleId"],
            result["level"],
            result["locations"][0]["physicalLocation"]["artifactLocation"],
            result["locations"][0]["physicalLocation"]["region"],
        )
        for result in run_["results"]
    ]
    source = {"uri": "classes.yaml", "uriBaseId": "%SRCROOT%"}
    assert places == [
        ("invalid-integer", "invalid-integer", "error", source, {"startLine": 6}),
        ("legacy-prefix", "legacy-prefix", "warning", source, {"startLine": 24}),
        ("read", "read", "error", {"uri": "gone.yaml", "uriBaseId": "%SRCROOT%"}, {"startLine": 1}),
    ]
    assert all(result["message"]["text"] for result in run_["results"])


def test_help_names_the_flags_the_formats_and_the_exit_codes(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("--exclude GLOB", "-o {text,json,sarif}", "SARIF 2.1.0", "Exit codes: 0 when", "2 on a usage error"):
        assert words in text, words
