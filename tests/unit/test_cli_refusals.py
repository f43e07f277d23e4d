"""What the command line refuses before any work, as a user sees it: exit code 2, the usage of the very
subcommand that was called, and one line saying what is wrong and what to give instead."""

from __future__ import annotations

import pytest

from preemption_toleration.cli import demo_cmd, dev_cmd
from preemption_toleration.cli.main import main
from preemption_toleration.devcluster.toolchain import supported_versions


@pytest.mark.parametrize(
    ("argv", "usage", "line"),
    [
        pytest.param(
            ["dev", "cluster", "up", "extra"],
            "usage: ptol dev cluster up [-h]",
            "ptol dev cluster up: error: unrecognized arguments: extra",
            id="an unknown argument of a subcommand shows that subcommand's usage",
        ),
        pytest.param(
            ["explain", "pc", "low", "--bogus"],
            "usage: ptol explain [-h]",
            "ptol explain: error: unrecognized arguments: --bogus",
            id="an unknown option of a subcommand shows that subcommand's usage",
        ),
        pytest.param(
            ["dev", "manifests", "--bogus", "x"],
            "usage: ptol dev manifests [-h]",
            "ptol dev manifests: error: unrecognized arguments: --bogus x",
            id="an unknown option two levels down",
        ),
    ],
)
def test_a_usage_error_shows_the_usage_of_the_subcommand_called(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str, line: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.startswith(usage)
    assert err.splitlines()[-1] == line


SUPPORTED = ", ".join(supported_versions())


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        pytest.param(
            ["dev", "cluster", "up", "--nodes", "-1"],
            "ptol dev cluster up: error: argument --nodes: '-1' is not a count: a whole number, 0 or more",
            id="a negative count of nodes",
        ),
        pytest.param(
            ["dev", "cluster", "up", "--nodes", "x"],
            "ptol dev cluster up: error: argument --nodes: 'x' is not a count: a whole number, 0 or more",
            id="a count that is not a number",
        ),
        pytest.param(
            ["dev", "cluster", "up", "--node-cpu", "abc"],
            "ptol dev cluster up: error: argument --node-cpu: 'abc' is not a Kubernetes quantity such as 4, 500m "
            "or 8Gi",
            id="a CPU capacity that is not a quantity",
        ),
        pytest.param(
            ["dev", "cluster", "up", "--node-memory", "8GB"],
            "ptol dev cluster up: error: argument --node-memory: '8GB' is not a Kubernetes quantity such as 4, 500m "
            "or 8Gi",
            id="a memory capacity with a suffix Kubernetes does not know",
        ),
        pytest.param(
            ["dev", "cluster", "up", "--node-cpu", "0"],
            "ptol dev cluster up: error: argument --node-cpu: '0' is not more than 0: give a quantity such as 4, 500m "
            "or 8Gi",
            id="a capacity of nothing",
        ),
        pytest.param(
            ["dev", "cluster", "up", "--namespace", "Team_A"],
            "ptol dev cluster up: error: argument --namespace: 'Team_A' is not a namespace name (up to 63 lower-case "
            "letters, digits and '-', starting and ending with a letter or digit)",
            id="a namespace the API server would refuse",
        ),
        pytest.param(
            ["dev", "cluster", "up", "--kubernetes-version", "1.2.3"],
            "ptol dev cluster up: error: argument --kubernetes-version: '1.2.3' is not a Kubernetes release this "
            f"repository pins; supported: {SUPPORTED} (`ptol dev cluster pin 1.2.3` adds one)",
            id="a release that is not pinned, with the pinned ones",
        ),
        pytest.param(
            ["dev", "cluster", "install", "--kubernetes-version", "1.37.2", "--kubernetes-version", "1.37"],
            "ptol dev cluster install: error: argument --kubernetes-version: '1.37' is not a Kubernetes release "
            f"such as 1.37.2; supported: {SUPPORTED}",
            id="a release that is not X.Y.Z, with the pinned ones",
        ),
    ],
)
def test_values_refused_before_any_work(capsys: pytest.CaptureFixture[str], argv: list[str], line: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.startswith(f"usage: ptol {' '.join(argv[:3])} [-h]")
    assert err.splitlines()[-1] == line


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["dev", "cluster", "up", "--dir", "unused"], id="dev cluster up"),
        pytest.param(["dev", "cluster", "install"], id="dev cluster install"),
        pytest.param(["demo", "--dir", "unused"], id="demo"),
    ],
)
def test_a_release_variable_that_is_not_pinned_is_refused_before_any_work(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started")

    monkeypatch.setenv("PTOL_KUBERNETES_VERSION", "9.9.9")
    monkeypatch.setattr(dev_cmd, "ensure_toolchain", no_work)
    monkeypatch.setattr(dev_cmd, "LocalCluster", no_work)
    monkeypatch.setattr(demo_cmd, "run_until_signalled", no_work)
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"ptol {' '.join(argv[:-2] if '--dir' in argv else argv)}: error: $PTOL_KUBERNETES_VERSION: '9.9.9' is not a "
        f"Kubernetes release this repository pins; supported: {SUPPORTED} (`ptol dev cluster pin 9.9.9` adds one)\n"
    )
