"""Reading a run back from its files alone, finished or interrupted, without Ray.

Sources, most trusted first: `summary.json` (written when the run ended), `finished.jsonl` (each
trial as it ended), Tune's saved experiment state (statuses, retries), `results.jsonl` (every
result) and the trial folders' `error.txt`. A file cut short by a killed run is reported in
`problems` and read as far as it goes. `results.jsonl` and `clones.jsonl` are read one record
per (trial, iteration), as their writers keep them, so a file an older version wrote with a
resumed trial's replay logged twice reads the same. `results.jsonl` is read once, row by row,
keeping per trial what the readers use (`stream`): a 500 MB file reads in a few hundred MB.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from tune_app import failures, objectives, scoring
from tune_app.config_keys import restore_private_keys
from tune_app.errors import error_line
from tune_app.failures import Failure
from tune_app.rundir.files import read_json, read_text
from tune_app.rundir.layout import (
    CLONES_FILE,
    ERROR_FILE,
    FINISHED_FILE,
    RESULTS_FILE,
    RUN_FILE,
    STDERR_FILE,
    STDOUT_FILE,
    SUMMARY_FILE,
    checkpoints,
    flatten,
    latest_clones,
    saved_trials,
    trial_id_of,
)
from tune_app.rundir.location import RunLocation
from tune_app.rundir.records import (
    ERRORED,
    FINISHED,
    UNFINISHED,
    CloneEvent,
    RunRecord,
    RunSummary,
    TrialEnd,
    TrialOutcome,
    WarmStartRecord,
    best_value,
    last_value,
    record,
    stopped_early,
)
from tune_app.rundir.rungs import curves_from
from tune_app.rundir.storage import is_uri
from tune_app.rundir.stream import ResultsFollower, TrialRows, read_jsonl, read_results
from tune_app.space import value_at
from tune_app.words import counted

_R = TypeVar("_R")
# How a trial keeps a checkpoint, for whatever says one kept none (`best`, `best_checkpoint`).
KEEP_A_CHECKPOINT = (
    "a tune.Trainable class saves one at its end (checkpoint_config: {checkpoint_at_end: true}); "
    "a function trainable reports one with tune.report(metrics, checkpoint=...)"
)


@dataclass(frozen=True)
class TrialFiles:
    """A trial's error file and its output files, where they are (None: not there)."""

    error: str | None = None
    stdout: str | None = None
    stderr: str | None = None


@dataclass
class ExperimentResults:
    """An experiment read back: its `RunSummary` (as summary.json holds it, completed from the
    other files, or rebuilt from them when the run was killed), every trial's history, and what
    could not be read."""

    summary: RunSummary
    folder: Path
    searched: list[str]
    scheduler: str
    stop: dict[str, float]
    # Trial id -> its results, numbers only, flat: every one, or for a long trial at most
    # `stream.CURVE_POINTS` of them with its first, last and best (what the plots draw).
    history: dict[str, list[dict[str, float]]]
    problems: list[str] = field(default_factory=list)
    finished: bool = False  # the run ended on its own (not interrupted, not killed)
    location: str = ""  # where the run is, as the user names it: a folder or a cloud URI
    clones: list[CloneEvent] = field(default_factory=list)  # PBT's and PB2's exploits, in order
    # Searched paths searched on a log scale (run.json's `log_scaled`); None: run.json predates it.
    log_scaled: list[str] | None = None
    reduction_factor: float | None = None  # run.json's (None: not recorded, or no rungs)
    # The earlier runs a warm start began from (run.json's): their trials are none of these.
    warm_start: list[WarmStartRecord] = field(default_factory=list)
    # run.json's: the trials the run was to make (0: not recorded), and how long they run where
    # the scheduler stops some early (`RunRecord.trial_ends`); what the live page's ETA counts.
    planned_trials: int = 0
    trial_ends: tuple[tuple[float, float], ...] | None = None
    # Trial id -> its metric at every iteration, as read from the files (None: from `history`).
    curves: Mapping[str, Mapping[int, float | None]] | None = None

    def __repr__(self) -> str:
        """Short, as a notebook shows it: the summary, and where the run is."""
        return f"ExperimentResults({self.summary!r}, location={self.location!r})"

    @property
    def name(self) -> str:
        return self.summary.experiment

    def metric_curves(self) -> Mapping[str, Mapping[int, float | None]]:
        """Each trial's metric by iteration, every iteration (what the rungs are judged by)."""
        return self.curves if self.curves is not None else curves_from(self.history, self.metric)

    def trial_files(self, trial: TrialOutcome) -> TrialFiles:
        """Where a trial's error file and output are, as a user names them (what exists)."""
        if not trial.folder:
            return TrialFiles()
        local = self.folder / trial.folder
        here = self.run

        def where(name: str) -> str | None:
            # A cloud run's trial folders are not copied to read: its error file is named as
            # Tune writes it, its output (written only with log_to_file) is not.
            cloud = here.uri is not None and name == ERROR_FILE
            kept = cloud or (here.uri is None and (local / name).exists())
            return here.trial_file(trial.folder or "", name) if kept else None

        return TrialFiles(
            error=where(ERROR_FILE) if trial.failure else None,
            stdout=where(STDOUT_FILE),
            stderr=where(STDERR_FILE),
        )

    def checkpoint(self, trial: TrialOutcome) -> Path | None:
        """The newest checkpoint Tune kept of `trial` (a folder), or None: it took none, or the
        run is on cloud storage, whose trial folders are not copied to read."""
        if not trial.folder or self.on_cloud:
            return None
        kept = checkpoints(self.folder / trial.folder)
        return kept[-1] if kept else None

    @property
    def state(self) -> str:
        """How the run ended, in words: finished; ended early, refused once its trials showed a
        stop or metric key never reported (it ranks nothing); or not finished."""
        if self.summary.missing:
            return f"ended early: '{next(iter(self.summary.missing.values()))}' was never reported"
        if self.summary.unusable:
            return f"ended early: {next(iter(self.summary.unusable))} was never a number"
        return "finished" if self.finished else "not finished (interrupted or still running)"

    @property
    def run(self) -> RunLocation:
        """The run folder this was read from (for a cloud run, its copy read here and its URI)."""
        return RunLocation(self.folder, self.location if is_uri(self.location) else None)

    @property
    def on_cloud(self) -> bool:
        """The run is on cloud storage: only the app's files were copied here to read."""
        return is_uri(self.location)

    @property
    def metric(self) -> str | None:
        return self.summary.metric

    @property
    def mode(self) -> str | None:
        return self.summary.mode

    @property
    def scope(self) -> str:
        return self.summary.scope

    @property
    def trials(self) -> list[TrialOutcome]:
        return self.summary.trials

    @property
    def where(self) -> str:
        return self.location or str(self.folder)

    def ranked(self) -> list[TrialOutcome]:
        """Trials best first by their score (the run's scope); trials without one last."""
        return self.summary.ranked()

    @property
    def best_trial(self) -> TrialOutcome | None:
        return self.summary.best

    def failed_by_cause(self) -> dict[str, list[TrialOutcome]]:
        """Failed trials grouped by cause, the largest group first."""
        return self.summary.by_cause()

    @property
    def counts(self) -> dict[str, int]:
        return self.summary.counts


Followers = dict[Path, ResultsFollower]  # an experiment folder -> its results log followed


def load(folder: str | Path, followers: Followers | None = None) -> list[ExperimentResults]:
    """Every experiment in `folder` (an experiment folder, or a storage folder holding several);
    with `followers` (kept by the caller between reads of a live run), each results log read on
    from where the last read stopped.

    Raises SpecError when `folder` holds no run.
    """
    return [read_experiment(run.local, run.where, followers) for run in RunLocation.open(folder)]


def read_summary(folder: RunLocation) -> RunSummary | None:
    """The summary a run wrote when it ended (Ctrl-C included); None when there is none or it
    cannot be read (a killed run)."""
    problems: list[str] = []
    data = _read_json(folder.summary, problems)
    return RunSummary.from_json(data) if data is not None else None


def read_experiment(  # noqa: C901
    folder: Path, location: str | None = None, followers: Followers | None = None
) -> ExperimentResults:
    """One experiment folder, read as far as its files allow; `location` names it (a cloud
    URI whose files were pulled into `folder`); `followers`: as `load`'s."""
    problems: list[str] = []
    info = RunRecord.from_json(_read_json(folder / RUN_FILE, problems) or {})
    written = None
    if (folder / SUMMARY_FILE).exists():  # absent until the run ends
        data = _read_json(folder / SUMMARY_FILE, problems)
        written = RunSummary.from_json(data) if data is not None else None
    as_written = written or RunSummary.from_json({})  # none (a killed run): each field its default
    metric = info.metric or as_written.metric
    several = info.objectives or tuple(as_written.objectives)
    limits = info.constraints or tuple(as_written.constraints)
    mode = info.mode or as_written.mode
    scope = str(info.scope or as_written.scope)
    keys = tuple(objectives.limited_keys(several, limits))
    if followers is None:
        results = read_results(read_jsonl(folder / RESULTS_FILE, problems), metric, mode, keys)
    else:
        follower = followers.get(folder)
        if follower is None or follower.reads != (metric, mode, keys):
            follower = followers[folder] = ResultsFollower(
                folder / RESULTS_FILE, metric, mode, keys
            )
        results = follower.read(problems)
    configs = {
        t: restore_private_keys(r.config) for t, r in results.items() if isinstance(r.config, dict)
    }
    journal = {e.trial_id: e for e in _records(folder / FINISHED_FILE, TrialEnd, problems)}
    saved = saved_trials(folder)
    for trial_id, kept in saved.items():  # pending, or failed before its first result
        configs.setdefault(trial_id, restore_private_keys(kept.config))
    ended = {t.trial_id: t for t in as_written.trials}
    for trial_id in [*journal, *saved, *ended]:  # trials that never reported still count
        results.setdefault(trial_id, TrialRows())
    history = {trial_id: r.rows for trial_id, r in results.items()}

    flat_configs = {k: flatten(v) for k, v in configs.items()}
    searched = list(info.searched or _varying(flat_configs))
    logs = info.log_scaled
    stop = {str(k): v for k, v in info.stop.items()}
    scheduler = str(info.scheduler or "fifo")
    folders = _trial_folders(folder)
    most = max((r.iterations for r in results.values()), default=0)
    trials = []
    for trial_id, got in results.items():
        values, iterations, last_row = got.values, got.iterations, got.last
        if trial_id in ended and ended[trial_id].status in (FINISHED, ERRORED):
            # As the run wrote it (an unfinished one may have run on in a resume since); fields
            # an older summary.json lacks come from the history.
            trial = ended[trial_id]
            if not trial.params:
                trial.params = {k: value_at(configs.get(trial_id, {}), k) for k in searched}
            if trial.last is None:
                trial.last = last_value(values)
            if trial.best is None:
                trial.best = best_value(values, mode)
            trials.append(trial)
            continue
        status = (
            journal[trial_id].status
            if trial_id in journal
            else _final(saved.get(trial_id, (UNFINISHED, 0))[0])
        )
        failure = _failure(folders.get(trial_id), status)
        if failure is None and metric and last_row.get(metric, 0) is None:
            failure = failures.non_finite(metric, "nan", iterations)
        if failure is not None:
            status = ERRORED
        trials.append(
            TrialOutcome(
                trial_id=trial_id,
                status=status,
                config=configs.get(trial_id, {}),
                score=scoring.score(values, scope, mode),
                iterations=iterations,
                folder=folders[trial_id].name if trial_id in folders else None,
                error=failure.message if failure else None,
                time_total_s=float(last_row.get("time_total_s", 0.0)),
                cause=failure.cause if failure else None,
                frame=failure.frame if failure else None,
                failures=saved.get(trial_id, ("", 0))[1],
                params={k: value_at(configs.get(trial_id, {}), k) for k in searched},
                last=last_value(values),
                best=best_value(values, mode),
                stopped_early=stopped_early(
                    scheduler,
                    status,
                    iterations,
                    most,
                    last_row,
                    stop,
                    trial_id in journal,
                ),
                **objectives.judged(several, limits, got.lasts),
            )
        )
    # run.json's first, then summary.json's; its wall time, missing keys, notes, ... as written
    summary = replace(
        as_written,
        experiment=str(info.experiment or as_written.experiment or folder.name),
        metric=metric,
        mode=mode,
        trials=trials,
        scope=scope,
        seeds=list(info.seeds or as_written.seeds),
        aggregate=str(info.aggregate or as_written.aggregate),
        objectives=list(several),
        constraints=list(limits),
        select=str(info.select or as_written.select),
    )
    return ExperimentResults(
        summary=summary,
        folder=folder,
        searched=searched,
        scheduler=scheduler,
        reduction_factor=info.reduction_factor,
        stop=stop,
        history=history,
        problems=problems,
        finished=written is not None and not written.interrupted,
        location=location or str(folder),
        clones=[
            CloneEvent(**e)
            for e in latest_clones(
                [asdict(e) for e in _records(folder / CLONES_FILE, CloneEvent, problems)]
            )
        ],
        log_scaled=[str(k) for k in logs] if logs is not None else None,
        warm_start=list(info.warm_start),
        planned_trials=info.trials,
        trial_ends=info.trial_ends,
        curves={trial_id: r.curve for trial_id, r in results.items()},
    )


def _records(path: Path, kind: type[_R], problems: list[str]) -> list[_R]:
    """The records of a JSON-lines file, each line read as a `kind` (`records.record`); the
    lines that are none (a field missing or of the wrong type) skipped, as one problem."""
    found = [record(kind, row) for row in read_jsonl(path, problems)]
    kept = [made for made in found if made is not None]
    if len(kept) < len(found):
        skipped = counted(len(found) - len(kept), "line")
        problems.append(f"{path}: {skipped} with a field missing or of the wrong type; skipped")
    return kept


def _read_json(path: Path, problems: list[str]) -> dict[str, Any] | None:
    try:
        data = read_json(path)
    except FileNotFoundError:
        problems.append(f"{path}: missing")
        return None
    except (OSError, ValueError) as err:
        problems.append(f"{path}: unreadable ({error_line(err)}); skipped")
        return None
    if not isinstance(data, dict):
        problems.append(f"{path}: not a JSON object; skipped")
        return None
    return data


def _trial_folders(folder: Path) -> dict[str, Path]:
    """Trial id -> the trial's folder (`<trainable>_<id>_<index>_<params>_<date>`)."""
    found = {}
    for path in folder.iterdir():
        trial_id = trial_id_of(path.name)
        if trial_id and path.is_dir() and not path.is_symlink():  # a link: read nowhere else
            found[trial_id] = path
    return found


def _failure(trial_folder: Path | None, status: str) -> Failure | None:
    """Why a trial that ended in error failed, from its error.txt."""
    if status != ERRORED:
        return None
    if trial_folder is not None:
        with contextlib.suppress(OSError):  # none was left, or it is no regular file
            return failures.from_text(read_text(trial_folder / ERROR_FILE, errors="replace"))
    return Failure("unknown error", "no error.txt was left")


def _final(status: str) -> str:
    return status if status in (FINISHED, ERRORED) else UNFINISHED


def _varying(configs: dict[str, dict[str, Any]]) -> list[str]:
    """Config keys whose values differ between trials: the searched ones, when run.json is lost."""
    keys: dict[str, set[str]] = {}
    for config in configs.values():
        for k, v in config.items():
            keys.setdefault(k, set()).add(json.dumps(v, sort_keys=True, default=str))
    return sorted(k for k, values in keys.items() if len(values) > 1)
