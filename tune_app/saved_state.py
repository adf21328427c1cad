"""What Tune saved of a run, read back outside Tune's loop: the journal of ended trials folded
into Tune's saved state, the wall time a resumed run already spent, and the summary of a run
that stopped without Tune's loop ending (its loop raised, its Ray head was lost)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tune_app.interrupts import deferred
from tune_app.rundir.layout import write_json
from tune_app.rundir.outcome import summarize
from tune_app.rundir.read import read_summary
from tune_app.rundir.write import mark_finished_trials

if TYPE_CHECKING:
    from tune_app.plan.types import ExperimentPlan
    from tune_app.rundir.records import RunSummary


def saved_summary(ep: ExperimentPlan, wall_time_s: float) -> RunSummary | None:
    """The summary of what Tune saved last, marked interrupted and written (where it can be),
    for a run that stopped without Tune's loop ending: None when that state is unreadable. At
    5,000 trials Tune's loop once raised "dictionary changed size during iteration": the run
    ended with a traceback and no summary, though its saved state resumed."""
    from ray.tune import ExperimentAnalysis, ResultGrid

    try:
        with deferred():
            mark_finished(ep)
            grid = ResultGrid(ExperimentAnalysis(ep.folder.local.as_posix()))
            summary = replace(summarize(ep, grid, wall_time_s), interrupted=True)
            write_json(ep.folder.summary, summary.to_json())
            ep.folder.push()
    except Exception:  # the saved state itself is unreadable: the error says what broke
        return None
    return summary


def earlier_wall_time(ep: ExperimentPlan) -> tuple[float, bool]:
    """The wall time a resumed run already spent (from the summary an interrupted or finished
    run wrote; a killed run left none), and whether that run had finished."""
    summary = read_summary(ep.folder)
    if summary is None:
        return 0.0, False
    return summary.wall_time_s, not summary.interrupted


def mark_finished(ep: ExperimentPlan) -> None:
    """Patch Tune's saved state with the journal of ended trials, wherever the state lives."""
    ep.folder.pull_state()
    if mark_finished_trials(ep.folder.local):
        ep.folder.push_state()
