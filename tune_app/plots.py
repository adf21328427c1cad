"""A run's figures as PNG bytes, drawn with matplotlib's Agg canvas (no display, no pyplot state).

Learning curves, the best metric so far against wall time, and each searched parameter against
the trials' best metric. Colours follow the trials' rank, so every figure and the HTML table agree.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable
from itertools import accumulate
from typing import Any

from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from tune_app import scoring
from tune_app.rundir.read import ExperimentResults
from tune_app.rundir.records import UNFINISHED, TrialOutcome
from tune_app.scoring import finite

ITERATION = "training_iteration"
LOGGED_AT = "logged_at"  # unix time the driver logged a result
WIDTH_IN, DPI = 9.0, 110
MAX_LEGEND_TRIALS = 12  # more trials than this get no per-trial legend entries
FAILED_COLOR, EARLY_COLOR = "#c62828", "#222222"


def trial_colors(exp: ExperimentResults) -> dict[str, str]:
    """Trial id -> hex colour, by rank: tab10 (less red) for a few trials, viridis for many."""
    ranked = exp.ranked()
    tab10 = colormaps["tab10"]
    palette = [tab10(i) for i in range(10) if i != 3]  # red means failed
    if len(ranked) <= len(palette):
        return {t.trial_id: to_hex(palette[i]) for i, t in enumerate(ranked)}
    last = len(ranked) - 1
    return {t.trial_id: to_hex(colormaps["viridis"](i / last)) for i, t in enumerate(ranked)}


def learning_curves(exp: ExperimentResults, colors: dict[str, str]) -> bytes | None:
    """The metric against training_iteration, one line per trial; failed trials dashed and
    crossed at their last finite result, trials the scheduler stopped marked where it stopped."""
    metric = exp.metric
    if metric is None:
        return None
    fig, ax = _figure(4.2)
    ranked = exp.ranked()
    drawn = 0
    for t in reversed(ranked):  # the best drawn last, on top
        points = _series(exp.history.get(t.trial_id, []), ITERATION, metric)
        if not points:
            continue
        drawn += 1
        xs, ys = zip(*points, strict=True)
        best = t is ranked[0]
        ax.plot(
            xs,
            ys,
            color=colors[t.trial_id],
            lw=2.4 if best else 1.4,
            ls="--" if t.failure else "-",
            marker="o" if len(xs) <= 30 else None,
            ms=3,
            label=_legend_label(t, best),
            zorder=3 if best else 2,
        )
        last = next(((x, y) for x, y in reversed(points) if not math.isnan(y)), None)
        if last and t.failure:
            ax.plot(*last, "X", color=FAILED_COLOR, ms=11, mec="white", zorder=4)
        elif last and t.stopped_early:
            ax.plot(*last, "v", color=EARLY_COLOR, ms=8, mec="white", zorder=4)
    if not drawn:
        return None
    ax.set_xlabel("training iteration")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(_tex_safe(metric))
    handles = ax.get_legend_handles_labels()[0][::-1]  # best first
    if len(ranked) > MAX_LEGEND_TRIALS:
        handles = []
    handles += _marker_proxies(ranked)
    if handles:
        fig.legend(handles=handles, loc="outside right upper", fontsize=8)
    return _png(fig)


def best_over_time(exp: ExperimentResults) -> bytes | None:
    """The best metric so far against wall time since the run's first result (from logged_at)."""
    metric = exp.metric
    if metric is None:
        return None
    points = sorted(p for steps in exp.history.values() for p in _series(steps, LOGGED_AT, metric))
    start = points[0][0] if points else 0.0  # the first result, even one without a finite metric
    points = [(x, y) for x, y in points if not math.isnan(y)]
    if not points:
        return None
    span = points[-1][0] - start
    unit, scale = ("h", 3600.0) if span > 3 * 3600 else ("min", 60.0) if span > 600 else ("s", 1.0)
    xs = [(x - start) / scale for x, _ in points]
    ys = [y for _, y in points]
    better = max if exp.mode == "max" else min
    best = list(accumulate(ys, better))
    fig, ax = _figure(3.4)
    ax.scatter(xs, ys, s=10, color="#b0b7c3", label="each result", zorder=2)
    ax.step(xs, best, where="post", color="#1565c0", lw=2.2, label="best so far", zorder=3)
    ax.annotate(
        f"{best[-1]:.4g}",
        (xs[-1], best[-1]),
        xytext=(4, 4),
        textcoords="offset points",
        fontsize=9,
        color="#1565c0",
    )
    ax.set_xlabel(f"wall time since the first result ({unit})")
    ax.set_ylabel(f"best {_tex_safe(metric)} so far")
    ax.legend(loc="best", fontsize=8)
    return _png(fig)


def params_vs_metric(exp: ExperimentResults, colors: dict[str, str]) -> bytes | None:
    """One scatter per searched parameter: its value against each trial's best metric.

    Numbers on a linear (or, spanning 100x or more, log) axis; anything else as categories.
    """
    trials = [t for t in exp.ranked() if t.score is not None]
    if not exp.searched or not trials or exp.metric is None:
        return None
    cols = min(len(exp.searched), 3)
    rows = math.ceil(len(exp.searched) / cols)
    fig = Figure(figsize=(WIDTH_IN, 2.9 * rows + 0.3), dpi=DPI, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, key in zip(axes, exp.searched, strict=False):
        _style(ax)
        values = [t.params.get(key) for t in trials]
        if all(_is_number(v) for v in values):
            xs: list[float] = [float(v) for v in values if v is not None]
            if min(xs) > 0 and max(xs) >= 100 * min(xs):
                ax.set_xscale("log")
        else:
            labels = [_category(v) for v in values]
            categories = _ordered(dict(zip(labels, values, strict=True)))
            xs = [float(categories.index(label)) for label in labels]
            ax.set_xticks(range(len(categories)), [_short(c) for c in categories])
            ax.tick_params(axis="x", labelrotation=30 if len(categories) > 3 else 0)
            ax.set_xlim(-0.5, len(categories) - 0.5)
        for t, x in zip(trials, xs, strict=True):
            color = colors[t.trial_id]
            ax.scatter(
                x,
                t.score,
                s=46,
                marker="X" if t.failure else "o",
                facecolors="none" if t.stopped_early else color,
                edgecolors=color,
                linewidths=1.6,
                zorder=3,
            )
        ax.set_xlabel(_tex_safe(key))
        ax.set_ylabel(f"{_tex_safe(exp.metric)} ({scoring.describe(exp.scope)})", fontsize=8)
    for ax in axes[len(exp.searched) :]:
        ax.set_visible(False)
    return _png(fig)


def _series(steps: Iterable[dict[str, float]], x_key: str, y_key: str) -> list[tuple[float, float]]:
    """(x, y) of the results that report x and the metric key; a null metric (NaN in the run)
    becomes NaN, so a diverged curve shows a gap."""
    return [
        (float(s[x_key]), float("nan") if s[y_key] is None else float(s[y_key]))
        for s in steps
        if s.get(x_key) is not None and y_key in s
    ]


def _legend_label(t: TrialOutcome, best: bool) -> str:
    notes = {
        "best": best,
        "failed": t.failure is not None,
        "stopped": t.stopped_early,
        "unfinished": t.status == UNFINISHED,
    }
    shown = [note for note, on in notes.items() if on]
    return t.trial_id + (f" ({', '.join(shown)})" if shown else "")


def _marker_proxies(trials: list[TrialOutcome]) -> list[Line2D]:
    proxies = []
    if any(t.failure for t in trials):
        proxies.append(
            Line2D([], [], color=FAILED_COLOR, marker="X", ls="--", label="failed (last result)")
        )
    if any(t.stopped_early for t in trials):
        proxies.append(
            Line2D([], [], color=EARLY_COLOR, marker="v", ls="", label="stopped by the scheduler")
        )
    return proxies


def _figure(height_in: float) -> tuple[Figure, Any]:
    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    _style(ax)
    return fig, ax


def _style(ax: Any) -> None:
    ax.grid(True, color="#e3e6eb", lw=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.tick_params(labelsize=8)


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buffer)
    return buffer.getvalue()


def _is_number(value: Any) -> bool:
    return finite(value) is not None


def _category(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _ordered(by_label: dict[str, Any]) -> list[str]:
    """Category labels in their values' order where values compare ([8] before [16]), else by
    label."""
    try:
        return sorted(by_label, key=lambda label: by_label[label])
    except TypeError:
        return sorted(by_label)


def _short(text: str, limit: int = 18) -> str:
    return _tex_safe(text if len(text) <= limit else text[: limit - 1] + "…")


def _tex_safe(text: str) -> str:
    """`text` shown as written: matplotlib reads a pair of `$` as math."""
    return text.replace("$", r"\$")
