"""Reading a run back from its files alone, finished or interrupted, without Ray.

Sources, most trusted first: `summary.json` (written when the run ended), `finished.jsonl` (each
trial as it ended), Tune's saved experiment state (statuses, retries), `results.jsonl` (every
result) and the trial folders' `error.txt`. A file cut short by a killed run is reported in
`problems` and read as far as it goes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tune_app import failures, scoring
from tune_app.failures import Failure
from tune_app.rllib import from_rllib
from tune_app.rundir.layout import (
    FINISHED_FILE,
    RESULTS_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    flatten,
    saved_trials,
    trial_id_of,
)
from tune_app.rundir.storage import open_runs
from tune_app.scoring import DEFAULT_SCOPE, finite

FINISHED = "TERMINATED"
ERRORED = "ERROR"
UNFINISHED = "UNFINISHED"  # running or pending when the run stopped; a resume continues it


@dataclass(frozen=True)
class TrialRecord:
    """One trial as its files tell it."""

    trial_id: str
    status: str  # TERMINATED, ERROR or UNFINISHED
    params: dict[str, Any]  # searched key path -> value
    iterations: int
    last: float | None  # the metric's last value
    best: float | None  # the metric's best value over the trial's iterations
    time_total_s: float
    failure: Failure | None = None
    failures: int = 0  # failures Tune saw, retried ones included
    stopped_early: bool = False  # ended by the scheduler before its stop criteria or peers
    folder: str | None = None  # the trial's folder name, when there is one
    score: float | None = None  # what ranks it: the metric under the run's scope (scoring)


@dataclass
class ExperimentResults:
    """An experiment's trials, their histories and what could not be read."""

    name: str
    folder: Path
    metric: str | None
    mode: str | None
    searched: list[str]
    scheduler: str
    stop: dict[str, float]
    trials: list[TrialRecord]
    history: dict[str, list[dict[str, float]]]  # trial id -> its results, numbers only, flat
    problems: list[str] = field(default_factory=list)
    finished: bool = False  # the run ended on its own (not interrupted, not killed)
    location: str = ""  # where the run is, as the user names it: a folder or a cloud URI
    scope: str = DEFAULT_SCOPE  # which value of the metric ranks a trial (run.json)

    @property
    def where(self) -> str:
        return self.location or str(self.folder)

    def ranked(self) -> list[TrialRecord]:
        """Trials best first by their score (the run's scope); trials without one last."""
        sign = -1.0 if self.mode == "max" else 1.0
        return sorted(
            self.trials,
            key=lambda t: (t.score is None, sign * t.score if t.score is not None else 0.0),
        )

    @property
    def best_trial(self) -> TrialRecord | None:
        ranked = self.ranked()
        return ranked[0] if ranked and ranked[0].score is not None else None

    def failed_by_cause(self) -> dict[str, list[TrialRecord]]:
        """Failed trials grouped by cause, the largest group first."""
        groups: dict[str, list[TrialRecord]] = {}
        for t in self.trials:
            if t.failure is not None:
                groups.setdefault(t.failure.cause, []).append(t)
        return dict(sorted(groups.items(), key=lambda item: -len(item[1])))

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for t in self.trials:
            found[t.status] = found.get(t.status, 0) + 1
        return found


def load(folder: str | Path) -> list[ExperimentResults]:
    """Every experiment in `folder` (an experiment folder, or a storage folder holding several).

    Raises SpecError when `folder` holds no run.
    """
    return [read_experiment(run.local, run.location) for run in open_runs(folder)]


def read_experiment(folder: Path, location: str | None = None) -> ExperimentResults:
    """One experiment folder, read as far as its files allow; `location` names it (a cloud
    URI whose files were pulled into `folder`)."""
    problems: list[str] = []
    info = _read_json(folder / RUN_FILE, problems) or {}
    summary = None
    if (folder / SUMMARY_FILE).exists():  # absent until the run ends
        summary = _read_json(folder / SUMMARY_FILE, problems)
    rows = _read_jsonl(folder / RESULTS_FILE, problems)
    journal = {
        r["trial_id"]: r for r in _read_jsonl(folder / FINISHED_FILE, problems) if "trial_id" in r
    }
    saved = saved_trials(folder)
    ended = {t["trial_id"]: t for t in (summary or {}).get("trials", []) if "trial_id" in t}

    metric = info.get("metric") or (summary or {}).get("metric")
    mode = info.get("mode") or (summary or {}).get("mode")
    scope = str(info.get("scope") or DEFAULT_SCOPE)
    configs: dict[str, dict[str, Any]] = {}
    history: dict[str, list[dict[str, float]]] = {}
    for row in rows:
        trial_id = str(row.get("trial_id"))
        if isinstance(row.get("config"), dict):
            configs[trial_id] = flatten(from_rllib(row["config"]))
        history.setdefault(trial_id, []).append(_numbers(row))
    for trial_id in [*journal, *saved, *ended]:  # trials that never reported still count
        history.setdefault(trial_id, [])

    searched = list(info.get("searched") or _varying(configs))
    stop = {str(k): v for k, v in (info.get("stop") or {}).items()}
    scheduler = str(info.get("scheduler") or "fifo")
    folders = _trial_folders(folder)
    most = max((_iterations(h) for h in history.values()), default=0)
    trials = []
    for trial_id, steps in history.items():
        done = ended.get(trial_id, {})
        status = (
            done.get("status")
            or journal.get(trial_id, {}).get("status")
            or _final(saved.get(trial_id, (UNFINISHED, 0))[0])
        )
        values = [s[metric] for s in steps if metric and metric in s]
        # The last value reported: an RLlib iteration without a finished episode has none.
        last_value = values[-1] if values else None
        failure = _failure(done, folders.get(trial_id), status)
        if failure is None and steps and metric and metric in steps[-1] and last_value is None:
            failure = failures.non_finite(metric, "nan", _iterations(steps))
        if failure is not None:
            status = ERRORED
        iterations = _iterations(steps)
        trials.append(
            TrialRecord(
                trial_id=trial_id,
                status=status,
                params={k: configs.get(trial_id, {}).get(k) for k in searched},
                iterations=iterations,
                last=finite(last_value),
                best=_best([v for v in values if finite(v) is not None], mode),
                score=scoring.score(values, scope, mode),
                time_total_s=float(steps[-1].get("time_total_s", 0.0)) if steps else 0.0,
                failure=failure,
                failures=saved.get(trial_id, ("", int(done.get("failures", 0) or 0)))[1],
                stopped_early=(
                    scheduler != "fifo"
                    and status == FINISHED
                    and iterations < most
                    and not _reached(steps[-1] if steps else {}, stop)
                ),
                folder=folders[trial_id].name if trial_id in folders else None,
            )
        )
    interrupted = bool(summary and summary.get("interrupted"))
    return ExperimentResults(
        name=str(info.get("experiment") or folder.name),
        folder=folder,
        metric=metric,
        mode=mode,
        searched=searched,
        scheduler=scheduler,
        stop=stop,
        trials=trials,
        history=history,
        problems=problems,
        finished=summary is not None and not interrupted,
        location=location or str(folder),
        scope=scope,
    )


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


def _failure(done: dict[str, Any], trial_folder: Path | None, status: str) -> Failure | None:
    if done.get("cause"):
        return Failure(str(done["cause"]), str(done.get("error") or ""))
    if status != ERRORED:
        return None
    error_file = trial_folder / "error.txt" if trial_folder else None
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


def _best(values: list[float], mode: str | None) -> float | None:
    if not values:
        return None
    return max(values) if mode == "max" else min(values)


def _reached(last: dict[str, Any], stop: dict[str, float]) -> bool:
    return any(isinstance(last.get(k), int | float) and last[k] >= v for k, v in stop.items())


def _varying(configs: dict[str, dict[str, Any]]) -> list[str]:
    """Config keys whose values differ between trials: the searched ones, when run.json is lost."""
    keys: dict[str, set[str]] = {}
    for config in configs.values():
        for k, v in config.items():
            keys.setdefault(k, set()).add(json.dumps(v, sort_keys=True, default=str))
    return sorted(k for k, values in keys.items() if len(values) > 1)


def _short(err: BaseException) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__
