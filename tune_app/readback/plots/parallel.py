"""The parameters in parallel coordinates: one axis per searched parameter (a log axis for one
searched on a log scale, categories in order), then the score; each trial a line in its rank's
colour."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from tune_app import scoring
from tune_app.readback.plots import (
    CATEGORY,
    LINEAR,
    LOG,
    category,
    highlighted,
    legend_label,
    new_figure,
    number_text,
    ordered,
    param_scale,
    short,
    ticks_of,
)
from tune_app.readback.plots.faint import FaintLines
from tune_app.rundir.read import ExperimentResults
from tune_app.rundir.records import TrialOutcome
from tune_app.seeds import SEED_KEY


@dataclass(frozen=True)
class Axis:
    """One vertical axis of the parallel coordinates: its name and scale, each trial's height
    on it (0 at the bottom, 1 at the top) and its ticks as (height, label)."""

    name: str
    scale: str
    heights: list[float]
    ticks: list[tuple[float, str]]


def parallel_axes(exp: ExperimentResults, trials: Sequence[TrialOutcome]) -> list[Axis]:
    """The parallel coordinates' axes for `trials`: each searched parameter but the seed (on its
    `param_scale`), then the score."""
    axes = []
    for key in exp.searched:
        if key != SEED_KEY:
            values = [t.params.get(key) for t in trials]
            axes.append(_axis(key, values, param_scale(exp, key, values)))
    scores = [t.score for t in trials]
    axes.append(_axis(f"{exp.metric}\n({scoring.describe(exp.scope)})", scores, LINEAR))
    return axes


def parallel_coordinates(exp: ExperimentResults, colors: dict[str, str]) -> Figure | None:
    """Every scored trial as one line through its searched parameters' values to its score, on
    one vertical axis each; the highlighted trials drawn over the others. None with fewer than
    two parameters (the scatter shows one) or two scored trials."""
    trials = [t for t in exp.ranked() if t.score is not None]
    if exp.metric is None or len(trials) < 2:
        return None
    axes = parallel_axes(exp, trials)
    if len(axes) < 3:
        return None
    shown = {t.trial_id for t in highlighted(exp)}
    fig, ax = new_figure(4.0)
    positions = range(len(axes))
    faint = _draw_trials(ax, trials, axes, colors, shown, exp.best_trial)
    for x, a in zip(positions, axes, strict=True):
        ax.axvline(x, color="#52606d", lw=1.0, zorder=1)
        for height, label in a.ticks:
            ax.text(
                x + 0.03,
                height,
                label,
                fontsize=7,
                va="center",
                color="#3e4c59",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 0.5},
                zorder=5,
            )
    ax.grid(False)
    ax.set_ylim(-0.06, 1.06)
    ax.set_xlim(-0.1, len(axes) - 1 + 0.45)
    ax.set_yticks([])
    ax.set_xticks(list(positions), [_axis_label(a) for a in axes])
    ax.tick_params(axis="x", length=0, labelsize=8)
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)
    handles = ax.get_legend_handles_labels()[0][::-1]  # best first
    handles += faint.legend(linewidth=0.9)
    if handles:
        fig.legend(handles=handles, loc="outside right upper", fontsize=8)
    return fig


def _axis(name: str, values: Sequence[Any], scale: str) -> Axis:
    """An axis through `values` on `scale`, spanning their range."""
    if scale == CATEGORY:
        labels = [category(v) for v in values]
        categories = ordered(dict(zip(labels, values, strict=True)))
        step = 1 / (len(categories) - 1) if len(categories) > 1 else 0.0
        place = {c: (i * step if step else 0.5) for i, c in enumerate(categories)}
        ticks = [(place[c], short(c)) for c in categories]
        return Axis(name, scale, [place[label] for label in labels], ticks)
    xs = [float(v) for v in values]
    to = math.log10 if scale == LOG else float
    lo, hi = min(xs), max(xs)
    if hi == lo:
        return Axis(name, scale, [0.5] * len(xs), [(0.5, number_text(lo))])

    def height(x: float) -> float:
        return (to(x) - to(lo)) / (to(hi) - to(lo))

    return Axis(
        name,
        scale,
        [height(x) for x in xs],
        [(height(v), number_text(v)) for v in ticks_of(xs, scale)],
    )


def _axis_label(axis: Axis) -> str:
    """An axis's name under it: a long one broken after each `/`, every line cut to fit."""
    first, *rest = axis.name.splitlines()
    parts = first.split("/") if len(first) > 24 else [first]
    lines = [part + "/" for part in parts[:-1]] + [parts[-1], *rest]
    if axis.scale == LOG:
        lines.append("(log)")
    return "\n".join(short(line, 24) for line in lines)


def _draw_trials(
    ax: Any,
    trials: list[TrialOutcome],
    axes: list[Axis],
    colors: dict[str, str],
    shown: set[str],
    winner: TrialOutcome | None,
) -> FaintLines:
    """Each trial's line through `axes`: the highlighted (`shown`) each its own, labelled, the
    best (`winner`, the report's banner's: with seeds, the best configuration's) boldest; the
    others faint (`FaintLines`)."""
    positions = range(len(axes))
    faint = FaintLines()
    for i, t in reversed(list(enumerate(trials))):  # the best drawn last, on top
        heights = [a.heights[i] for a in axes]
        if t.trial_id not in shown:
            points = [(float(x), h) for x, h in zip(positions, heights, strict=True)]
            faint.add(points, colors[t.trial_id], t.failure is not None)
            continue
        best = t is winner
        ax.plot(
            positions,
            heights,
            color=colors[t.trial_id],
            lw=2.4 if best else 1.5,
            ls="--" if t.failure else "-",
            marker="o",
            ms=3,
            label=legend_label(t, best),
            zorder=3,
        )
    faint.draw(ax, linewidth=0.9, alpha=0.5, zorder=2)
    return faint
