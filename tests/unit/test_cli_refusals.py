"""What the command line refuses before any work, as a user sees it: exit code 2, the usage of the very
subcommand that was called, and one line saying what is wrong and what to give instead."""

from __future__ import annotations

import pytest

from preemption_toleration.cli.main import main


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
