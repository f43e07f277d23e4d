"""`ptol dev manifests [--check]`: write every generated manifest of config/ and of the Helm chart (and the
docs' metrics reference), or check that the committed ones are current. What each file holds is the
`manifests` package's (manifests/files.py) and `telemetry.reference`'s; here helm runs, and the files are read
and written."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from preemption_toleration.cli.failures import EXIT_USAGE, CommandError
from preemption_toleration.devcluster import ToolchainError, ensure_toolchain
from preemption_toleration.manifests import files
from preemption_toleration.manifests.chart import CHART
from preemption_toleration.manifests.deletions import DELETIONS, PREFIX, listing_problems
from preemption_toleration.manifests.rendered import helm_template_arguments, template_selection
from preemption_toleration.telemetry import reference


def helm_renderer(helm: Path, root: Path) -> files.RenderTemplate:
    """A chart template rendered by `helm template` with some values set."""

    def render(template: str, values: tuple[str, ...]) -> str:
        selection = template_selection(template, values)
        argv = [str(helm), *helm_template_arguments(str(root / CHART), selection)]
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise CommandError(f"`helm template {' '.join(selection)}` failed: {' '.join(result.stderr.split())}")
        return result.stdout

    return render


def docs_files() -> dict[str, str]:
    """The docs pages generated from declarations in the code: the metrics reference."""
    return {reference.PATH: reference.metrics_reference()}


def all_files(helm: Path, root: Path) -> dict[str, str]:
    """Every generated file. The chart's generated templates are written before config/ is rendered
    from them, so the caller writes `files.code_files()` first."""
    return files.all_files(helm_renderer(helm, root)) | docs_files()


def stale(expected: dict[str, str], root: Path) -> list[str]:
    return [path for path, text in expected.items() if not (root / path).is_file() or (root / path).read_text() != text]


def unlisted(expected: dict[str, str], root: Path) -> list[str]:
    """What to fix by hand about the variants' delete patches: each kustomization.yaml lists those generated
    for its directory, and no other remains (see manifests/deletions.py)."""
    problems = []
    for directory in sorted({deletions.directory for deletions in DELETIONS}):
        generated = {Path(path).name for path in expected if Path(path).parent == Path(directory)}
        present = {path.name for path in (root / directory).glob(f"{PREFIX}*.yaml")}
        kustomization = (root / directory / "kustomization.yaml").read_text()
        problems += listing_problems(directory, kustomization, {n for n in generated if n.startswith(PREFIX)}, present)
    return problems


def register(dev_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = dev_sub.add_parser(
        "manifests",
        help="write config/'s and the Helm chart's generated files (from the code and the chart's templates)",
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is not current")
    parser.set_defaults(handler=run)


def repository_root() -> Path:
    return Path(__file__).resolve().parents[2]


def run(args: argparse.Namespace) -> int:
    root = repository_root()
    if not (root / CHART).is_dir():
        print(f"ptol dev manifests: no {CHART} here; run it from a checkout of the repository", file=sys.stderr)
        return EXIT_USAGE
    try:
        helm = ensure_toolchain(progress=lambda line: print(line, file=sys.stderr)).helm
    except ToolchainError as error:
        print(f"ptol dev manifests: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.check:
        expected = all_files(helm, root)
        outdated = stale(expected, root)
        for path in outdated:
            print(f"not current: {path}", file=sys.stderr)
        if outdated:
            print("regenerate with `ptol dev manifests`", file=sys.stderr)
        return _report(unlisted(expected, root)) or (1 if outdated else 0)
    _write(files.code_files() | docs_files(), root)
    rendered = files.rendered_files(helm_renderer(helm, root))
    _write(rendered, root)
    return _report(unlisted(rendered, root))


def _report(problems: list[str]) -> int:
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


def _write(generated: dict[str, str], root: Path) -> None:
    for path, text in generated.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_text() != text:
            target.write_text(text)
            print(f"wrote {path}")
