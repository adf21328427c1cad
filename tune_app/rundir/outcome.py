"""What an experiment ended with: each trial's outcome and the run's summary, computed from
Tune's results and written as summary.json. Ray-free: the runner builds it from a ResultGrid,
`expect`, the console and the readers use the same types.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tune_app import failures, scoring
from tune_app.errors import SpecError, did_you_mean
from tune_app.rllib import from_rllib
from tune_app.rllib_metrics import diverged
from tune_app.rundir.layout import flatten, saved_trials, trial_id_of
from tune_app.scoring import finite

if TYPE_CHECKING:
    from tune_app.plan import ExperimentPlan


def flatten_result(result: dict[str, Any]) -> dict[str, Any]:
    """A nested result as one level of `/`-joined keys, as Tune flattens it (env_runners/...)."""
    return flatten(result, "/")


@dataclass
class TrialSummary:
    """One trial as the run ended it: its status, score, error and the values expect checks."""

    trial_id: str
    status: str
    config: dict[str, Any]
    metric: float | None  # its score: the metric's value under the experiment's scope
    iterations: int
    path: str  # the trial's folder, relative to the experiment's
    error: str | None = None  # the first lines of its last error
    time_total_s: float = 0.0
    values: dict[str, float | None] = field(default_factory=dict)  # last values of expect's keys
    cause: str | None = None  # what failed it: an exception type, "killed", "out of memory", ...
    failures: int = 0  # failures Tune saw, retried ones included


@dataclass
class Summary:
    """What one experiment ended with; written as summary.json."""

    experiment: str
    metric: str | None
    mode: str | None
    wall_time_s: float
    counts: dict[str, int]
    best: TrialSummary | None
    trials: list[TrialSummary] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # spec key path -> key never reported
    reported: list[str] = field(default_factory=list)  # every result key any trial reported
    interrupted: bool = False  # trials left unfinished (Ctrl-C): resumable
    failed: dict[str, list[str]] = field(default_factory=dict)  # cause -> ids of failed trials
    notes: list[str] = field(default_factory=list)  # what the run could not judge, and why

    @property
    def errored(self) -> int:
        return self.counts.get("ERROR", 0)


def summarize(ep: ExperimentPlan, grid: Any, wall_time_s: float) -> Summary:
    """Summary of a finished ResultGrid: status counts, every trial's last metric, the best."""
    trials: list[TrialSummary] = []
    seen_keys: set[str] = set()
    # After Ctrl-C Tune marks every trial terminated in memory; its saved state says which were
    # still running or pending, and so does a resume.
    saved = saved_trials(ep.storage_dir)
    interrupted = any(status not in ("TERMINATED", "ERROR") for status, _ in saved.values())
    episodes = 0.0  # episodes any RLlib trial finished
    reporting = 0  # trials that reported at least one result
    for result in grid:
        flat = flatten_result(dict(result.metrics or {}))
        seen_keys.update(flat)
        reporting += bool(flat.get("training_iteration"))
        episodes = max(episodes, finite(flat.get("env_runners/num_episodes_lifetime")) or 0.0)
        value = _score(result, str(ep.metric), ep.experiment.scope, ep.mode) if ep.metric else None
        trial_id = str(
            flat.get("trial_id") or trial_id_of(Path(result.path).name) or Path(result.path).name
        )
        iterations = int(flat.get("training_iteration", 0) or 0)
        status, retried = saved.get(trial_id, ("TERMINATED", 0))
        failure = None
        bad = diverged(flat, ep.metric)
        if result.error is not None:
            failure = failures.from_exception(result.error)
        elif bad is not None:
            failure = failures.non_finite(bad[0], bad[1], iterations)
        trials.append(
            TrialSummary(
                trial_id=trial_id,
                status=(
                    "ERROR" if failure else "UNFINISHED" if status != "TERMINATED" else "TERMINATED"
                ),
                config=_spec_keys(ep, dict(result.config or {})),
                metric=finite(value),
                iterations=iterations,
                path=Path(result.path).name,
                error=failure.message if failure else None,
                time_total_s=float(flat.get("time_total_s", 0.0) or 0.0),
                # expect's keys: the metric as ranked (its score), the others' last values.
                values={
                    k: value if k == ep.metric else _score(result, k, "last", ep.mode)
                    for k in ep.experiment.expect.metrics
                },
                cause=failure.cause if failure else None,
                failures=retried,
            )
        )
    failed: dict[str, list[str]] = {}
    for t in trials:
        if t.cause:
            failed.setdefault(t.cause, []).append(t.trial_id)
    counts: dict[str, int] = {}
    for t in trials:
        counts[t.status] = counts.get(t.status, 0) + 1
    # A trial that crashed before its first result is reported as a failure, not as keys missing.
    missing, notes = _never_reported(ep, seen_keys, episodes) if reporting else ({}, [])
    return Summary(
        experiment=ep.name,
        metric=ep.metric,
        mode=ep.mode,
        wall_time_s=round(wall_time_s, 3),
        counts=counts,
        best=_best(ep, trials),
        trials=trials,
        missing=missing,
        reported=sorted(seen_keys),
        interrupted=interrupted,
        failed=failed,
        notes=notes,
    )


def _score(result: Any, key: str, scope: str, mode: str | None) -> float | None:
    """A trial's score of `key` under `scope`, from every value of it the trial reported
    (Tune's progress.csv); iterations that lack it (an RLlib iteration in which no episode
    finished) are skipped."""
    last = flatten_result(dict(result.metrics or {})).get(key)
    try:
        frame = result.metrics_dataframe
    except Exception:  # noqa: BLE001 - progress.csv unreadable: the last result stands
        frame = None
    values = list(frame[key]) if frame is not None and key in frame else []
    if not values and last is not None:
        values = [last]
    return scoring.score(values, scope, mode)


def _spec_keys(ep: ExperimentPlan, config: dict[str, Any]) -> dict[str, Any]:
    """A trial's config cut to the keys the spec wrote (an RLlib config has hundreds)."""
    config = from_rllib(config)
    keys = set(ep.experiment.config) | {"env"}
    plain = (str, int, float, bool, list, dict, type(None))
    return {
        k: v if isinstance(v, plain) else getattr(v, "__name__", repr(v))
        for k, v in config.items()
        if k in keys
    }


def _best(ep: ExperimentPlan, trials: list[TrialSummary]) -> TrialSummary | None:
    """The trial with the best score (`metric` holds each trial's score under the scope)."""
    if ep.mode is None:
        return None
    best = None
    for t in trials:
        if t.metric is not None and (
            best is None or scoring.better(t.metric, best.metric, ep.mode)
        ):
            best = t
    return best


def _never_reported(
    ep: ExperimentPlan, seen: set[str], episodes: float
) -> tuple[dict[str, str], list[str]]:
    """Stop and metric keys no trial reported, and notes on RLlib keys that had no chance to be:
    episode statistics before any episode finished, evaluation results before any evaluation."""
    wanted = {f"stop.{k}": k for k in ep.experiment.stop}
    if ep.metric:
        wanted["metric"] = ep.metric
    missing: dict[str, str] = {}
    notes: list[str] = []
    for where, key in wanted.items():
        if key in seen:
            continue
        rllib_run = ep.trainable.kind == "rllib"
        if rllib_run and key.startswith("env_runners/") and not episodes:
            notes.append(
                f"{where} '{key}' was never reported: no episode finished in any trial; "
                "let trials run longer (stop.training_iteration or timesteps)"
            )
        elif (
            rllib_run
            and key.startswith("evaluation/")
            and not any(k.startswith("evaluation/") for k in seen)
        ):
            notes.append(
                f"{where} '{key}' was never reported: no evaluation ran (evaluation_interval)"
            )
        else:
            missing[where] = key
    return missing, notes


def missing_keys_error(ep: ExperimentPlan, summary: Summary) -> SpecError:
    """The message for a stop or metric key the trainable never reported."""
    where, key = next(iter(summary.missing.items()))
    reported = [
        k for k in summary.reported if k not in ("trial_id", "config") and "config/" not in k
    ]
    return SpecError(
        f"'{key}' is never reported by trainable '{ep.experiment.run}', so it can never stop or "
        "rank a trial; the search was ended early",
        path=f"{ep.experiment.key_path}.{where}",
        allowed=reported,
        suggestion=did_you_mean(key, reported),
    )


def summary_dict(summary: Summary) -> dict[str, Any]:
    """summary.json's content."""
    return asdict(summary)
