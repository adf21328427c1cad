"""What the scheduler did, drawn on the learning curves: ASHA's and HyperBand's rungs (the
iterations at which it stopped trials) as dotted vertical lines, and PBT's and PB2's exploits as
a diamond on the trial that copied another's checkpoint, where it copied. Both come from the
run's files (the trials' ends, clones.jsonl), so a report of a finished run and a live page agree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from matplotlib.lines import Line2D

from tune_app.rundir import rungs
from tune_app.rundir.read import ExperimentResults

RUNG_COLOR, EXPLOIT_COLOR = "#7b8794", "#6a1b9a"
RUNG_LABEL = "rung (the scheduler stopped trials here)"
EXPLOIT_LABEL = "exploit (took a better trial's checkpoint)"


def draw(ax: Any, exp: ExperimentResults, x_key: str, metric: str) -> list[Line2D]:
    """Draw `exp`'s rungs and exploits on `ax` (x: the result key `x_key`, y: `metric`); the
    legend's entries for what was drawn."""
    return [*_rungs(ax, exp, x_key), *_exploits(ax, exp, x_key, metric)]


def caption(exp: ExperimentResults) -> str:
    """The figure caption's words for what `draw` draws of `exp` (each with a leading space)."""
    words = ""
    if exp.scheduler in rungs.SCHEDULERS and rungs.rungs_of(exp.trials):
        words += " Dotted lines are the rungs, where the scheduler stopped trials."
    if exp.clones:
        words += " ◆ marks where a trial took a better trial's checkpoint (PBT's exploit)."
    return words


def _rungs(ax: Any, exp: ExperimentResults, x_key: str) -> list[Line2D]:
    # Rungs are iterations: on an axis of env steps they have no one place.
    if exp.scheduler not in rungs.SCHEDULERS or x_key != rungs.ITERATION:
        return []
    at = rungs.rungs_of(exp.trials)
    for rung in at:
        ax.axvline(rung, color=RUNG_COLOR, lw=0.9, ls=":", zorder=0)
    return [Line2D([], [], color=RUNG_COLOR, lw=0.9, ls=":", label=RUNG_LABEL)] if at else []


def _exploits(ax: Any, exp: ExperimentResults, x_key: str, metric: str) -> list[Line2D]:
    points = [
        point
        for clone in exp.clones
        for steps in [exp.history.get(clone.trial_id, [])]
        if (point := at_iteration(steps, clone.iteration, x_key, metric))
    ]
    if not points:
        return []
    xs, ys = zip(*points, strict=True)
    ax.plot(xs, ys, ls="", marker="D", color=EXPLOIT_COLOR, ms=5, mec="white", zorder=5)
    return [Line2D([], [], ls="", marker="D", color=EXPLOIT_COLOR, label=EXPLOIT_LABEL)]


def at_iteration(
    steps: Iterable[dict[str, Any]], iteration: int, x_key: str, metric: str
) -> tuple[float, float] | None:
    """(x, metric) of a trial's last result at or before `iteration` with a finite metric: where
    its curve is when it copies (a long trial's history keeps only some of its results)."""
    found: tuple[int, float, float] | None = None
    for step in steps:
        at, x, y = step.get(rungs.ITERATION), step.get(x_key), step.get(metric)
        if at is None or at > iteration or x is None or y is None or not math.isfinite(y):
            continue
        if found is None or at >= found[0]:
            found = (int(at), float(x), float(y))
    return found[1:] if found else None
