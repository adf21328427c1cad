"""The report's trial timeline: one horizontal bar per trial, from the start of its first result
to its last, coloured by how it ended, so a reader sees how the run's slots were used (gaps
where a slot stood idle, a tail where one trial ran alone). Drawn with matplotlib's Agg canvas,
as `plots` draws the others.
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from tune_app.readback.plots import FAILED_COLOR, LOGGED_AT, new_figure
from tune_app.rundir.read import ExperimentResults
from tune_app.rundir.records import ERRORED, UNFINISHED, TrialOutcome
from tune_app.words import counted

ITER_TIME = "time_this_iter_s"  # Tune's: the seconds the result's iteration took
MAX_LABELS = 40  # up to this many trials, each bar is labelled with its trial id
# How a trial ended -> its bar's colour; the keys are the legend's words.
COLORS = {
    "finished": "#2e7d32",
    "stopped early": "#8d99ae",
    "failed": FAILED_COLOR,
    "running or unfinished": "#f9a825",
}


@dataclass(frozen=True)
class Span:
    """One trial's bar: seconds since the run's first start, and how the trial ended."""

    trial_id: str
    start: float
    end: float
    status: str  # a key of COLORS


def spans(exp: ExperimentResults) -> list[Span]:
    """Each trial that logged a result, in the order it started: from its first result's start
    (`logged_at - time_this_iter_s`, that row's `logged_at` without the second) to its last
    `logged_at`; [] when no result has a time. The history keeps every trial's first and last
    rows however it is thinned, so a long trial's bar is whole."""
    times = wall_times(exp)
    if not times:
        return []
    origin = min(start for start, _ in times.values())
    by_id = {t.trial_id: t for t in exp.trials}
    found = [
        Span(trial_id, start - origin, end - origin, _status(by_id.get(trial_id)))
        for trial_id, (start, end) in times.items()
    ]
    return sorted(found, key=lambda s: (s.start, s.trial_id))


def wall_times(exp: ExperimentResults) -> dict[str, tuple[float, float]]:
    """Each trial's (start, last result) in unix time, as `spans` draws them; only trials that
    logged a timed result."""
    times: dict[str, tuple[float, float]] = {}
    for trial_id, rows in exp.history.items():
        logged = [r for r in rows if r.get(LOGGED_AT) is not None]
        if logged:
            first = logged[0]
            start = float(first[LOGGED_AT]) - max(0.0, float(first.get(ITER_TIME) or 0.0))
            times[trial_id] = (start, float(logged[-1][LOGGED_AT]))
    return times


def most_at_once(found: list[Span]) -> int:
    """The most trials whose bars overlap at one moment (a bar's end before another's start)."""
    edges = sorted([(s.start, 1) for s in found] + [(s.end, -1) for s in found])
    running = peak = 0
    for _, step in edges:  # at one time an end (-1) sorts before a start (+1)
        running += step
        peak = max(peak, running)
    return peak


def trial_timeline(exp: ExperimentResults) -> tuple[Figure | None, list[Span]]:
    """The timeline figure and the spans it drew, the first started at the top; (None, []) when
    no trial logged a timed result."""
    found = spans(exp)
    if not found:
        return None, []
    last = max(s.end for s in found)
    unit, scale = ("h", 3600.0) if last > 3 * 3600 else ("min", 60.0) if last > 600 else ("s", 1.0)
    n = len(found)
    height = min(6.0, 1.6 + 0.22 * n)
    fig, ax = new_figure(height)
    ys = list(range(n))
    # One LineCollection, not a patch per bar: a 10,000-trial run draws in well under a second.
    bar_pt = max(0.5, min(10.0, 0.8 * 72 * (height - 1.0) / n))
    lefts = [s.start / scale for s in found]
    rights = [max(s.end / scale, s.start / scale) for s in found]
    ax.hlines(ys, lefts, rights, colors=[COLORS[s.status] for s in found], lw=bar_pt)
    # A trial too short to see as a bar (one quick result) still shows: a dot at its end.
    short = [(r, y, COLORS[s.status]) for s, r, y in zip(found, rights, ys, strict=True)
             if s.end - s.start < 0.01 * last]  # fmt: skip
    if short:
        xs, at, colors = zip(*short, strict=True)
        ax.scatter(xs, at, s=min(12.0, bar_pt**2), c=list(colors), lw=0, zorder=3)
    ax.set_ylim(n - 0.5, -0.5)  # the first started on top
    if n <= MAX_LABELS:
        ax.set_yticks(ys, [s.trial_id for s in found], fontsize=7)
    else:
        ax.yaxis.set_major_locator(NullLocator())
        ax.set_ylabel(counted(n, "trial") + ", in the order they started", fontsize=8)
    ax.set_xlim(left=0)
    ax.set_xlabel(f"wall time since the first trial started ({unit})")
    ax.set_title(f"at most {counted(most_at_once(found), 'trial')} at once", fontsize=9)
    shown = dict.fromkeys(s.status for s in found)
    handles = [Line2D([], [], color=COLORS[k], lw=6, label=k) for k in COLORS if k in shown]
    fig.legend(handles=handles, loc="outside right upper", fontsize=8)
    return fig, found


def caption() -> str:
    """What the figure shows, in words."""
    return (
        "Trial timeline: one bar per trial, from the start of its first result to its last, "
        "coloured by how it ended; gaps and a thinning tail show slots left idle. The time before "
        "a trial's first result (its setup) is not drawn."
    )


def _status(trial: TrialOutcome | None) -> str:
    if trial is None or trial.status == UNFINISHED:
        return "running or unfinished"
    if trial.status == ERRORED or trial.failure is not None:
        return "failed"
    return "stopped early" if trial.stopped_early else "finished"
