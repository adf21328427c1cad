"""What an experiment ended with, computed from Tune's results: the `RunSummary` the runner
writes as summary.json (its types live in `records`, which the readers share). Ray-free: it
takes a ResultGrid but imports nothing from Ray.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tune_app import failures, objectives, scoring
from tune_app.config_keys import restore_private_keys
from tune_app.divergence import diverged
from tune_app.errors import SpecError, clip, did_you_mean
from tune_app.rundir import rungs
from tune_app.rundir.files import read_rows
from tune_app.rundir.layout import (
    flatten,
    journaled_ends,
    latest_results,
    saved_trials,
    trial_id_of,
)
from tune_app.rundir.records import (
    ERRORED,
    FINISHED,
    UNFINISHED,
    RunSummary,
    TrialOutcome,
    best_value,
    stopped_early,
)
from tune_app.scoring import finite, number
from tune_app.space import value_at
from tune_app.words import counted

if TYPE_CHECKING:
    from tune_app.plan.types import ExperimentPlan


def flatten_result(result: dict[str, Any]) -> dict[str, Any]:
    """A nested result as one level of `/`-joined keys, as Tune flattens it (env_runners/...)."""
    return flatten(result, "/")


def summarize(ep: ExperimentPlan, grid: Any, wall_time_s: float) -> RunSummary:
    """The summary of a finished ResultGrid: every trial's outcome and score, what was never
    reported."""
    trials: list[TrialOutcome] = []
    seen_keys: set[str] = set()
    # After Ctrl-C Tune marks every trial terminated in memory; its saved state says which were
    # still running or pending, and so does a resume.
    saved = saved_trials(ep.folder.local)
    interrupted = any(t.status not in (FINISHED, ERRORED) for t in saved.values())
    episodes = 0.0  # episodes any RLlib trial finished
    reporting = 0  # trials that reported at least one result
    lasts: dict[str, dict[str, Any]] = {}  # trial id -> its last result, flat
    logged, held, curves = _logged(ep)
    for result in grid:
        flat = flatten_result(dict(result.metrics or {}))
        seen_keys.update(flat)
        # Keys of earlier results too: the last may lack one (an RLlib iteration without a
        # finished episode, a trainable that reports a key every other step).
        seen_keys.update(_columns(result))
        reporting += bool(flat.get("training_iteration"))
        episodes = max(episodes, finite(flat.get("env_runners/num_episodes_lifetime")) or 0.0)
        trial_id = str(
            flat.get("trial_id") or trial_id_of(Path(result.path).name) or Path(result.path).name
        )
        # The app's own log of every result first: a trial that finished after Tune's last save
        # before a kill comes back from Tune, on resume, with its history as saved, mid-run.
        own, own_iterations = logged.get(trial_id, ([], 0))
        history = [v for v in own if v is not None] or (
            _history(result, str(ep.metric)) if ep.metric else []
        )
        value = scoring.score(history, ep.experiment.scope, ep.mode) if ep.metric else None
        lasts[trial_id] = flat
        iterations = max(int(flat.get("training_iteration", 0) or 0), own_iterations)
        status, retried, kept = saved.get(trial_id, (FINISHED, 0, {}))
        failure = None
        bad = diverged(flat, ep.ranked_by)
        if result.error is not None:
            failure = failures.from_exception(result.error)
        elif bad is not None:
            failure = failures.non_finite(bad[0], bad[1], iterations)
        # A trial with no result (pending, or failed before its first) has its config in
        # Tune's saved state; a restored run's Result holds it only from the last result.
        config = restore_private_keys(dict(result.config or kept))
        trials.append(
            TrialOutcome(
                trial_id=trial_id,
                status=ERRORED if failure else UNFINISHED if status != FINISHED else FINISHED,
                config=_spec_keys(ep, config),
                score=finite(value),
                iterations=iterations,
                folder=Path(result.path).name,
                error=failure.message if failure else None,
                time_total_s=float(flat.get("time_total_s", 0.0) or 0.0),
                # expect's keys: the metric as ranked (its score), the others' last values.
                values={
                    k: value
                    if k == ep.metric
                    else scoring.score(_history(result, k), "last", ep.mode)
                    for k in ep.experiment.expect.metrics
                },
                cause=failure.cause if failure else None,
                frame=failure.frame if failure else None,
                failures=retried,
                params={k: value_at(config, k) for k in ep.searched},
                # The last result's value (None when it was not finite); an RLlib result
                # without one: the last reported.
                last=(
                    finite(own[-1])
                    if own
                    else finite(flat[ep.metric])
                    if ep.metric in flat
                    else scoring.score(history, "last", ep.mode)
                )
                if ep.metric
                else None,
                best=best_value(history, ep.mode),
                **_objectives(ep, result),
            )
        )
    most = max((t.iterations for t in trials), default=0)
    ended = journaled_ends(ep.folder.local)
    for t in trials:
        t.stopped_early = stopped_early(
            ep.experiment.scheduler.type,
            t.status,
            t.iterations,
            most,
            lasts[t.trial_id],
            dict(ep.experiment.stop),
            t.trial_id in ended,
        )
    checks = rungs.checks(trials, curves, ep.experiment.scheduler.type)
    # A trial that crashed before its first result is reported as a failure, not as keys missing.
    missing, notes = _never_reported(ep, seen_keys, episodes) if reporting else ({}, [])
    notes += _budget_spent(ep.experiment.time_budget_s, wall_time_s, trials)
    notes += [w for w in [rungs.warning(checks, ep.experiment.scheduler.type)] if w]
    unusable, odd = _not_numbers(ep, held, missing) if reporting else ({}, [])
    return RunSummary(
        experiment=ep.name,
        metric=ep.metric,
        mode=ep.mode,
        wall_time_s=round(wall_time_s, 3),
        trials=trials,
        missing=missing,
        unusable=unusable,
        reported=sorted(seen_keys),
        interrupted=interrupted,
        notes=[*notes, *odd],
        scope=ep.experiment.scope,
        seeds=list(ep.experiment.seeds),
        aggregate=ep.experiment.aggregate,
        objectives=list(ep.experiment.objectives),
        constraints=list(ep.experiment.constraints),
        select=ep.experiment.select,
        early_stopping=checks,
    )


def _objectives(ep: ExperimentPlan, result: Any) -> dict[str, Any]:
    """A trial's last value of each objective (several) and the constraints it broke: what
    places it on the front or off it."""
    exp = ep.experiment
    keys = objectives.limited_keys(exp.objectives, exp.constraints)
    last = {k: scoring.score(_history(result, k), "last") for k in keys}
    return objectives.judged(exp.objectives, exp.constraints, last)


def _budget_spent(
    budget_s: float | None, wall_time_s: float, trials: list[TrialOutcome]
) -> list[str]:
    """A note when the experiment's time budget ran out: Tune then stops every running trial
    where it is and starts no more, so the results are those of a shorter search."""
    if budget_s is None or wall_time_s < budget_s:
        return []
    never = sum(t.status == FINISHED and not t.iterations and not t.failures for t in trials)
    return [
        f"time_budget_s ({budget_s:g} s) ran out: the search was ended, its running trials "
        "stopped where they were" + (f", {counted(never, 'trial')} never started" if never else "")
    ]


@dataclass
class _Held:
    """What one stop, metric or time_attr key held across every result of a run."""

    numbers: int = 0  # results holding a number (null: a NaN or infinity, as logged)
    others: int = 0  # results holding something else: text, a list, a bool
    first: tuple[str, Any] | None = None  # (trial id, value) of the first of those


def _logged(
    ep: ExperimentPlan,
) -> tuple[dict[str, tuple[list[float | None], int]], dict[str, _Held], rungs.Curves]:
    """From results.jsonl: each trial's numbers of the metric, in order (None where it was not
    finite; results without one left out, as are those holding text), and its last iteration
    there; what each wanted key held across all results; and each trial's metric by
    iteration."""
    path = ep.folder.results
    found: dict[str, tuple[list[float | None], int]] = {}
    held = {key: _Held() for key in _wanted(ep).values()}
    curves: rungs.Curves = {}
    if not path.exists():
        return found, held, curves
    for row in latest_results(read_rows(path.read_bytes())):
        trial_id = str(row.get("trial_id"))
        values, most = found.get(trial_id, ([], 0))
        flat = flatten_result(row)
        for key in held.keys() & flat.keys():
            _hold(held[key], trial_id, flat[key])
        if ep.metric in flat and (flat[ep.metric] is None or number(flat[ep.metric]) is not None):
            values.append(finite(flat[ep.metric]))
        step = row.get("training_iteration")
        found[trial_id] = (values, max(most, step if isinstance(step, int) else 0))
        if isinstance(step, int) and ep.metric in flat:
            curves.setdefault(trial_id, {})[step] = finite(flat[ep.metric])
    return found, held, curves


def _hold(held: _Held, trial_id: str, value: Any) -> None:
    if value is None or number(value) is not None:
        held.numbers += 1
        return
    held.others += 1
    held.first = held.first or (trial_id, value)


def _columns(result: Any) -> list[str]:
    """The keys any of a trial's results held a value for (Tune's progress.csv)."""
    try:
        frame = result.metrics_dataframe
    except Exception:  # noqa: BLE001 - progress.csv unreadable: the last result stands
        return []
    if frame is None:
        return []
    held = frame.notna().any()  # one pass over the frame, not one per column
    return [str(c) for c, any_value in held.items() if any_value]


def _history(result: Any, key: str) -> list[Any]:
    """Every value of `key` a trial reported (Tune's progress.csv); iterations that lack it (an
    RLlib iteration in which no episode finished) are skipped."""
    last = flatten_result(dict(result.metrics or {})).get(key)
    try:
        frame = result.metrics_dataframe
    except Exception:  # noqa: BLE001 - progress.csv unreadable: the last result stands
        frame = None
    values = [v for v in frame[key] if v is not None] if frame is not None and key in frame else []
    if not values and last is not None:
        values = [last]
    return values


def _spec_keys(ep: ExperimentPlan, config: dict[str, Any]) -> dict[str, Any]:
    """A trial's config cut to the keys the spec wrote (an RLlib config has hundreds)."""
    config = restore_private_keys(config)
    keys = set(ep.experiment.config) | {"env"} | {p.split(".")[0] for p in ep.searched}
    plain = (str, int, float, bool, list, dict, type(None))
    return {
        k: v if isinstance(v, plain) else getattr(v, "__name__", repr(v))
        for k, v in config.items()
        if k in keys
    }


def _wanted(ep: ExperimentPlan) -> dict[str, str]:
    """The result keys the spec names, by where it names them: the metric, stop keys, the
    scheduler's time_attr."""
    wanted = {"metric": ep.metric} if ep.metric else {}
    wanted.update((f"metric[{i}]", o.name) for i, o in enumerate(ep.experiment.objectives))
    wanted.update((f"constraints.{c.name}", c.name) for c in ep.experiment.constraints)
    wanted.update((f"stop.{k}", k) for k in ep.experiment.stop)
    clock = getattr(ep.experiment.scheduler, "time_attr", None)
    if clock:
        wanted["scheduler.time_attr"] = clock
    return wanted


def _never_reported(
    ep: ExperimentPlan, seen: set[str], episodes: float
) -> tuple[dict[str, str], list[str]]:
    """Stop and metric keys no trial reported, and notes on keys that had no chance to be (the
    trainable's kind knows: RLlib's episode statistics before any episode finished)."""
    missing: dict[str, str] = {}
    notes: list[str] = []
    for where, key in _wanted(ep).items():
        if key in seen:
            continue
        note = ep.trainable.kind.missing_key_note(where, key, seen, episodes)
        if note is not None:
            notes.append(note)
        else:
            missing[where] = key
    return missing, notes


def _not_numbers(
    ep: ExperimentPlan, held: dict[str, _Held], missing: dict[str, str]
) -> tuple[dict[str, str], list[str]]:
    """Keys the spec names that some result held something other than a number in: never a
    number, what they were reported as (an error: they can never stop or rank a trial); a number
    in other results, a note (those results were skipped by every consumer, as results without
    the key are: a trainable reporting "n/a" before its first validation still ranks)."""
    unusable: dict[str, str] = {}
    notes: list[str] = []
    for where, key in _wanted(ep).items():
        found = held.get(key)
        if where in missing or found is None or found.first is None:
            continue
        trial_id, value = found.first
        shown = f"{_kind_of(value)} ({clip(repr(value), 60)}) by trial {trial_id}"
        if not found.numbers:
            unusable[where] = shown
        else:
            notes.append(
                f"{where} '{key}' was not a number in {found.others} of "
                f"{found.others + found.numbers} results that held it (first {shown}); those "
                "results were skipped"
            )
    return unusable, notes


def _kind_of(value: Any) -> str:
    names = {str: "a string", list: "a list", bool: "a boolean", dict: "a mapping"}
    return names.get(type(value), f"a {type(value).__name__}")


# Tune's bookkeeping keys that say who and when, never how well: no stop or metric to offer.
_NOT_METRICS = frozenset(
    {"trial_id", "config", "hostname", "node_ip", "pid", "date", "timestamp", "done",
     "should_checkpoint", "experiment_tag", "experiment_id", "checkpoint_dir_name"}
)  # fmt: skip


def missing_keys_error(ep: ExperimentPlan, summary: RunSummary) -> SpecError:
    """The message for a stop or metric key the trainable never reported, or never reported as
    a number."""
    if not summary.missing:
        where, shown = next(iter(summary.unusable.items()))
        key = _wanted(ep)[where]
        return SpecError(
            f"'{key}' was reported as {shown}, never as a number, so it can never stop or rank "
            "a trial",
            path=f"{ep.experiment.key_path}.{where}",
            suggestion="report it as an int or a float",
        )
    where, key = next(iter(summary.missing.items()))
    reported = [
        k for k in summary.reported if k not in _NOT_METRICS and not k.startswith("config/")
    ]
    return SpecError(
        f"'{key}' is never reported by trainable '{ep.experiment.run}', so it can never stop or "
        "rank a trial; the search was ended early",
        path=f"{ep.experiment.key_path}.{where}",
        allowed=reported,
        suggestion=did_you_mean(key, reported),
    )
