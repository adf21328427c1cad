"""Reading a run back from its files alone, finished or interrupted, without Ray.

Sources, most trusted first: `summary.json` (written when the run ended), `finished.jsonl` (each
trial as it ended), Tune's saved experiment state (statuses, retries), `results.jsonl` (every
result) and the trial folders' `error.txt`. A file cut short by a killed run is reported in
`problems` and read as far as it goes. `results.jsonl` and `clones.jsonl` are read one record
per (trial, iteration), as their writers keep them, so a file an older version wrote with a
resumed trial's replay logged twice reads the same.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tune_app import failures, objectives, scoring
from tune_app.config_keys import restore_private_keys
from tune_app.failures import Failure
from tune_app.objectives import Limit, Objective
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
    latest_results,
    saved_trials,
    trial_id_of,
)
from tune_app.rundir.location import RunLocation
from tune_app.rundir.noise import DEFAULT_SELECT
from tune_app.rundir.records import (
    ERRORED,
    FINISHED,
    UNFINISHED,
    CloneEvent,
    RunRecord,
    RunSummary,
    TrialOutcome,
    best_value,
    last_value,
    stopped_early,
)
from tune_app.rundir.storage import is_uri
from tune_app.scoring import DEFAULT_SCOPE
from tune_app.seeds import DEFAULT_AGGREGATE
from tune_app.space import value_at

__all__ = [
    "ERRORED",
    "FINISHED",
    "UNFINISHED",
    "ExperimentResults",
    "load",
    "read_experiment",
    "read_summary",
]


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
    history: dict[str, list[dict[str, float]]]  # trial id -> its results, numbers only, flat
    problems: list[str] = field(default_factory=list)
    finished: bool = False  # the run ended on its own (not interrupted, not killed)
    location: str = ""  # where the run is, as the user names it: a folder or a cloud URI
    clones: list[CloneEvent] = field(default_factory=list)  # PBT's and PB2's exploits, in order
    # Searched paths searched on a log scale (run.json's `log_scaled`); None: run.json predates it.
    log_scaled: list[str] | None = None
    reduction_factor: float | None = None  # run.json's (None: not recorded, or no rungs)

    @property
    def name(self) -> str:
        return self.summary.experiment

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


def load(folder: str | Path) -> list[ExperimentResults]:
    """Every experiment in `folder` (an experiment folder, or a storage folder holding several).

    Raises SpecError when `folder` holds no run.
    """
    return [read_experiment(run.local, run.where) for run in RunLocation.open(folder)]


def read_summary(folder: RunLocation) -> RunSummary | None:
    """The summary a run wrote when it ended (Ctrl-C included); None when there is none or it
    cannot be read (a killed run)."""
    problems: list[str] = []
    data = _read_json(folder.summary, problems)
    return RunSummary.from_json(data) if data is not None else None


def read_experiment(folder: Path, location: str | None = None) -> ExperimentResults:  # noqa: C901
    """One experiment folder, read as far as its files allow; `location` names it (a cloud
    URI whose files were pulled into `folder`)."""
    problems: list[str] = []
    info = RunRecord.from_json(_read_json(folder / RUN_FILE, problems) or {})
    written = None
    if (folder / SUMMARY_FILE).exists():  # absent until the run ends
        data = _read_json(folder / SUMMARY_FILE, problems)
        written = RunSummary.from_json(data) if data is not None else None
    rows = latest_results(_read_jsonl(folder / RESULTS_FILE, problems))
    journal = {
        r["trial_id"]: r for r in _read_jsonl(folder / FINISHED_FILE, problems) if "trial_id" in r
    }
    saved = saved_trials(folder)
    ended = {t.trial_id: t for t in written.trials} if written else {}

    metric = info.metric or (written.metric if written else None)
    several = info.objectives or tuple(written.objectives if written else ())
    limits = info.constraints or tuple(written.constraints if written else ())
    mode = info.mode or (written.mode if written else None)
    scope = str(info.scope or (written.scope if written else DEFAULT_SCOPE))
    configs: dict[str, dict[str, Any]] = {}
    history: dict[str, list[dict[str, float]]] = {}
    for row in rows:
        trial_id = str(row.get("trial_id"))
        if isinstance(row.get("config"), dict):
            configs[trial_id] = restore_private_keys(row["config"])
        history.setdefault(trial_id, []).append(_numbers(row))
    for trial_id in [*journal, *saved, *ended]:  # trials that never reported still count
        history.setdefault(trial_id, [])

    flat_configs = {k: flatten(v) for k, v in configs.items()}
    searched = list(info.searched or _varying(flat_configs))
    logs = info.log_scaled
    stop = {str(k): v for k, v in info.stop.items()}
    scheduler = str(info.scheduler or "fifo")
    folders = _trial_folders(folder)
    most = max((_iterations(h) for h in history.values()), default=0)
    trials = []
    for trial_id, steps in history.items():
        values = [s[metric] for s in steps if metric and metric in s]
        iterations = _iterations(steps)
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
        status = journal.get(trial_id, {}).get("status") or _final(
            saved.get(trial_id, (UNFINISHED, 0))[0]
        )
        failure = _failure(folders.get(trial_id), status)
        if failure is None and steps and metric and metric in steps[-1] and values[-1] is None:
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
                time_total_s=float(steps[-1].get("time_total_s", 0.0)) if steps else 0.0,
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
                    steps[-1] if steps else {},
                    stop,
                    trial_id in journal,
                ),
                **objectives.judged(several, limits, _lasts(steps, several, limits)),
            )
        )
    summary = RunSummary(
        experiment=str(info.experiment or (written.experiment if written else "")),
        metric=metric,
        mode=mode,
        wall_time_s=written.wall_time_s if written else 0.0,
        trials=trials,
        missing=written.missing if written else {},
        unusable=written.unusable if written else {},
        reported=written.reported if written else [],
        interrupted=written.interrupted if written else False,
        notes=written.notes if written else [],
        scope=scope,
        seeds=list(info.seeds or (written.seeds if written else [])),
        aggregate=str(info.aggregate or (written.aggregate if written else DEFAULT_AGGREGATE)),
        objectives=list(several),
        constraints=list(limits),
        select=str(info.select or (written.select if written else DEFAULT_SELECT)),
        early_stopping=written.early_stopping if written else [],
    )
    if not summary.experiment:
        summary = replace(summary, experiment=folder.name)
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
            CloneEvent.from_json(r)
            for r in latest_clones(_read_jsonl(folder / CLONES_FILE, problems))
        ],
        log_scaled=[str(k) for k in logs] if logs is not None else None,
    )


def _lasts(
    steps: list[dict[str, float]], several: tuple[Objective, ...], limits: tuple[Limit, ...]
) -> dict[str, float | None]:
    """A trial's last finite value of each key its objectives and constraints read."""
    keys = objectives.limited_keys(several, limits)
    return {k: scoring.score([s.get(k) for s in steps], "last") for k in keys}


def _numbers(row: dict[str, Any]) -> dict[str, float]:
    """A result row's numbers as one level of `/`-joined keys, Tune's way (env_runners/...).

    A key reported as null (NaN or infinity in the run) stays, as None, so divergence shows.
    """
    out: dict[str, Any] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{path}/{k}" if path else str(k))
        elif value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
            out[path] = value

    walk({k: v for k, v in row.items() if k not in ("config", "trial_id")}, "")
    return out


def _read_json(path: Path, problems: list[str]) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        problems.append(f"{path}: missing")
        return None
    except (OSError, ValueError) as err:
        problems.append(f"{path}: unreadable ({_short(err)}); skipped")
        return None
    if not isinstance(data, dict):
        problems.append(f"{path}: not a JSON object; skipped")
        return None
    return data


def _read_jsonl(path: Path, problems: list[str]) -> list[dict[str, Any]]:
    """The whole JSON objects of a JSON-lines file; each line that is not one is a problem."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as err:
        problems.append(f"{path}: unreadable ({_short(err)}); skipped")
        return []
    rows = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            problems.append(f"{path}: line {number} is not whole JSON (a killed run?); skipped")
            continue
        if isinstance(row, dict):
            rows.append(row)
        else:
            problems.append(f"{path}: line {number} is not a JSON object; skipped")
    return rows


def _trial_folders(folder: Path) -> dict[str, Path]:
    """Trial id -> the trial's folder (`<trainable>_<id>_<index>_<params>_<date>`)."""
    found = {}
    for path in folder.iterdir():
        trial_id = trial_id_of(path.name)
        if trial_id and path.is_dir():
            found[trial_id] = path
    return found


def _failure(trial_folder: Path | None, status: str) -> Failure | None:
    """Why a trial that ended in error failed, from its error.txt."""
    if status != ERRORED:
        return None
    error_file = trial_folder / ERROR_FILE if trial_folder else None
    if error_file is not None and error_file.exists():
        try:
            return failures.from_text(error_file.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            pass
    return Failure("unknown error", "no error.txt was left")


def _final(status: str) -> str:
    return status if status in (FINISHED, ERRORED) else UNFINISHED


def _iterations(steps: list[dict[str, Any]]) -> int:
    return int(max((s.get("training_iteration") or 0 for s in steps), default=0))


def _varying(configs: dict[str, dict[str, Any]]) -> list[str]:
    """Config keys whose values differ between trials: the searched ones, when run.json is lost."""
    keys: dict[str, set[str]] = {}
    for config in configs.values():
        for k, v in config.items():
            keys.setdefault(k, set()).add(json.dumps(v, sort_keys=True, default=str))
    return sorted(k for k, values in keys.items() if len(values) > 1)


def _short(err: BaseException) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__
