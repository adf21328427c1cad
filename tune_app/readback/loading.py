"""A finished run read back from Python, as the commands read it: `read` (its experiments),
`load` (a DataFrame, as `analyze`), `compare` (runs side by side, as `compare`) and
`best_checkpoint` (the best trial's checkpoint, as `best`). `tune_app.api` gives them out.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tune_app.errors import SpecError

if TYPE_CHECKING:
    import pandas as pd

    from tune_app.readback.comparing import Comparison
    from tune_app.rundir.read import ExperimentResults


def read(*folders: str | os.PathLike[str]) -> list[ExperimentResults]:
    """Every experiment in `folders` (experiment folders, storage folders or cloud URIs), read
    from their files alone, as `analyze` reads them."""
    from tune_app.rundir.read import load as load_runs

    return [exp for folder in folders for exp in load_runs(os.fspath(folder))]


def load(*folders: str | os.PathLike[str], top: int | None = None) -> pd.DataFrame:
    """A run's trials as a DataFrame, a row each, ranked best first within each experiment as
    `analyze` ranks them: experiment, run (the run read), metric, trial_id, status,
    `config/<path>` of each searched
    parameter, iterations, score, best, last, time_total_s, failures, stopped_early, cause,
    error, folder. Raises `SpecError` for a folder that holds no tune_app run (saying what it
    holds: a plain Ray Tune experiment, a run stopped before it began), and warns (`PartlyRead`)
    for each file of a run that could not be read in full."""
    import pandas as pd

    from tune_app.readback.analyze import trial_rows

    experiments = read(*folders)
    for exp in experiments:
        for problem in exp.problems:  # analyze prints them as `skipped:` lines
            warnings.warn(f"{exp.where}: {problem}", PartlyRead, stacklevel=2)
    return pd.DataFrame(trial_rows(experiments, top))


class PartlyRead(UserWarning):
    """A file of a run `load` read could not be read in full (a killed run's torn line, a file
    cut short): its rows hold what could be read. A folder that holds no tune_app run at all is
    refused (`SpecError`), as `analyze` refuses it and as Ray Tune's `ExperimentAnalysis`
    refuses a folder without its experiment state."""


def compare(
    *runs: str | os.PathLike[str], html: str | os.PathLike[str] | None = None
) -> Comparison:
    """Several runs of one metric and mode compared, as `tune_app compare` prints them: each
    run's best with an interval, its best-so-far staircase against trials, iterations and wall
    time, and where runs have seeds (or several runs share a spec) the probability that one
    method beats another (`tune_app.readback.compare_runs`). Each of `runs` is read as `analyze`
    reads it (a folder of several runs: its newest that ran trials). With `html`, the page is
    written there too. Raises `SpecError` for fewer than two runs or runs of different metrics
    or modes."""
    from tune_app.readback import compare_page, compare_runs

    found = compare_runs.compare([os.fspath(r) for r in runs])
    if html is not None:
        found = replace(found, page=str(compare_page.write(found, os.fspath(html))))
    return found


@dataclass(frozen=True)
class BestCheckpoint:
    """The best trial's newest checkpoint: its folder, and the trial it came from."""

    experiment: str
    trial_id: str
    path: Path  # the checkpoint's folder: the files the trainable's save_checkpoint wrote
    config: dict[str, Any]  # the trial's config, to rebuild the model the weights fit
    score: float | None  # the trial's score (the experiment's metric, mode and scope)


def best_checkpoint(folder: str | os.PathLike[str], pick: str | None = None) -> BestCheckpoint:
    """The newest checkpoint of the best trial of the run in `folder` (an experiment's folder,
    or a storage folder holding one experiment), the trial `analyze` and `best` call best. For
    a search of several objectives, which has a front and no one best, `pick` names the point
    of its front, as `best --pick` does: an objective (the front's best on it) or a trial id.

    Raises `SpecError` when the folder holds several experiments, no trial has a score, a
    search of several objectives is given no `pick` (or one metric is given one), or the
    trial kept no checkpoint."""
    from tune_app.command import APP
    from tune_app.readback import front
    from tune_app.rundir.read import KEEP_A_CHECKPOINT

    found = read(folder)
    if len(found) != 1:
        names = ", ".join(e.name for e in found)
        raise SpecError(
            f"{os.fspath(folder)} holds {len(found)} experiments ({names}), not one",
            suggestion="pass the folder of one experiment",
        )
    exp = found[0]
    several = front.several(exp.summary)
    if several and pick is None:
        objectives = ", ".join(o.name for o in exp.summary.objectives)
        raise SpecError(
            f"{exp.where}: experiment '{exp.name}' searched several objectives ({objectives}): "
            "its answer is a Pareto front, not one best trial",
            path="pick",
            suggestion="pass pick= an objective (the front's best on it) or a trial id of "
            f"the front (`{APP} analyze {exp.where}` shows it)",
        )
    if not several and pick is not None:
        raise SpecError(
            f"pick names a point of a Pareto front, and experiment '{exp.name}' optimised one "
            f"metric ({exp.metric or 'none'})",
            path="pick",
            suggestion="leave pick out: the best trial is given",
        )
    chosen = front.chosen(exp.summary, pick) if pick is not None else [exp.best_trial]
    best = chosen[0] if chosen else None
    if best is None:
        raise SpecError(
            f"{exp.where}: no trial of experiment '{exp.name}' has a score"
            + (" on every objective within its constraints" if several else ""),
            suggestion=f"see `{APP} analyze {exp.where}` for what each trial reported",
        )
    path = exp.checkpoint(best)
    if path is None:
        raise SpecError(
            f"{exp.where}: the {'chosen' if several else 'best'} trial {best.trial_id} kept no "
            "checkpoint"
            + (" here (a run on cloud storage: copy its trial folder)" if exp.on_cloud else ""),
            suggestion=KEEP_A_CHECKPOINT,
        )
    return BestCheckpoint(exp.name, best.trial_id, path, dict(best.config), best.score)
