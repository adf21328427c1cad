"""A run's figures, drawn with matplotlib's Agg canvas (no display, no pyplot state); `png`
gives their bytes.

Learning curves (with several objectives, one figure each), the best metric so far against wall
time, each searched parameter against the
trials' scores, and the expected best of n trials; the parameters in parallel coordinates are in
`plots.parallel`, the Pareto front of several objectives in `plots.front`. Colours follow the
trials' rank, so every figure and the HTML table agree; beyond MAX_LEGEND_TRIALS trials only the
best HIGHLIGHTED have a colour, the rest are faint grey. A parameter searched on a log scale gets
a log axis.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import EngFormatter, LogLocator, MaxNLocator, NullFormatter

from tune_app import scoring
from tune_app.readback.front import best_first
from tune_app.readback.plots import marks
from tune_app.readback.plots.faint import FAINT_COLOR, FaintLines
from tune_app.rundir import budget
from tune_app.rundir.read import ExperimentResults
from tune_app.rundir.records import UNFINISHED, TrialOutcome
from tune_app.scoring import finite
from tune_app.seeds import SEED_KEY

ITERATION = "training_iteration"
# RLlib's count of environment steps sampled so far: its learning curves' x axis.
ENV_STEPS = ("env_runners/num_env_steps_sampled_lifetime", "num_env_steps_sampled_lifetime")
LOGGED_AT = "logged_at"  # unix time the driver logged a result
WIDTH_IN, DPI = 9.0, 110
MAX_LEGEND_TRIALS = 12  # up to this many trials, each has a colour and a legend entry
HIGHLIGHTED = 5  # beyond that, only the best this many do; the rest are drawn faint
FAILED_COLOR, EARLY_COLOR = "#c62828", "#222222"
LOG, LINEAR, CATEGORY = "log", "linear", "category"  # how a parameter's axis is drawn
MAX_VALUE_TICKS = 6  # a log axis of up to this many distinct values is labelled at each


def highlighted(exp: ExperimentResults) -> list[TrialOutcome]:
    """The trials drawn in colour with a legend entry, best first (the front first, with
    several objectives): every trial up to MAX_LEGEND_TRIALS, else the best HIGHLIGHTED of
    those with a score (a value of every objective)."""
    ranked = best_first(exp.summary)
    if len(ranked) <= MAX_LEGEND_TRIALS:
        return ranked
    judged = exp.summary.points()
    return [t for t in ranked if t.score is not None or t.trial_id in judged][:HIGHLIGHTED]


def trial_colors(exp: ExperimentResults) -> dict[str, str]:
    """Trial id -> hex colour, by rank: tab10 (less red) for a few highlighted trials, viridis
    for more; FAINT_COLOR for the trials not highlighted."""
    shown = highlighted(exp)
    tab10 = colormaps["tab10"]
    palette = [tab10(i) for i in range(10) if i != 3]  # red means failed
    if len(shown) <= len(palette):
        colors = {t.trial_id: to_hex(palette[i]) for i, t in enumerate(shown)}
    else:
        last = len(shown) - 1
        colors = {t.trial_id: to_hex(colormaps["viridis"](i / last)) for i, t in enumerate(shown)}
    return {t.trial_id: colors.get(t.trial_id, FAINT_COLOR) for t in exp.trials}


def curve_x(exp: ExperimentResults) -> tuple[str, str]:
    """The learning curves' x key and axis label: RLlib's env steps sampled when the results
    have them, else the training iteration."""
    for key in ENV_STEPS:
        if any(s.get(key) is not None for steps in exp.history.values() for s in steps):
            return key, "env steps sampled"
    return ITERATION, "training iteration"


def param_scale(exp: ExperimentResults, key: str, values: Sequence[Any]) -> str:
    """How the axis of searched parameter `key`, holding `values`, is drawn: LOG when it was
    searched on a log scale (run.json's `log_scaled`; for a run from before that, positive
    numbers 100x or more apart), LINEAR for other numbers, CATEGORY for anything else."""
    numbers = [finite(v) for v in values]
    xs = [x for x in numbers if x is not None]
    if not xs or len(xs) < len(numbers):
        return CATEGORY
    if exp.log_scaled is not None:
        return LOG if key in exp.log_scaled and min(xs) > 0 else LINEAR
    return LOG if min(xs) > 0 and max(xs) >= 100 * min(xs) else LINEAR


def learning_curves(
    exp: ExperimentResults, colors: dict[str, str], metric: str | None = None
) -> Figure | None:
    """The metric (or the result key `metric`: one of several objectives) against
    training_iteration (RLlib: env steps sampled), one line per trial; failed trials dashed and
    crossed at their last finite result, trials the scheduler stopped marked where it stopped;
    trials not highlighted thin and faint, under the others; the rungs and PBT's exploits
    (`marks`)."""
    metric = metric or exp.metric
    if metric is None:
        return None
    fig, ax = new_figure(4.2)
    ranked = best_first(exp.summary)
    winner = exp.best_trial  # the report's banner's: with seeds, the best configuration's
    shown = {t.trial_id for t in highlighted(exp)}
    x_key, x_label = curve_x(exp)
    drawn = 0
    # The end marks in one line per kind, as the faint trials: not one artist per trial.
    faint = FaintLines()
    ends: dict[tuple[str, bool], list[tuple[float, float]]] = {}  # (marker, bold) -> points
    for t in reversed(ranked):  # the best drawn last, on top
        points = _series(exp.history.get(t.trial_id, []), x_key, metric)
        if not points:
            continue
        drawn += 1
        last = next(((x, y) for x, y in reversed(points) if not math.isnan(y)), None)
        end = ("X" if t.failure else "v", last) if last and (t.failure or t.stopped_early) else None
        if t.trial_id not in shown:
            faint.add(points, colors[t.trial_id], t.failure is not None, end)
            continue
        best = t is winner
        xs, ys = zip(*points, strict=True)
        ax.plot(
            xs,
            ys,
            color=colors[t.trial_id],
            lw=2.4 if best else 1.4,
            ls="--" if t.failure else "-",
            marker="o" if len(xs) <= 30 else None,
            ms=3,
            label=legend_label(t, best),
            zorder=3 if best else 2,
        )
        if end:
            ends.setdefault((end[0], True), []).append(end[1])
    for marker, at in faint.draw(ax, linewidth=0.8, alpha=0.55, zorder=1):
        ends.setdefault((marker, False), []).append(at)
    _draw_ends(ax, ends)
    ax.autoscale_view()
    if not drawn:
        return None
    ax.set_xlabel(x_label)
    if x_key == ITERATION:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))  # 200k, 1.5M
    ax.set_ylabel(tex_safe(metric))
    handles = ax.get_legend_handles_labels()[0][::-1]  # best first
    handles += faint.legend(linewidth=0.8)
    handles += _marker_proxies(ranked)
    handles += marks.draw(ax, exp, x_key, metric)
    if handles:
        fig.legend(handles=handles, loc="outside right upper", fontsize=8)
    return fig


def _draw_ends(ax: Any, ends: dict[tuple[str, bool], list[tuple[float, float]]]) -> None:
    """Every trial's end mark: (marker, bold) -> where."""
    for (marker, bold), at in ends.items():
        size = (11 if marker == "X" else 8) * (1.0 if bold else 0.6)
        color = FAILED_COLOR if marker == "X" else EARLY_COLOR
        ax.plot(*zip(*at, strict=True), marker, ls="", color=color, ms=size, mec="white", zorder=4)


def best_over_time(exp: ExperimentResults) -> Figure | None:
    """The best score so far against wall time since the run's first result (from logged_at), as
    a staircase that never gets worse: a trial counts from its last result, with its score under
    the run's scope (a trial still running, with its score so far), so the staircase ends at the
    best the summary names; failed trials counted only while no other has a score, as the
    summary ranks them. The dots are the raw results."""
    metric = exp.metric
    if metric is None:
        return None
    points = sorted(
        (x, trial_id, y)
        for trial_id, steps in exp.history.items()
        for x, y in _series(steps, LOGGED_AT, metric)
    )
    start = points[0][0] if points else 0.0  # the first result, even one without a finite metric
    points = [(x, t, y) for x, t, y in points if not math.isnan(y)]
    if not points:
        return None
    span = points[-1][0] - start
    unit, scale = ("h", 3600.0) if span > 3 * 3600 else ("min", 60.0) if span > 600 else ("s", 1.0)
    xs = [(x - start) / scale for x, _, _ in points]
    ys = [y for _, _, y in points]
    failed = {t.trial_id for t in exp.trials if t.failure is not None}
    values: dict[str, list[float]] = {}
    for _, trial_id, y in points:
        values.setdefault(trial_id, []).append(y)
    seen: dict[str, int] = {}
    steps_x: list[float] = []
    best: list[float] = []
    reached: dict[bool, float | None] = {True: None, False: None}  # the best yet, of each kind
    for x, (_, trial_id, _) in zip(xs, points, strict=True):
        seen[trial_id] = seen.get(trial_id, 0) + 1
        if seen[trial_id] < len(values[trial_id]):
            continue  # not the trial's last result
        score = scoring.score(values[trial_id], exp.scope, exp.mode)
        ok = trial_id not in failed
        if score is not None and scoring.better(score, reached[ok], exp.mode):
            reached[ok] = score
        # The others first; failed trials only while none has a score.
        top = reached[True] if reached[True] is not None else reached[False]
        if top is not None:
            steps_x.append(x)
            best.append(top)
    if not best:
        return None
    fig, ax = new_figure(3.4)
    # Markers of one line, not a scatter: the same pixels (a scatter's s=10 is a marker of
    # sqrt(10) points), drawn 4x faster for the 80,000 results of a 10,000-trial run.
    ax.plot(xs, ys, ls="none", marker="o", ms=math.sqrt(10), color="#b0b7c3", zorder=2,
            label="each result")  # fmt: skip
    label = f"best score so far ({scoring.describe(exp.scope)})"
    ax.step(steps_x, best, where="post", color="#1565c0", lw=2.2, label=label, zorder=3)
    ax.annotate(
        f"{best[-1]:.4g}",
        (steps_x[-1], best[-1]),
        xytext=(4, 4),
        textcoords="offset points",
        fontsize=9,
        color="#1565c0",
    )
    ax.set_xlabel(f"wall time since the first result ({unit})")
    ax.set_ylabel(f"best {tex_safe(metric)} so far")
    ax.legend(loc="best", fontsize=8)
    return fig


def params_vs_metric(exp: ExperimentResults, colors: dict[str, str]) -> Figure | None:
    """One scatter per searched parameter: its value against each trial's score.

    Numbers on a linear or log axis (`param_scale`); anything else as categories.
    """
    trials = [t for t in exp.ranked() if t.score is not None]
    # The seed is no parameter to tune: its value against the score is noise, as in
    # `parallel_axes`.
    searched = [k for k in exp.searched if k != SEED_KEY]
    if not searched or not trials or exp.metric is None:
        return None
    shown = {t.trial_id for t in highlighted(exp)}
    cols = min(len(searched), 3)
    rows = math.ceil(len(searched) / cols)
    fig = Figure(figsize=(WIDTH_IN, 2.9 * rows + 0.3), dpi=DPI, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, key in zip(axes, searched, strict=False):
        _style(ax)
        values = [t.params.get(key) for t in trials]
        scale = param_scale(exp, key, values)
        if scale == CATEGORY:
            labels = [category(v) for v in values]
            categories = ordered(dict(zip(labels, values, strict=True)))
            xs = [float(categories.index(label)) for label in labels]
            ax.set_xticks(range(len(categories)), [short(c) for c in categories])
            ax.tick_params(axis="x", labelrotation=30 if len(categories) > 3 else 0)
            ax.set_xlim(-0.5, len(categories) - 0.5)
        else:
            xs = [float(v) for v in values if v is not None]  # every one a number
            ax.set_xscale(scale)
            if scale == LOG:
                _log_ticks(ax, xs)
        # One line of markers per look of a point (the faint trials share one or two), not
        # a scatter: the same markers as a scatter's, drawn 3.5x faster for 10,000 trials.
        # Each look is drawn in rank order, the best last; among faint points, all of one look
        # lie over or under all of the other (grey on grey).
        kinds: dict[tuple[bool, bool, str, bool], tuple[list[float], list[float]]] = {}
        for t, x in zip(reversed(trials), reversed(xs), strict=True):  # the best last, on top
            kind = (t.trial_id in shown, t.failure is not None, colors[t.trial_id], t.stopped_early)
            px, py = kinds.setdefault(kind, ([], []))
            px.append(x)
            py.append(float(t.score or 0))
        for (bold, failed, color, hollow), (px, py) in sorted(
            kinds.items(),
            key=lambda kind: kind[0][:2],  # stable: in order within a kind
        ):
            ax.plot(
                px,
                py,
                ls="none",
                marker="X" if failed else "o",
                ms=math.sqrt(46 if bold else 30),  # a scatter's s is the marker's area
                mfc="none" if hollow else color,
                mec=color,
                mew=1.6,
                zorder=3 if bold else 2,
            )
        ax.set_xlabel(tex_safe(key) + (" (log)" if scale == LOG else ""))
        ax.set_ylabel(f"{tex_safe(exp.metric)} ({scoring.describe(exp.scope)})", fontsize=8)
    for ax in axes[len(searched) :]:
        ax.set_visible(False)
    return fig


def png(fig: Figure) -> bytes | None:
    """The figure as PNG bytes; None where matplotlib cannot lay out an axis: one spanning
    values near a float's limit (1e308, in a results file written by hand) overflows as its
    ticks are placed (ValueError, "arange: cannot compute length")."""
    buffer = io.BytesIO()
    try:
        FigureCanvasAgg(fig).print_png(buffer)
    except (ValueError, OverflowError):
        return None
    return buffer.getvalue()


def _log_ticks(ax: Any, xs: list[float]) -> None:
    """A log x axis labelled at a few values that do not overlap: each value of a parameter that
    took few (a choice or a grid: 16, 32, 64), else `_ticks`' round values; no minor labels
    (matplotlib's 2x10^1, 3x10^1, ... overlap within a decade)."""
    distinct = sorted(set(xs))
    ticks = distinct if len(distinct) <= MAX_VALUE_TICKS else ticks_of(xs, LOG)
    ax.set_xticks(ticks, [number_text(v) for v in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())


def number_text(value: float) -> str:
    return f"{value:.3g}"


def _series(steps: Iterable[dict[str, float]], x_key: str, y_key: str) -> list[tuple[float, float]]:
    """(x, y) of the results that report x and the metric key; a null metric (NaN in the run)
    becomes NaN, so a diverged curve shows a gap."""
    return [
        (float(s[x_key]), float("nan") if s[y_key] is None else float(s[y_key]))
        for s in steps
        if s.get(x_key) is not None and y_key in s
    ]


def legend_label(t: TrialOutcome, best: bool) -> str:
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


def new_figure(height_in: float) -> tuple[Figure, Any]:
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


def category(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def ordered(by_label: dict[str, Any]) -> list[str]:
    """Category labels in their values' order where values compare ([8] before [16]), else by
    label."""
    try:
        return sorted(by_label, key=lambda label: by_label[label])
    except TypeError:
        return sorted(by_label)


def short(text: str, limit: int = 18) -> str:
    return tex_safe(text if len(text) <= limit else text[: limit - 1] + "…")


def tex_safe(text: str) -> str:
    """`text` shown as written: matplotlib reads a pair of `$` as math."""
    return text.replace("$", r"\$")


def expected_best(exp: ExperimentResults) -> Figure | None:
    """The expected best score of n trials against n (`rundir.budget`), with a band of one
    standard deviation (cut at the run's best) and the run's own count marked; None under 2
    scored trials."""
    found = budget.curve(exp.summary)
    if found is None or exp.metric is None:
        return None
    ns = [p.n for p in found.points]
    means = [p.mean for p in found.points]
    fig, ax = new_figure(3.4)
    # No search of n trials does better than the run's best: the band stops there.
    best = means[-1]
    low = [p.mean - p.sd for p in found.points]
    high = [p.mean + p.sd for p in found.points]
    if exp.mode == "min":
        low = [max(v, best) for v in low]
    else:
        high = [min(v, best) for v in high]
    ax.fill_between(
        ns,
        low,
        high,
        color="#90caf9",
        alpha=0.5,
        lw=0,
        label="± one standard deviation",
    )
    ax.plot(ns, means, color="#1565c0", lw=2.2, label=f"expected best of n {found.unit}")
    ax.axvline(found.count, color="#222222", ls="--", lw=1)
    ax.annotate(
        f"this run: {found.count} {found.unit}, best {means[-1]:.4g}",
        (found.count, means[-1]),
        xytext=(-6, -14),
        textcoords="offset points",
        ha="right",
        fontsize=9,
    )
    ax.set_xlabel(f"number of {found.unit} (n)")
    ax.set_ylabel(f"expected best {tex_safe(exp.metric)}")
    if found.count > 30:
        ax.set_xscale("log")
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="best", fontsize=8)
    return fig


def ticks_of(xs: list[float], scale: str) -> list[float]:
    """A few round values within the range of `xs`: decades (or 1, 2, 5 times them, when fewer
    than three decades fit) on a log scale; integers when every value is one."""
    lo, hi = min(xs), max(xs)
    if scale == LOG:
        candidates = LogLocator(10).tick_values(lo, hi)
        if sum(lo <= v <= hi for v in candidates) < 3:
            candidates = LogLocator(10, subs=(1.0, 2.0, 5.0)).tick_values(lo, hi)
    else:
        integer = all(x.is_integer() for x in xs)
        candidates = MaxNLocator(5, integer=integer).tick_values(lo, hi)
    slack = 1e-9 * (hi - lo)  # a tick at the end of the range, rounded just outside it
    return [float(v) for v in candidates if lo - slack <= v <= hi + slack]
