"""Draws the curves of docs/benchmarks.md as SVG files from saved benchmark results, with no plotting library.

- docs/img/webhook-memory.svg: `ptol webhook`'s steady and peak RSS against the pods in the cluster, beside
  the target (the empty cluster's RSS + 1 KB per pod), from every `webhook_memory*.json` of the results;
- docs/img/decision-time.svg: the guard's decision for a scheduler DELETE and the extender's recomputed
  preempt decision against the pods cached, each relative to its smallest cache, one line per saved run
  (`guard_latency*.json`, `extender_latency*.json`), beside the target (1.2 ×).

The results read are those committed under benchmarks/results/curves/ (the runs the page's captions name);
`--results benchmarks/results` draws a fresh run's instead. Run:

    .venv/bin/python benchmarks/plot.py [--results DIR] [--out docs/img]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

HERE = Path(__file__).resolve().parent
CURVES = HERE / "results" / "curves"
IMAGES = HERE.parent / "docs" / "img"
MIB = 1024 * 1024
EXTENDER_NODE_PODS = 110  # the node size extender_latency.py's targets are about

WIDTH, HEIGHT = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 80, 24, 48, 64  # the plot area's margins


@dataclass(frozen=True)
class Series:
    """One curve: its legend, points (x, y) and colour; a guide (a target) is drawn dashed, without markers."""

    label: str
    points: list[tuple[float, float]]
    colour: str
    guide: bool = False


@dataclass(frozen=True)
class Chart:
    title: str
    x_label: str
    y_label: str
    series: list[Series]
    y_from_zero: bool = True


def nice_step(span: float, ticks: int = 5) -> float:
    """A step of 1, 2 or 5 times a power of ten that cuts `span` into about `ticks` parts."""
    raw = span / ticks if span > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    return float(next(step * power for step in (1, 2, 5, 10) if step * power >= raw))


def tick_values(low: float, high: float) -> list[float]:
    step = nice_step(high - low)
    first = math.floor(low / step) * step
    count = math.ceil((high - first) / step - 1e-9)
    return [first + index * step for index in range(count + 1)]


def number(value: float) -> str:
    """A tick's label: thousands separated, as many decimals as the value needs (at most two)."""
    if abs(value - round(value)) < 1e-9:
        return f"{round(value):,}"
    return f"{value:,.2f}".rstrip("0")


def render(chart: Chart) -> str:
    """The chart as an SVG document: axes with ticks and grid lines, a polyline per series, a legend."""
    points = [point for series in chart.series for point in series.points]
    x_ticks = tick_values(0.0, max(x for x, _ in points))
    y_low = 0.0 if chart.y_from_zero else min(y for _, y in points)
    y_ticks = tick_values(y_low, max(y for _, y in points) * 1.05)
    x_span, y_span = x_ticks[-1] - x_ticks[0], y_ticks[-1] - y_ticks[0]
    area_width, area_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    height = HEIGHT + 18 * len(chart.series) + 8  # the legend goes below the x axis's label

    def at(x: float, y: float) -> tuple[float, float]:
        return (
            LEFT + (x - x_ticks[0]) / x_span * area_width,
            TOP + area_height - (y - y_ticks[0]) / y_span * area_height,
        )

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(chart.title)}</title>",
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" font-size="15">{escape(chart.title)}</text>',
    ]
    for value in x_ticks:
        x, _ = at(value, y_ticks[0])
        parts.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + area_height}" stroke="#e5e5e5"/>')
        parts.append(f'<text x="{x:.1f}" y="{TOP + area_height + 18}" text-anchor="middle">{number(value)}</text>')
    for value in y_ticks:
        _, y = at(x_ticks[0], value)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + area_width}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        parts.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{number(value)}</text>')
    parts += [
        f'<rect x="{LEFT}" y="{TOP}" width="{area_width}" height="{area_height}" fill="none" stroke="#333"/>',
        f'<text x="{LEFT + area_width / 2}" y="{HEIGHT - 18}" text-anchor="middle">{escape(chart.x_label)}</text>',
        f'<text transform="translate(20 {TOP + area_height / 2}) rotate(-90)" text-anchor="middle">'
        f"{escape(chart.y_label)}</text>",
    ]
    for series in chart.series:
        drawn = " ".join(f"{x:.1f},{y:.1f}" for x, y in (at(*point) for point in series.points))
        dash = ' stroke-dasharray="6 4"' if series.guide else ""
        parts.append(f'<polyline points="{drawn}" fill="none" stroke="{series.colour}" stroke-width="2"{dash}/>')
        if not series.guide:
            parts += [
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{series.colour}"/>'
                for x, y in (at(*point) for point in series.points)
            ]
    for index, series in enumerate(chart.series):  # the legend, one row a series
        y = HEIGHT + 4 + index * 18
        dash = ' stroke-dasharray="6 4"' if series.guide else ""
        parts += [
            f'<line x1="{LEFT + 12}" y1="{y - 4}" x2="{LEFT + 36}" y2="{y - 4}" stroke="{series.colour}" '
            f'stroke-width="2"{dash}/>',
            f'<text x="{LEFT + 42}" y="{y}">{escape(series.label)}</text>',
        ]
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def memory_chart(runs: Sequence[dict[str, Any]]) -> Chart:
    """Steady and peak RSS per cluster size over every run given (a later run's rows win for a size; the
    median of a run's rounds, of the checkout it ran from, not of a --baseline's), and the target line from
    the empty cluster's steady RSS."""
    by_pods: dict[int, tuple[float, float]] = {}
    for run in sorted(runs, key=lambda run: str(run["machine"]["date"])):
        rows = [row for row in run["rows"] if row.get("steady_rss") and row.get("code", "current") == "current"]
        for pods in {int(row["pods"]) for row in rows}:
            rounds = [row for row in rows if row["pods"] == pods]
            by_pods[pods] = (
                statistics.median(row["steady_rss"] for row in rounds) / MIB,
                statistics.median(row["peak_rss"] for row in rounds) / MIB,
            )
    sizes = sorted(by_pods)
    steady = [(float(pods), by_pods[pods][0]) for pods in sizes]
    peak = [(float(pods), by_pods[pods][1]) for pods in sizes]
    empty = by_pods[0][0]
    target = [(0.0, empty), (float(sizes[-1]), empty + sizes[-1] * 1024 / MIB)]
    return Chart(
        title="ptol webhook memory against the pods in the cluster",
        x_label="pods in the cluster (all cached)",
        y_label="RSS (MiB)",
        series=[
            Series("peak RSS", peak, "#d95f02"),
            Series("steady RSS", steady, "#1b9e77"),
            Series("target: empty cluster + 1 KB per pod", target, "#777777", guide=True),
        ],
    )


def relative_times(run: list[tuple[int, float]]) -> tuple[list[tuple[float, float]], float, int]:
    """A run's p50 per size relative to its smallest size; also that p50, and that size."""
    ordered = sorted(run)
    smallest, base = ordered[0]
    return [(float(size), p50 / base) for size, p50 in ordered], base, smallest


GUARD_COLOURS = ["#1b9e77", "#66c2a5", "#0b5d45"]
EXTENDER_COLOURS = ["#7570b3", "#a6a3d6", "#4a4590"]


def decision_chart(guard_runs: Sequence[dict[str, Any]], extender_runs: Sequence[dict[str, Any]]) -> Chart:
    """Each run's p50 relative to its smallest cache, against the pods cached, and the 1.2 × target: one line
    per run, so that the scatter between runs of the same code shows as such."""
    series = []
    for number, run in enumerate(guard_runs, start=1):
        points, base, smallest = relative_times([(row["pods"], row["schedulerDeleteP50Ms"]) for row in run["summary"]])
        label = f"guard, a scheduler DELETE refused, run {number} ({base * 1000:.0f} µs at {smallest:,} pods)"
        series.append(Series(label, points, GUARD_COLOURS[(number - 1) % len(GUARD_COLOURS)]))
    for number, run in enumerate(extender_runs, start=1):
        points, base, smallest = relative_times(
            [
                (row["cached_pods"], row["p50_ms"])
                for row in run["rows"]
                if row["path"] == "recompute" and row["node_pods"] == EXTENDER_NODE_PODS
            ]
        )
        label = (
            f"extender, victims chosen again on a node of {EXTENDER_NODE_PODS} pods, run {number} "
            f"({base:.2f} ms at {smallest:,} pods)"
        )
        series.append(Series(label, points, EXTENDER_COLOURS[(number - 1) % len(EXTENDER_COLOURS)]))
    widest = max(points[-1][0] for points in (line.points for line in series))
    series.append(Series("target: 1.2 ×", [(0.0, 1.2), (widest, 1.2)], "#777777", guide=True))
    return Chart(
        title="Decision time against the pods cached (p50, relative to the smallest cache)",
        x_label="pods cached",
        y_label="time relative to the smallest cache (×)",
        series=series,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=CURVES, help="directory of the saved results to draw")
    parser.add_argument("--out", type=Path, default=IMAGES, help="directory the SVG files are written to")
    args = parser.parse_args()

    def runs(benchmark: str) -> list[dict[str, Any]]:
        """Every saved run of `benchmark` in the directory: NAME.json and NAME-*.json."""
        return [load(path) for path in sorted(args.results.glob(f"{benchmark}*.json"))]

    memory, guard, extender = runs("webhook_memory"), runs("guard_latency"), runs("extender_latency")
    charts = {
        "webhook-memory.svg": memory_chart(memory) if memory else None,
        "decision-time.svg": decision_chart(guard, extender) if guard or extender else None,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    for name, chart in charts.items():
        if chart is None:
            print(f"{name}: no saved run to draw it from in {args.results}")
            continue
        (args.out / name).write_text(render(chart))
        print(f"wrote {args.out / name}")


if __name__ == "__main__":
    main()
