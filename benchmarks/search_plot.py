"""The LCBench search benchmark's figure: each method's epochs to the top 1% against random
search's, per task and pooled, with their bootstrap intervals, from the figures in a results
file (`benchmarks/results.json`) or of a run.

`python -m benchmarks.search_plot [RESULTS.json] [PNG]` draws `benchmarks/lcbench.png` from
`benchmarks/results.json` by default. Drawn with matplotlib's Agg canvas (no display).
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.json"
PNG = HERE / "lcbench.png"
POOLED = "pooled"
# The search benchmark's names of its ratios against random search (`search.per_task`, `pooled`).
_NAME = re.compile(
    r"(?P<where>\w+): (?P<method>[\w-]+) / random, epochs to the top 1%"
    r"(?P<pooled> \(geometric mean over tasks\))?"
)


@dataclass(frozen=True)
class Ratio:
    """One method's median epochs to the goal over random search's, on a task or pooled; an
    infinite value or bound is None (most runs, or the interval's, never got there)."""

    where: str  # a task, or `POOLED`
    method: str
    value: float | None
    low: float | None
    high: float | None
    seeds: int


def ratios(figures: list[dict[str, Any]]) -> list[Ratio]:
    """The ratios against random search among the rows of a results file (`Figure` as
    written by `benchmarks.common.write_json`)."""
    found = []
    for row in figures:
        match = _NAME.fullmatch(row["name"]) if row.get("benchmark") == "search" else None
        if match is None:
            continue
        low, high = row.get("spread") or (row["value"], row["value"])
        where = POOLED if match["pooled"] else match["where"]
        found.append(Ratio(where, match["method"], row["value"], low, high, row["repeats"]))
    return found


def draw(found: list[Ratio], path: Path) -> None:
    """One row per method; per task a coloured point and its interval, pooled a black diamond;
    a median that is infinite is drawn as an arrow at the right edge."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    methods = list(dict.fromkeys(r.method for r in found))
    places = list(dict.fromkeys(r.where for r in found if r.where != POOLED)) + [POOLED]
    finite = [v for r in found for v in (r.value, r.low, r.high) if v]
    left, right = min(finite) / 1.5, max(finite) * 1.5
    fig = Figure(figsize=(7.5, 0.55 * len(methods) + 1.6))
    ax = fig.add_subplot()
    colours = {p: f"C{i}" for i, p in enumerate(places[:-1])} | {POOLED: "black"}
    for i, where in enumerate(places):
        offset = (i - (len(places) - 1) / 2) * 0.16
        for r in (r for r in found if r.where == where):
            y = methods.index(r.method) + offset
            ends = [r.low or right, r.high or right]  # None: infinite
            ax.plot(ends, [y, y], color=colours[where], linewidth=1.2)
            marker = "D" if where == POOLED else "o"
            x, shape = (r.value, marker) if r.value else (right, ">")
            ax.plot([x], [y], shape, color=colours[where], markersize=5, label=where)
    ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlim(left, right)
    ax.set_yticks(range(len(methods)), methods)
    ax.invert_yaxis()
    seeds = sorted({r.seeds for r in found if r.where != POOLED})
    ax.set_xlabel(
        "median epochs to an epoch-52 val_accuracy in the pool's top 1%, over random search's\n"
        f"(95% bootstrap interval; {'-'.join(map(str, dict.fromkeys([seeds[0], seeds[-1]])))}"
        " seeds per task)",
        fontsize=8,
    )
    ax.set_title(
        "LCBench through tune_app: cost to the top 1% against random search", fontsize=10, pad=22
    )
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(
        unique.values(),
        unique.keys(),
        fontsize=7,
        ncol=len(unique),
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        frameon=False,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig).print_png(str(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results", nargs="?", type=Path, default=RESULTS)
    parser.add_argument("png", nargs="?", type=Path, default=PNG)
    args = parser.parse_args()
    found = ratios(json.loads(args.results.read_text())["figures"])
    if not found:
        parser.error(f"{args.results} holds no LCBench ratio against random search")
    draw(found, args.png)
    print(f"{len({r.method for r in found})} methods drawn to {args.png}")


if __name__ == "__main__":
    main()
