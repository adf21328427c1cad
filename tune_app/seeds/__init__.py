"""Seeds as an axis: every configuration runs once per seed, and is judged by an aggregate of
its seeds' scores (mean, interquartile mean or median) with a bootstrap confidence interval.

The feature's parts, all in this package:
- this module: the seed key, the aggregates and their bootstrap intervals (Ray-free);
- `wrappers`: which seeded variant of a searcher or scheduler an experiment runs, the one
  place that decides it (the method tables ask it);
- their behaviour, in `tune_app.ray_internals.seeded` (it reaches Tune's private tables where
  Tune has no hook; its docstring names each), which `wrappers` alone imports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SEED_KEY = "seed"  # the config key each trial's seed is passed in (RLlib's debugging seed too)
# A seed is below it: Optuna, HyperOpt and numpy's RandomState take 0 to 2**32 - 1.
SEED_LIMIT = 2**32
MAX_SEEDS = 10_000  # seeds a configuration runs on, at most (`seeds:`, `best`/`evaluate --seeds`)
AGGREGATES = ("mean", "iqm", "median")
DEFAULT_AGGREGATE = "mean"
CONFIDENCE = 0.95
BOOTSTRAP_DRAWS = 2000
# Under this many scored seeds a bootstrap interval is little more than their min and max (over
# 2 seeds it is exactly that): the seeds' range is shown, with its count, and called so.
MIN_BOOTSTRAP = 5
FAILED = "ERROR"  # a failed trial's status (tune_app.rundir.records.ERRORED)


def finite_values(values: Sequence[float | None]) -> np.ndarray:
    """The finite numbers among `values`, as an array (None, NaN and the infinities left out)."""
    return np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)


def aggregate(values: Sequence[float], how: str = DEFAULT_AGGREGATE) -> float | None:
    """The aggregate of the finite values: mean, iqm (mean of the middle half) or median."""
    finite = finite_values(values)
    return float(aggregate_rows(finite[np.newaxis], how)[0]) if finite.size else None


def aggregate_rows(draws: np.ndarray, how: str) -> np.ndarray:
    """The aggregate of each row of `draws` (rows x values): `aggregate`, vectorised."""
    if how == "mean":
        return np.asarray(draws.mean(axis=1))
    if how == "median":
        return np.asarray(np.median(draws, axis=1))
    if how == "iqm":
        ordered = np.sort(draws, axis=1)
        cut = int(math.floor(draws.shape[1] * 0.25))  # scipy's trim_mean(x, 0.25)
        return np.asarray(ordered[:, cut : draws.shape[1] - cut].mean(axis=1))
    raise ValueError(f"unknown aggregate {how!r}; allowed: {', '.join(AGGREGATES)}")


def bootstrap_interval(
    values: Sequence[float], how: str = DEFAULT_AGGREGATE, seed: int = 0
) -> tuple[float, float] | None:
    """A percentile bootstrap interval of the aggregate (95%); None for fewer than 2 values.
    Seeded, so a report shows the same interval each time it is drawn."""
    finite = finite_values(values)
    if finite.size < 2:
        return None
    rng = np.random.default_rng(seed)
    draws = rng.choice(finite, size=(BOOTSTRAP_DRAWS, finite.size), replace=True)
    stats = aggregate_rows(draws, how)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(stats, [tail, 100 - tail])
    return float(low), float(high)


@dataclass
class Configuration:
    """One configuration run on several seeds: its trials and their aggregate score."""

    params: dict[str, Any]  # the searched values, the seed left out
    trial_ids: list[str] = field(default_factory=list)
    seeds: list[Any] = field(default_factory=list)
    scores: list[float | None] = field(default_factory=list)  # each seed's trial's score
    score: float | None = None  # the aggregate
    interval: tuple[float, float] | None = None
    expected: int = 0  # seeds it should have run on (0: as many as it has trials)
    failed: int = 0  # seeds whose trial failed (a crash, a metric turned NaN)
    iterations: list[int] = field(default_factory=list)  # each seed's trial's iterations
    # Its chance of being the best and its pessimistic bound (tune_app.rundir.noise); None
    # under 2 scored seeds.
    chance_best: float | None = None
    bound: float | None = None

    @property
    def interval_is_range(self) -> bool:
        """The interval is the seeds' min and max (under MIN_BOOTSTRAP scored seeds), not a
        bootstrap interval."""
        return self.scored < MIN_BOOTSTRAP

    def interval_text(self, shown: Any = "{:.6g}".format) -> str:
        """The interval as shown: `[lo, hi] (range of 2 seeds)` or `[lo, hi] (95% bootstrap)`;
        "-" without one."""
        if self.interval is None:
            return "-"
        kind = (
            f"range of {self.scored} seeds"
            if self.interval_is_range
            else f"{CONFIDENCE:.0%} bootstrap"
        )
        return f"[{shown(self.interval[0])}, {shown(self.interval[1])}] ({kind})"

    @property
    def mixed_budgets(self) -> bool:
        """Its scored seeds ran for different numbers of iterations (a scheduler stopped some
        early): its aggregate mixes scores at different budgets."""
        ran = {n for n, s in zip(self.iterations, self.scores, strict=False) if s is not None}
        return len(ran) > 1

    @property
    def budgets_text(self) -> str:
        """ "" or, for mixed budgets, "mixed budgets: 1-6 iterations"."""
        if not self.mixed_budgets:
            return ""
        ran = [n for n, s in zip(self.iterations, self.scores, strict=False) if s is not None]
        return f"mixed budgets: {min(ran)}-{max(ran)} iterations"

    def of_seeds(self, how: str) -> str:
        """What its score is: "iqm of 3 seeds", or "1 seed only" (no aggregate of one)."""
        if self.scored == 1:
            return "1 seed only"
        return f"{how} of {self.scored} seeds"

    @property
    def scored(self) -> int:
        """Seeds with a finite score."""
        return sum(1 for s in self.scores if s is not None and math.isfinite(s))

    @property
    def complete(self) -> bool:
        """Every seed it should have run on scored and none failed: its aggregate is over all
        of them, as they were meant to run."""
        return self.scored >= max(self.expected, len(self.trial_ids)) and not self.failed


def group(
    trials: Sequence[Any],
    how: str = DEFAULT_AGGREGATE,
    mode: str | None = "max",
    expected: int = 0,
) -> list[Configuration]:
    """Trials (TrialOutcomes) grouped by their searched values without the seed, best aggregate
    first; configurations missing a seed's score (not run yet) after the complete ones, since an
    aggregate over the seeds that survived flatters them, and those with a failed seed after
    those, as a failed trial ranks after the others (a score before a crash is not the best);
    configurations without a score last. `expected`: the seeds each should have run on. Trials
    are taken in the order Tune created them (their ids), so equal aggregates and the intervals
    come out the same whatever the order of `trials`."""
    found: dict[str, Configuration] = {}
    for t in sorted(trials, key=lambda t: t.trial_id):
        params = {k: v for k, v in t.params.items() if k != SEED_KEY}
        if never_started(t):
            continue  # no configuration was drawn for it: not one made up of missing values
        key = repr(sorted(params.items(), key=lambda item: item[0]))
        config = found.setdefault(key, Configuration(params=params, expected=expected))
        config.trial_ids.append(t.trial_id)
        config.seeds.append(t.params.get(SEED_KEY, t.config.get(SEED_KEY)))
        config.scores.append(t.score)
        config.iterations.append(int(getattr(t, "iterations", 0) or 0))
        config.failed += getattr(t, "status", None) == FAILED
    for config in found.values():
        numbers = [s for s in config.scores if s is not None and math.isfinite(s)]
        config.score = aggregate(numbers, how)
        if len(numbers) >= MIN_BOOTSTRAP:
            config.interval = bootstrap_interval(numbers, how)
        elif len(numbers) >= 2:
            config.interval = (min(numbers), max(numbers))
    sign = -1.0 if mode == "max" else 1.0
    return sorted(
        found.values(),
        key=lambda c: (
            c.score is None,
            c.failed > 0,
            not c.complete,
            sign * c.score if c.score is not None else 0.0,
        ),
    )  # stable: equal aggregates keep the order of their first trials


def never_started(trial: Any) -> bool:
    """A trial of an interrupted run that never started: no iteration, no score, and none of
    its searched values known (a searcher had not drawn them yet)."""
    params = {k: v for k, v in trial.params.items() if k != SEED_KEY}
    return (
        bool(params)
        and all(v is None for v in params.values())
        and not getattr(trial, "iterations", 0)
        and trial.score is None
    )


def seed_values(seeds: int | Sequence[int]) -> list[int]:
    """`seeds: 5` is seeds 0 to 4; a list is taken as written."""
    return list(range(seeds)) if isinstance(seeds, int) else list(seeds)
