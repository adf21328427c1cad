"""The report's figure of a search of several objectives: every trial at its values of the
first two objectives, the Pareto front drawn through its trials, trials that broke a constraint
crossed out. Drawn with matplotlib's Agg canvas, as `plots` draws the others.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from tune_app.readback.front import on_front, several
from tune_app.readback.plots import DPI, FAILED_COLOR, WIDTH_IN, tex_safe
from tune_app.readback.plots.faint import FAINT_COLOR
from tune_app.rundir.read import ExperimentResults

FRONT_COLOR = "#1565c0"


def caption(exp: ExperimentResults) -> str:
    """What the figure shows, in words."""
    names = [o.name for o in exp.summary.objectives]
    more = f" (of {len(names)} objectives, the first two are drawn)" if len(names) > 2 else ""
    return (
        f"{names[0]} against {names[1]}{more}: one dot per trial; the Pareto front (no other "
        "trial is better on both) is joined in blue; ✕: broke a constraint, never on the front."
    )


def pareto_front(exp: ExperimentResults) -> Figure | None:
    """The trials at their first two objectives' values with the front drawn; None without
    several objectives or a trial that reported both."""
    summary = exp.summary
    if not several(summary):
        return None
    x_obj, y_obj = summary.objectives[0], summary.objectives[1]
    drawn = [
        (t, t.objectives.get(x_obj.name), t.objectives.get(y_obj.name)) for t in summary.trials
    ]
    points = [(t, x, y) for t, x, y in drawn if x is not None and y is not None]
    if not points:
        return None
    front = on_front(summary)
    ids = {t.trial_id for t in front}
    fig = Figure(figsize=(WIDTH_IN, 4.2), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    ax.grid(True, color="#e3e6eb", lw=0.8)
    ax.set_axisbelow(True)
    kept = [(x, y) for t, x, y in points if t.trial_id not in ids and not t.broken]
    broken = [(x, y) for t, x, y in points if t.broken]
    if kept:
        ax.scatter(
            [x for x, _ in kept], [y for _, y in kept], s=22, color=FAINT_COLOR, label="dominated"
        )
    if broken:
        ax.scatter(
            [x for x, _ in broken],
            [y for _, y in broken],
            s=34,
            marker="x",
            color=FAILED_COLOR,
            label="broke a constraint",
        )
    line = sorted((t.objectives[x_obj.name], t.objectives[y_obj.name]) for t in front)
    if line:
        xs, ys = zip(*line, strict=True)
        ax.plot(xs, ys, color=FRONT_COLOR, lw=1.6, zorder=3)
        ax.scatter(xs, ys, s=36, color=FRONT_COLOR, zorder=4, label=f"Pareto front ({len(line)})")
        for t in front[:12]:
            ax.annotate(
                t.trial_id,
                (t.objectives[x_obj.name], t.objectives[y_obj.name]),
                xytext=(4, 4),
                textcoords="offset points",
                fontsize=7,
                color=FRONT_COLOR,
            )
    ax.set_xlabel(tex_safe(f"{x_obj.name} ({x_obj.mode})"))
    ax.set_ylabel(tex_safe(f"{y_obj.name} ({y_obj.mode})"))
    ax.tick_params(labelsize=8)
    ax.legend(loc="best", fontsize=8)
    return fig
