"""`ptol validate` never passes silently (issue #29 §2): near misses are findings, what is skipped is said,
every run ends with a summary, nothing to check fails, and YAML that would take unbounded time or memory
is refused document by document."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

import pytest

from preemption_toleration.cli.main import main
from preemption_toleration.governance.conflicts import between_documents
from preemption_toleration.validation.documents import Located, ManifestCheck
from preemption_toleration.validation.findings import Severity

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "preemption-toleration.scheduling.x-k8s.io/"
MIN = PREFIX + "minimum-preemptable-priority"
TOL = PREFIX + "toleration-seconds"
E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE


def klass(
    name: str = "low", value: str = "8000", annotations: str = "", labels: str = "", kind: str = "PriorityClass"
) -> str:
    meta = f"metadata:\n  name: {name}\n"
    if labels:
        meta += f"  labels: {labels}\n"
    if annotations:
        meta += "  annotations:\n" + "".join(f"    {line}\n" for line in annotations.splitlines())
    return f"apiVersion: scheduling.k8s.io/v1\nkind: {kind}\n{meta}value: {value}\n"


def policy(name: str = "p", target: str = "priorityClassName: low", minimum: str = "10000", kind: str = "") -> str:
    return (
        f"apiVersion: preemption-toleration.dev/v1alpha1\nkind: {kind or 'PreemptionTolerationPolicy'}\n"
        f"metadata:\n  name: {name}\nspec:\n  {target}\n  minimumPreemptablePriority: {minimum}\n"
    )


BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
for _level, _name in enumerate("bcdefghi"):
    BOMB += f"{_name}: &{_name} [" + ", ".join([f"*{chr(ord(_name) - 1)}"] * 9) + "]\n"
BOMB_CLASS = klass() + "unknownField:\n" + "".join(f"  {line}\n" for line in BOMB.splitlines())

# (rule, manifest text, severity, words of the message)
FINDINGS = [
    ("unknown-kind", klass(kind="priorityclass"), E, ['kind "priorityclass"', "case-sensitive", "kind: PriorityClass"]),
    (
        "unknown-kind",
        policy(kind="PreemptionTolerancePolicy"),
        E,
        ['kind "PreemptionTolerancePolicy"', "kind: PreemptionTolerationPolicy"],
    ),
    ("unknown-kind", f"metadata:\n  annotations:\n    {MIN}: '1'\nvalue: 1\n", E, ["without a kind", "PriorityClass"]),
    (
        "near-miss-prefix",
        klass(annotations='preemption-toleration.scheduling.x-k8s.ioo/minimum-preemptable-priority: "10000"'),
        E,
        ["x-k8s.ioo/", "read by nothing", f"rename it to {MIN}"],
    ),
    (
        "near-miss-prefix",
        klass(annotations='preemption-tolerations.scheduling.x-k8s.io/toleration-seconds: "600"'),
        E,
        ["preemption-tolerations.", f"rename it to {TOL}"],
    ),
    ("near-miss-prefix", klass(annotations='minimum-preemptable-priority: "10000"'), E, [f"rename it to {MIN}"]),
    (
        "duplicate-key",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: 8000\nvalue: 9000\n",
        E,
        ['the key "value" appears twice', "lines 4 and 5"],
    ),
    (
        "invalid-integer",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClassList\nitems:\n- metadata: {name: fine}\n  value: 1\n"
        f"- metadata:\n    name: bad\n    annotations: {{{MIN}: '10k'}}\n  value: 1\n",
        E,
        ['items[1]: PriorityClass "bad"', '"10k"'],
    ),
    ("invalid-name", klass(name="Low_Class"), E, ['metadata.name "Low_Class"', "API server refuses", '"low-class"']),
    ("invalid-name", policy(name="Bad.Policy-"), E, ['PreemptionTolerationPolicy "Bad.Policy-"', '"bad.policy"']),
    ("invalid-name", klass(name="123"), E, ["metadata.name is a number (123), not a string", 'name: "123"']),
    (
        "duplicate-name",
        klass() + "---\n" + policy() + "---\n" + policy(minimum="20000"),
        E,
        ['PreemptionTolerationPolicy "p" is defined twice', "first at"],
    ),
    (
        "minimum-without-effect",
        klass(value="8000") + "---\n" + policy(minimum="8000"),
        W,
        [
            'PreemptionTolerationPolicy "p": spec.minimumPreemptablePriority 8000 has no effect on PriorityClass '
            '"low" (value 8000, manifest.yaml:1): it holds back only priorities below 8000, none of which can '
            "preempt its pods. Fix: set it above 8001."
        ],
    ),
    (  # value + 1 is the lowest priority that may preempt the class's pods: a minimum there refuses nothing
        "minimum-without-effect",
        klass(value="8000") + "---\n" + policy(minimum="8001"),
        W,
        ['spec.minimumPreemptablePriority 8001 has no effect on PriorityClass "low" (value 8000', "above 8001"],
    ),
    (
        "minimum-without-effect",
        klass(name="a", value="9000", labels="{tier: gold}")
        + "---\n"
        + klass(name="b", value="7000", labels="{tier: gold}")
        + "---\n"
        + klass(name="c", value="8000", labels="{tier: gold}")
        + "---\n"
        + policy(target="priorityClassSelector: {matchLabels: {tier: gold}}", minimum="8001"),
        W,
        ['8001 has no effect on PriorityClass "a" (value 9000, manifest.yaml:1), "c" (value 8000', "above 9001"],
    ),
    (
        "minimum-without-effect",
        klass(value="9000", labels="{tier: gold}")
        + "---\n"
        + policy(target="priorityClassSelector: {matchLabels: {tier: gold}}", minimum="9000"),
        W,
        ['PriorityClass "low" (value 9000'],
    ),
    ("api-version", klass().replace("scheduling.k8s.io/v1", "v1"), E, ['apiVersion "v1"', "scheduling.k8s.io/v1"]),
    (
        "removed-api-version",
        klass().replace("scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1"),
        E,
        [
            "apiVersion scheduling.k8s.io/v1beta1 was removed in Kubernetes 1.22",
            "Fix: apiVersion: scheduling.k8s.io/v1",
        ],
    ),
    (
        "removed-api-version",
        klass().replace("scheduling.k8s.io/v1", "scheduling.k8s.io/v1alpha1"),
        E,
        [
            "apiVersion scheduling.k8s.io/v1alpha1 was removed in Kubernetes 1.22",
            "Fix: apiVersion: scheduling.k8s.io/v1",
        ],
    ),
    (
        "api-version",
        klass().replace("scheduling.k8s.io/v1", "scheduling.k8s.io/v2"),
        E,
        ['apiVersion "scheduling.k8s.io/v2" does not serve PriorityClass', "Fix: apiVersion: scheduling.k8s.io/v1"],
    ),
    ("annotation-not-string", klass(annotations=f"{MIN}: true"), E, ["is true, not a string", 'e.g. "10000"']),
    ("annotation-not-string", klass(annotations=f"{MIN}: null"), E, ["is null", "intended number in quotes"]),
    ("annotation-not-string", klass(annotations=f"{MIN}: [10000]"), E, ["is a list ([10000])"]),
    ("annotation-not-string", klass(annotations=f"{MIN}: 10000"), E, ["the number 10000", 'quote it: "10000"']),
    ("annotation-not-string", klass(annotations=f"{MIN}: 10000.0"), E, ['plain digits and quote it: "10000"']),
    (
        "invalid-integer",
        klass(annotations=f'{MIN}: "10000"\n{TOL}: "99999999999999999999"'),
        E,
        ["use at most 9223372036", "int64 nanoseconds"],
    ),
    ("invalid-value", klass(value="null"), E, ["value is missing", "value: 8000"]),
    ("invalid-value", klass(value='"8000"'), E, ['value is "8000"', "without quotes: value: 8000"]),
    ("not-an-object", "just a string\n", E, ['a string ("just a string"), not a Kubernetes object']),
    ("spec", policy().split("spec:")[0] + "spec: null\n", E, ["spec is missing, not a map"]),
    ("alias-expansion", BOMB_CLASS + "---\n" + klass(name="after", value="true"), E, ["alias bomb"]),
    ("invalid-value", BOMB_CLASS + "---\n" + klass(name="after", value="true"), E, ['PriorityClass "after"']),
    ("alias-expansion", "a: &x [1, *x]\n", E, ["refers to the node that holds it"]),
    ("yaml", klass() + "---\nmetadata: [\n---\n" + klass(name="x", value="true"), E, ["invalid YAML at line 8"]),
    ("yaml", klass() + "---\nmetadata: [\n---\n" + klass(name="x", value="true"), N, ["document 2: reading goes on"]),
    ("invalid-value", klass() + "---\nmetadata: [\n---\n" + klass(name="x", value="true"), E, ['"x": value is true']),
    ("kustomize", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n", N, ["kustomize's Component"]),
    ("kustomize", "- op: replace\n  path: /value\n  value: 1\n", N, ["JSON 6902 patch"]),
    (
        "kustomize",
        "$patch: delete\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: x}\n",
        N,
        ["$patch"],
    ),
]


def findings_of(text: str) -> list[Located]:
    check = ManifestCheck()
    found = list(check.check_stream("manifest.yaml", io.BytesIO(text.encode())))
    return found + check.finish(between_documents)


@pytest.mark.parametrize(
    ("rule", "text", "severity", "words"), FINDINGS, ids=[f"{case[0]}-{i}" for i, case in enumerate(FINDINGS)]
)
def test_finding(rule: str, text: str, severity: Severity, words: list[str]) -> None:
    found = [
        item.finding for item in findings_of(text) if item.finding.rule == rule and item.finding.severity is severity
    ]
    assert found, [item.render() for item in findings_of(text)]
    assert any(all(word in finding.message for word in words) for finding in found), [f.message for f in found]


# (what is placed, manifest text, rule, the line of the file its finding names): the line of the key the
# finding is about where the rule knows it, else the document's first line; counted from the file's start.
LINES = [
    ("an annotation's value: the annotation's line", klass(annotations=f'{MIN}: "10k"'), "invalid-integer", 6),
    ("a class's value: its line", klass(value="true"), "invalid-value", 5),
    ("a removed apiVersion: its line", "# a class\n" + klass().replace("/v1", "/v1beta1"), "removed-api-version", 2),
    ("a policy's field: its line", policy(minimum='"10000"'), "invalid-field", 7),
    ("a policy's unknown field: its line", policy(target="priorityClassName: low\n  tolerance: 5"), "unknown-field", 7),
    ("a missing target: the spec's line", policy(target="tolerationSeconds: 5"), "target", 5),
    (
        "an item of a list: the item's annotation",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClassList\nitems:\n- metadata: {name: fine}\n  value: 1\n"
        f"- metadata:\n    name: bad\n    annotations:\n      {MIN}: '10k'\n  value: 1\n",
        "invalid-integer",
        9,
    ),
    (
        "a document after a broken one: lines of the file, not of the parser's second run",
        klass() + "---\nmetadata: [\n---\n" + klass(name="x", value="true"),
        "invalid-value",
        13,
    ),
    ("a repeated key: the repeat", klass() + "value: 9000\n", "duplicate-key", 6),
    ("a name defined twice: the second name", klass() + "---\n" + klass(), "duplicate-name", 10),
    (
        "a conflict between documents: the policy's first line",
        klass() + "---\n" + policy(name="a") + "---\n# the second\n" + policy(name="b"),
        "conflict",
        16,
    ),
    ("no field to name: the document's first line", "# header\n---\njust a string\n", "not-an-object", 3),
]


@pytest.mark.parametrize(("case", "text", "rule", "line"), LINES, ids=[case[0] for case in LINES])
def test_findings_name_the_line_of_their_field(case: str, text: str, rule: str, line: int) -> None:
    found = [item for item in findings_of(text) if item.finding.rule == rule]
    assert [item.line for item in found] == [line], [item.render() for item in findings_of(text)]
    assert found[0].render().startswith(f"manifest.yaml:{line}: "), case


def test_a_name_defined_twice_names_the_line_of_the_first() -> None:
    [item] = [item for item in findings_of(klass() + "---\n" + klass()) if item.finding.rule == "duplicate-name"]
    assert "(first at manifest.yaml:1)" in item.finding.message


@pytest.mark.parametrize("text", [klass(annotations=f'{MIN}: "10000"\n{TOL}: "600"'), policy(), BOMB_CLASS])
def test_no_python_in_messages(text: str) -> None:
    for item in findings_of(text.replace("10000", "true").replace("low", "Low")):
        for word in ("None", "True", "False", "Input should", "str", "dict", "^[a-z"):
            assert word not in item.finding.message, item.render()


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = main(["validate", *args])
    return code, capsys.readouterr().out.splitlines()


def test_the_repositorys_config_is_green(capsys) -> None:
    code, lines = cli(capsys, "-f", str(ROOT / "config"))
    assert code == 0, lines
    assert not [line for line in lines if ": error: " in line or ": warning: " in line]
    assert any("kustomization.yaml:1: note: skipped: kustomize's own file." in line for line in lines)
    assert any("a kustomize patch (listed in" in line for line in lines)  # config/certmanager's patches
    summary = lines[-1]
    assert summary.startswith("summary: ") and "PriorityClasses and 2 PreemptionTolerationPolicies checked" in summary
    assert "of other kinds" in summary and summary.endswith("; 0 errors, 0 warnings")


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda tmp: tmp, id="empty-directory"),
        pytest.param(lambda tmp: (tmp / "c.yaml").write_text("# nothing here\n") and tmp / "c.yaml", id="comment-only"),
        pytest.param(lambda tmp: Path("/dev/null"), id="dev-null"),
        pytest.param(
            lambda tmp: (tmp / "d.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n") and tmp / "d.yaml",
            id="other-kinds-only",
        ),
    ],
)
def test_nothing_to_check_fails_unless_allowed(tmp_path: Path, capsys, make) -> None:
    path = str(make(tmp_path))
    code, lines = cli(capsys, "-f", path)
    assert code == 1
    assert lines[-2].startswith(f"{path}: error: nothing to check: no PriorityClass or PreemptionTolerationPolicy")
    assert lines[-1].endswith("; 1 error, 0 warnings")
    code, lines = cli(capsys, "--allow-empty", "-f", path)
    assert code == 0 and lines[-2].startswith(f"{path}: note: nothing to check")


def test_summary_counts_files_kinds_and_findings(tmp_path: Path, capsys) -> None:
    (tmp_path / "a.yaml").write_text(
        klass() + "---\n" + policy(minimum="8000") + "---\napiVersion: v1\nkind: Service\n"
    )
    (tmp_path / "kustomization.yaml").write_text("resources: [a.yaml]\n")
    (tmp_path / "b.yaml").write_text(klass(name="b", annotations=f'{MIN}: "10k"') + "---\nfoo: bar\n")
    code, lines = cli(capsys, "-f", str(tmp_path))
    assert code == 1
    assert lines[-1] == (
        "summary: 3 files, 6 documents: 2 PriorityClasses and 1 PreemptionTolerationPolicy checked; "
        "skipped: 1 kustomize, 1 of other kinds, 1 without a kind; 1 error, 1 warning"
    )


def test_the_alias_bomb_is_refused_and_the_file_goes_on(tmp_path: Path, capsys) -> None:
    """Nine levels of nine aliases: 387,420,489 strings if expanded. Refused after counting the composed
    nodes (a few dozen), so this finishes at once; the document after it is checked."""
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB_CLASS + "---\n" + klass(name="after"))
    code, lines = cli(capsys, "-f", str(path))
    assert code == 1
    assert lines[0] == (
        f"{path}:1: error: document not read: its aliases expand it by more than 100,000 nodes (an alias bomb)."
    )
    assert lines[-1].startswith("summary: 1 file, 2 documents: 1 PriorityClass and 0")


def test_warnings_as_errors_and_the_exit_codes(tmp_path: Path, capsys) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(klass(value="8000") + "---\n" + policy(minimum="8000"))
    assert cli(capsys, "-f", str(path))[0] == 0
    assert cli(capsys, "--warnings-as-errors", "-f", str(path))[0] == 1


def test_control_characters_in_a_value_are_escaped(tmp_path: Path, capsys) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(klass(annotations=f'{MIN}: "1\\u001b[2J0\\n"'))
    code, lines = cli(capsys, "-f", str(path))
    assert code == 1
    assert f'{MIN}="1\\x1b[2J0\\n" is not a base-10 integer' in lines[0]
    assert len(lines) == 2  # the finding and the summary: the newline did not start a line


def test_a_too_deep_document_leaves_the_ones_before_and_after_it_checked(tmp_path: Path, capsys) -> None:
    """All three documents are in the reader's first chunk: the class before the deep one is still checked
    (its error reported), the deep one is named by its own line, and reading goes on after it."""
    deep = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: " + "[" * 1100 + "]" * 1100 + "}\n"
    path = tmp_path / "deep.yaml"
    path.write_text(klass(annotations=f'{MIN}: "10k"') + "---\n" + deep + "---\n" + klass(name="after"))
    code, lines = cli(capsys, "-f", str(path))
    assert code == 1
    assert 'PriorityClass "low": annotation' in lines[0] and '="10k" is not a base-10 integer' in lines[0]
    assert lines[1] == f"{path}:12: error: invalid YAML at line 12: collections nested more than 1000 deep"
    assert lines[-1].startswith("summary: 1 file, 3 documents: 2 PriorityClasses and 0")


def test_a_file_that_cannot_seek_is_read_whole(tmp_path: Path, capsys) -> None:
    """`ptol validate -f <(kustomize build ...)`: a FIFO, read once into a spool."""
    fifo = tmp_path / "manifests"
    os.mkfifo(fifo)

    def write() -> None:
        with fifo.open("w") as pipe:
            pipe.write(klass(name="piped"))

    writer = threading.Thread(target=write)
    writer.start()
    code, lines = cli(capsys, "-f", str(fifo))
    writer.join()
    assert code == 0, lines
    assert lines[-1].startswith("summary: 1 file, 1 document: 1 PriorityClass and 0")


def test_past_the_kept_limit_objects_are_checked_alone_and_it_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory stays flat however long the input: past MAX_KEPT PriorityClasses and policies, the rest are
    still checked one by one, and a note says the rules between documents left them out."""
    from preemption_toleration.validation import documents

    monkeypatch.setattr(documents, "MAX_KEPT", 2)
    text = "---\n".join(klass(name=name) for name in ("a", "b", "a", "c", "d", "c"))
    text += "---\n" + klass(name="e", annotations=f'{MIN}: "10k"')
    found = findings_of(text)
    rules = [item.finding.rule for item in found]
    assert rules.count("duplicate-name") == 1  # "a", kept; "c" is past the limit
    assert "invalid-integer" in rules or any("10k" in item.finding.message for item in found)  # still checked
    [kept] = [item.finding for item in found if item.finding.rule == "kept"]
    assert kept.message.startswith("4 PriorityClasses and policies past the first 2 were checked one by one")
