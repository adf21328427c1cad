"""What the readers say of a search of several objectives: its Pareto front in `analyze` and
`report` (each trial's value of each objective by name, and whether it is on the front, in the
columns where one metric has its score, best and last), the run's end, and the trials `best`
exports (the front, or the point `--pick` names). Ray-free; the front itself is
`rundir.pareto`'s.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from tune_app.command import APP
from tune_app.rundir import pareto
from tune_app.rundir.records import ERRORED, RunSummary, TrialOutcome
from tune_app.words import counted

PICK_OPTION = "--pick"


def several(summary: RunSummary) -> bool:
    """Whether the run searched several objectives (its answer is a front, not one best)."""
    return bool(summary.objectives)


def title(summary: RunSummary) -> str:
    """What a run without one metric optimised, in a table's title."""
    if not several(summary):
        return "no metric"
    return "objectives " + ", ".join(f"{o.name} ({o.mode})" for o in summary.objectives)


def best_cell(summary: RunSummary) -> str:
    """The results table's "best trial" cell of a run without a best: its front's size, or -."""
    return f"front of {len(summary.pareto())}" if several(summary) else "-"


def on_front(summary: RunSummary) -> list[TrialOutcome]:
    """The trials of the front, best first on the first objective (ties by the others)."""
    ids = set(summary.pareto())
    points = summary.points()
    members = [t for t in summary.trials if t.trial_id in ids]
    signs = [1.0 if o.mode == "min" else -1.0 for o in summary.objectives]
    return sorted(
        members,
        key=lambda t: tuple(s * v for s, v in zip(signs, points[t.trial_id], strict=True)),
    )


def best_first(summary: RunSummary) -> list[TrialOutcome]:
    """The trials in every reader's order: best first by the score with one metric; with
    several objectives the front first, in its order, then the others with a value of every
    objective, then those that broke a constraint or failed, then those missing a value."""
    if not several(summary):
        return summary.ranked()
    front = on_front(summary)
    ids = {t.trial_id for t in front}
    return front + sorted(
        (t for t in summary.trials if t.trial_id not in ids),
        key=lambda t: (
            any(t.objectives.get(o.name) is None for o in summary.objectives),
            t.status == ERRORED or bool(t.broken),
        ),
    )


def shown_names(names: Iterable[str], taken: Collection[str], prefix: str) -> dict[str, str]:
    """User-given names (objectives, searched parameters) -> the field or column each is shown
    under beside a reader's own (`taken`): itself, or `prefix/name` where the reader has a field
    of that name (an objective `score` beside a trial's score), which it would overwrite."""
    return {n: f"{prefix}/{n}" if n in taken else n for n in names}


def trial_fields(t: TrialOutcome, summary: RunSummary, taken: Collection[str]) -> dict[str, Any]:
    """A trial's fields in `analyze --format json`, beside its own (`taken`): its value of each
    objective by name (`objective/<name>` where a field is so named), whether it is on the
    front, the constraints it broke ({} with one metric and no constraints)."""
    fields: dict[str, Any] = {}
    if several(summary):
        shown = shown_names(t.objectives, {*taken, "pareto", "broken"}, "objective")
        fields.update({shown[n]: v for n, v in t.objectives.items()})
        fields["pareto"] = t.trial_id in summary.pareto()
    if summary.constraints:
        fields["broken"] = list(t.broken)
    return fields


def run_fields(summary: RunSummary) -> dict[str, Any]:
    """An experiment's fields in `analyze --format json`: its objectives, constraints and the
    ids of the front ({} with one metric and no constraints)."""
    fields: dict[str, Any] = {}
    if several(summary):
        fields["objectives"] = [{"name": o.name, "mode": o.mode} for o in summary.objectives]
        fields["pareto"] = [t.trial_id for t in on_front(summary)]
    if summary.constraints:
        fields["constraints"] = [c.shown() for c in summary.constraints]
    return fields


FRONT_MARK, BROKEN_MARK = "*", "broken"  # the `pareto` column's cells: on the front, broke one


def columns(summary: RunSummary) -> list[str]:
    """The tables' columns of a trial's values: `score`, `best` and `last` of one metric; for
    several objectives one per objective, then `pareto` (the front's mark)."""
    if not several(summary):
        return ["score", "best", "last"]
    return [*(f"{o.name} ({o.mode})" for o in summary.objectives), "pareto"]


def cells(t: TrialOutcome, summary: RunSummary, cell: Any) -> list[str]:
    """A trial's cells under `columns`, each value shown by `cell`: its score, best and last;
    for several objectives its value of each, then FRONT_MARK when it is on the front
    (BROKEN_MARK when it broke a constraint)."""
    if not several(summary):
        return [cell(t.score), cell(t.best), cell(t.last)]
    mark = FRONT_MARK if t.trial_id in summary.pareto() else BROKEN_MARK if t.broken else ""
    return [*(cell(t.objectives.get(o.name)) for o in summary.objectives), mark]


def lines(summary: RunSummary, where: str) -> list[str]:
    """What the table's foot says of the front: its size and how `best` picks one of it."""
    broken = [t for t in summary.trials if t.broken]
    if not several(summary):
        return [f"broke a constraint (never best): {_ids(broken)}"] if broken else []
    front = on_front(summary)
    found = [
        f"pareto front: {len(front)} of {counted(len(summary.trials), 'trial')} ({_ids(front)}); "
        f"`{APP} best {where}` exports them all, with {PICK_OPTION} "
        f"{summary.objectives[0].name} the one best on {summary.objectives[0].name}"
    ]
    if broken:
        found.append(f"off the front, a constraint broken: {_ids(broken)}")
    return found


def _ids(trials: list[TrialOutcome], most: int = 8) -> str:
    shown = ", ".join(t.trial_id for t in trials[:most])
    return shown + (f" and {len(trials) - most} more" if len(trials) > most else "")


def chosen(summary: RunSummary, pick: str | None) -> list[TrialOutcome]:
    """The trials `best` exports: the whole front, or the one point `pick` names (an objective:
    the front's best on it; or a trial id of the front)."""
    front = on_front(summary)
    if pick is None:
        return front
    points = summary.points()
    every = [t.trial_id for t in summary.trials]
    found = pareto.pick(points, summary.objectives, pick, PICK_OPTION, every)
    return [t for t in front if t.trial_id == found]


def judged(t: TrialOutcome, summary: RunSummary) -> str:
    """How a front trial was chosen, in words: `pareto front: acc = 0.9, mem = 2000`."""
    values = ", ".join(f"{o.name} = {t.objectives.get(o.name):.6g}" for o in summary.objectives)
    return f"pareto front: {values}"
