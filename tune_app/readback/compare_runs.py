"""`tune_app compare`: several runs of one metric side by side, read from their files alone
and judged (the result is `comparing.Comparison`).

For each run: its best score with an interval, and its best-so-far staircase against the trials
ended, the iterations spent and the wall time. For each pair of methods that have several scores
(a run with seeds: its best configuration's seed scores; several runs of one spec: each run's
best), the probability that one beats the other, as rliable (Agarwal et al. 2021, "Deep RL at
the edge of the statistical precipice") defines it: P(X > Y) = the share of pairs (x, y), one
score of each, where x beats y (a tie counts half), with a 95% percentile bootstrap interval
that resamples each method's scores apart (stratified). Seeded, so the figures repeat. Runs of
different metrics or modes are refused. Pure functions on runs read back; no Ray, no plotting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from tune_app import scoring
from tune_app.errors import SpecError
from tune_app.readback.comparing import (
    MIN_SCORES,
    ComparedRun,
    Comparison,
    Improvement,
    Method,
    Step,
)
from tune_app.rundir import noise
from tune_app.rundir.location import RunLocation, name_of, parent_of
from tune_app.rundir.read import ExperimentResults, read_experiment
from tune_app.seeds import CONFIDENCE, Configuration, finite_values
from tune_app.spec.loading import read_yaml_text, spec_text

LOGGED_AT = "logged_at"  # unix time the driver logged a result (tune_app.callbacks writes it)


def compare(wheres: Sequence[str | Path]) -> Comparison:
    """The runs `wheres` name (each as `RunLocation.open` reads it: a folder of several runs
    gives its newest that ran trials, and says so), compared. Raises SpecError for fewer than
    two runs, a run named twice, a run without one metric, and runs of different metrics or
    modes."""
    runs: list[RunLocation] = []
    given: list[str | Path] = []  # what named each run
    for where in wheres:
        for run in RunLocation.open(where):
            twice = next((i for i, r in enumerate(runs) if r.same_as(run)), None)
            if twice is None:
                runs.append(run)
                given.append(where)
                continue
            loose = [w for w in (given[twice], where) if not run.named_by(w)]
            if loose:
                raise SpecError(
                    f"{given[twice]} and {where} both read {run.where}: a folder names its "
                    "experiment's newest run",
                    suggestion=f"name a run's run.json (e.g. {loose[0]}/run.json) to read that run",
                )
            raise SpecError(
                f"{run.where} is named twice", suggestion="name each run to compare once"
            )
    if len(runs) < 2:
        found = ", ".join(r.where for r in runs) or "none"
        raise SpecError(
            f"compare needs two runs or more; {' '.join(map(str, wheres))} holds one ({found})",
            suggestion="name another run folder to compare it with",
        )
    exps = [read_experiment(r.local, r.where) for r in runs]
    metric, mode = _one_objective(exps)
    labels = _labels([e.where for e in exps])
    keys = [_method_key(r) for r in runs]
    compared = [_run(e, label) for e, label in zip(exps, labels, strict=True)]
    methods, grouped = _methods(exps, compared, keys)
    compared = [replace(c, method=grouped[c.label]) for c in compared]
    judged = [m for m in methods if len(m.scores) >= MIN_SCORES]
    improvements = tuple(improvement(a, b, mode) for a, b in combinations(judged, 2))
    return Comparison(
        metric=metric,
        mode=mode,
        runs=tuple(compared),
        methods=tuple(methods),
        improvements=improvements,
        notes=tuple(_notes(exps, labels, methods)),
    )


def _one_objective(exps: list[ExperimentResults]) -> tuple[str, str]:
    """The metric and mode every run shares; SpecError naming the first run that differs."""
    for e in exps:
        if e.summary.objectives:
            names = ", ".join(o.name for o in e.summary.objectives)
            raise SpecError(
                f"{e.where} searched several objectives ({names}); compare judges runs by one "
                "metric",
                suggestion="compare runs of one metric; `report` shows a run's Pareto front",
            )
        if e.metric is None or e.mode is None:
            raise SpecError(
                f"{e.where} has no metric and mode to compare by",
                suggestion="compare runs whose spec sets metric and mode",
            )
    first = exps[0]
    for e in exps[1:]:
        if (e.metric, e.mode) != (first.metric, first.mode):
            raise SpecError(
                f"cannot compare {first.where} (metric {first.metric}, mode {first.mode}) with "
                f"{e.where} (metric {e.metric}, mode {e.mode}): their scores mean different "
                "things",
                suggestion="compare runs of one metric and mode",
            )
    return str(first.metric), str(first.mode)


def _labels(wheres: list[str]) -> list[str]:
    """Each run's short name: its folder's name, with its parent's where two share one."""
    names = [name_of(w) for w in wheres]
    longer = [
        f"{name_of(parent_of(w))}/{n}" if names.count(n) > 1 else n
        for w, n in zip(wheres, names, strict=True)
    ]
    return [n if longer.count(n) == 1 else f"{n}#{i}" for i, n in enumerate(longer, 1)]


def _method_key(run: RunLocation) -> str | None:
    """What tells runs of one method: the spec as run, read back (its comments and layout
    aside) without the `seed`s outside the trainable's config (runs that differ only in the
    searcher's seed are replicates of one method); None where it cannot be read."""
    text = spec_text(run.spec)
    if text is None:
        return None
    try:
        return repr(_seedless(read_yaml_text(text, run.spec)))
    except SpecError:  # not YAML the app reads: its text alone tells it
        return text


def _seedless(value: Any, outside_config: bool = True) -> Any:
    """`value` in one order (keys by their repr), without `seed` keys outside a `config`."""
    if isinstance(value, dict):
        kept = {
            k: _seedless(v, outside_config and k != "config")
            for k, v in value.items()
            if not (outside_config and k == "seed")
        }
        return sorted(kept.items(), key=lambda kv: repr(kv[0]))
    if isinstance(value, list):
        return [_seedless(v, outside_config) for v in value]
    return value


def _run(exp: ExperimentResults, label: str) -> ComparedRun:
    configs = exp.summary.configurations()
    seed_scores: tuple[float, ...] = ()
    if configs:  # with seeds: the best configuration, by its seeds' aggregate
        top = configs[0]
        best, interval = top.score, top.interval
        words = _seed_words(top, exp.summary.aggregate) if interval else ""
        seed_scores = tuple(finite_values(top.scores).tolist())
    else:
        trial = exp.best_trial
        best = trial.score if trial is not None else None
        scores = finite_values([t.score for t in exp.trials if t.failure is None]).tolist()
        interval = best_of_interval(scores, exp.mode)
        words = (
            f"{CONFIDENCE:.0%} bootstrap of the best of its {len(scores)} scored trials"
            if interval
            else ""
        )
    return ComparedRun(
        label=label,
        where=exp.where,
        experiment=exp.name,
        scheduler=exp.scheduler,
        trials=len(exp.trials),
        finished=exp.finished,
        best=best,
        interval=interval,
        interval_words=words,
        unit="configurations" if configs else "trials",
        seed_scores=seed_scores,
        curve=staircase(exp, configs),
    )


def _seed_words(top: Configuration, how: str) -> str:
    if top.interval_is_range:
        return f"range of its best configuration's {top.scored} seeds"
    return f"{CONFIDENCE:.0%} bootstrap of the {how} of its best configuration's {top.scored} seeds"


def best_of_interval(scores: Sequence[float], mode: str | None) -> tuple[float, float] | None:
    """A 95% percentile bootstrap interval of the best of `scores` (a run's trials drawn again
    with replacement): how much the run's best owes to which trials it happened to draw. Its
    top end is the run's best. None under MIN_SCORES scores."""
    if len(scores) < MIN_SCORES:
        return None
    values = np.asarray(scores, dtype=float)
    rng = np.random.default_rng(noise.SEED)
    drawn = values[rng.integers(0, values.size, size=(noise.DRAWS, values.size))]
    bests = drawn.min(axis=1) if mode == "min" else drawn.max(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(bests, [tail, 100 - tail])
    return float(low), float(high)


def staircase(exp: ExperimentResults, configs: list[Configuration]) -> tuple[Step, ...]:
    """The best score so far each time a trial (with seeds: a configuration, once its last
    seed's trial ended) ended: its score counts from its last result, under the run's scope (a
    trial still running with its score so far). The best so far is the one the summary's own
    order ranks first among those ended (with seeds, `configs` in the summary's order: by the
    bound under `select: lcb`; a failed trial after those with a score), so the staircase ends
    at the best the summary names, and under lcb it may step down. Results are taken in the
    order they were logged."""
    by_id = {t.trial_id: t for t in exp.trials}
    # Each unit (trial or configuration) best first: its score and its trials.
    units: list[tuple[float | None, set[str]]]
    if configs:
        units = [(c.score, set(c.trial_ids)) for c in configs]
    else:
        units = [(t.score, {t.trial_id}) for t in exp.summary.ranked()]
    unit_of = {trial_id: i for i, (_, members) in enumerate(units) for trial_id in members}
    order = {trial_id: i for i, trial_id in enumerate(sorted(exp.history))}
    rows = sorted(
        (
            step.get(LOGGED_AT) is None,
            step.get(LOGGED_AT) or 0.0,
            order[trial_id],
            i,
            trial_id,
        )
        for trial_id, steps in exp.history.items()
        if trial_id in by_id
        for i, step in enumerate(steps)
    )
    start = rows[0][1] if rows and not rows[0][0] else None
    left = {i: {m for m in members if exp.history.get(m)} for i, (_, members) in enumerate(units)}
    first: int | None = None  # the ended unit ranked first, of those with a score
    top = 0.0  # its score
    out: list[Step] = []
    ended = 0
    for spent, (untimed, logged, _, i, trial_id) in enumerate(rows, 1):
        if i < len(exp.history[trial_id]) - 1 or trial_id not in unit_of:
            continue  # not the trial's last result
        unit = unit_of[trial_id]
        left[unit].discard(trial_id)
        if left[unit]:
            continue  # a configuration waits for its last seed
        ended += 1
        score = units[unit][0]
        if score is not None and (first is None or unit < first):
            first, top = unit, score
        if first is not None:
            seconds = None if untimed or start is None else logged - start
            out.append(Step(ended, spent, seconds, top))
    return tuple(out)


def _methods(
    exps: list[ExperimentResults], runs: list[ComparedRun], keys: list[str | None]
) -> tuple[list[Method], dict[str, str]]:
    """The runs grouped into methods: the runs of one method key and experiment are one method,
    judged by each run's best; a lone run by its best configuration's seed scores."""
    groups: dict[object, list[int]] = {}
    for i, (exp, method) in enumerate(zip(exps, keys, strict=True)):
        key = (method, exp.name) if method is not None else ("", exp.where)
        groups.setdefault(key, []).append(i)
    methods, grouped = [], {}
    for members in groups.values():
        first = runs[members[0]]
        if len(members) > 1:
            names = [runs[i].label for i in members]
            label = " + ".join(names) if len(names) <= 3 else f"{names[0]} + {len(names) - 1} more"
            scores = tuple(finite_values([runs[i].best for i in members]).tolist())
            basis = f"the best of each of its {len(members)} runs"
        else:
            label, scores = first.label, first.seed_scores
            basis = (
                f"its best configuration's {len(scores)} seeds"
                if scores
                else "one run without seeds"
            )
        methods.append(Method(label, tuple(runs[i].label for i in members), scores, basis))
        grouped.update(dict.fromkeys((runs[i].label for i in members), label))
    return methods, grouped


def improvement(a: Method, b: Method, mode: str | None) -> Improvement:
    """rliable's probability of improvement between two methods, turned so that the one more
    likely to be better is named first (its chance >= 0.5), with a 95% stratified percentile
    bootstrap interval."""
    x, y = np.asarray(a.scores, dtype=float), np.asarray(b.scores, dtype=float)
    if mode == "min":
        x, y = -x, -y
    chance = _chance(x[None, :], y[None, :])[0]
    rng = np.random.default_rng(noise.SEED)
    xs = x[rng.integers(0, x.size, size=(noise.DRAWS, x.size))]
    ys = y[rng.integers(0, y.size, size=(noise.DRAWS, y.size))]
    draws = _chance(xs, ys)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = (float(v) for v in np.percentile(draws, [tail, 100 - tail]))
    if chance < 0.5:
        return Improvement(b.label, a.label, 1 - chance, (1 - high, 1 - low), (y.size, x.size))
    return Improvement(a.label, b.label, float(chance), (low, high), (x.size, y.size))


def _chance(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Per row (a draw): the share of (x, y) pairs where x beats y, a tie counting half."""
    diff = xs[:, :, None] - ys[:, None, :]
    return np.asarray(((diff > 0) + 0.5 * (diff == 0)).mean(axis=(1, 2)))


def _notes(exps: list[ExperimentResults], labels: list[str], methods: list[Method]) -> list[str]:
    notes = []
    scopes = {e.scope for e in exps}
    if len(scopes) > 1:
        words = ", ".join(
            f"{lab}: {scoring.describe(e.scope)}" for lab, e in zip(labels, exps, strict=True)
        )
        notes.append(f"the runs score a trial differently ({words})")
    unfinished = [lab for lab, e in zip(labels, exps, strict=True) if not e.finished]
    if unfinished:
        notes.append(f"not finished (interrupted or still running): {', '.join(unfinished)}")
    for m in methods:  # one spec, one searcher seed, a deterministic trainable: one search
        repeats = sum(
            any(math.isclose(x, y, rel_tol=1e-9) for y in m.scores[:i])
            for i, x in enumerate(m.scores)
        )
        if len(m.runs) > 1 and repeats:
            notes.append(
                f"{m.label}: {repeats} of its {len(m.runs)} runs' bests repeat another's exactly, "
                "as runs of one spec with a fixed `seed` do: they count as one search more than "
                "once, so its probabilities are surer than the evidence (vary `seed` between runs)"
            )
    alone = [m.label for m in methods if len(m.scores) < MIN_SCORES]
    if alone:
        notes.append(
            f"no probability of improvement for {', '.join(alone)}: each needs {MIN_SCORES} "
            "scores or more, from seeds (the spec's `seeds`) or from several runs of one spec"
        )
    return notes
