"""Searchers and schedulers on seeds (see `seeds`): a model-based searcher suggests each
configuration once, it runs once per seed, and the searcher is told the configuration's
aggregate; an early-stopping scheduler sees each result's metric as the aggregate of that
configuration's seeds so far."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ray.tune.experiment import Trial
from ray.tune.schedulers import (
    ASHAScheduler,
    HyperBandScheduler,
    MedianStoppingRule,
    TrialScheduler,
)
from ray.tune.search import BasicVariantGenerator
from ray.tune.search.basic_variant import _TrialIterator

from tune_app.ray_internals.hyperband import FilledOnce, ResumableHyperBand
from tune_app.ray_internals.sparse import SparseASHA, SparseMedian, numbers_only
from tune_app.ray_internals.wrapping import ENDED, Wraps, WrapsSearcher, option
from tune_app.scoring import number
from tune_app.seeds import SEED_KEY, aggregate


class _SeedsInTurn(_TrialIterator):
    """Tune's trial iterator making each variant once per seed, one after another, so a
    configuration's seeds are made (and, on few cores, run) together. As a grid axis the seed
    would vary slowest (Tune varies grid keys in sorted order, the first fastest): every
    configuration's first seed would run before any second one, and an early-stopping
    scheduler would judge each configuration on its first seed alone."""

    seeds: list[int]
    queued: list[tuple[dict, dict]]

    def __next__(self) -> Any:
        if self.queued:
            return _TrialIterator.create_trial(self, *self.queued.pop(0))
        return super().__next__()  # draws the next variant: create_trial below

    def create_trial(self, resolved_vars: dict, spec: dict) -> Any:
        variants = []
        for seed in self.seeds:
            seeded = copy.deepcopy(spec)
            seeded.setdefault("config", {})[SEED_KEY] = seed
            variants.append(({**resolved_vars, ("config", SEED_KEY): seed}, seeded))
        self.queued = variants[1:]
        return _TrialIterator.create_trial(self, *variants[0])


class SeededVariants(BasicVariantGenerator):
    """Grid and random search on seeds: Tune's variant generator with every variant run once
    per seed (`config["seed"]`), the seeds of a configuration made one after another."""

    def __init__(self, seeds: Sequence[int], **options: Any) -> None:
        super().__init__(**options)
        self.seeds = list(seeds)

    def add_configurations(self, experiments: Any) -> None:
        before, added = self._total_samples, len(self._iterators)
        super().add_configurations(experiments)
        for iterator in self._iterators[added:]:
            iterator.__class__ = _SeedsInTurn  # the same object the trial chain holds
            iterator.seeds, iterator.queued = self.seeds, []
        self._total_samples = before + (self._total_samples - before) * len(self.seeds)


@dataclass
class _Seeds:
    """One configuration the searcher suggested, and its seeds' trials: trial id -> its score,
    None until it ends. The searcher knows the first trial only."""

    first: str
    config: dict[str, Any]
    scores: dict[str, float | None] = field(default_factory=dict)


class SeedRepeater(WrapsSearcher):
    """Asks the searcher for a configuration once, runs it once per seed (`config["seed"]`, the
    seeds made one after another), and tells the searcher the seeds' aggregate (mean, iqm or
    median) once every seed has ended, as the first seed's result (as Tune's Repeater does)."""

    def __init__(self, searcher: Any, seeds: Sequence[int], how: str) -> None:
        super().__init__(searcher)
        self.seeds = list(seeds)
        self.how = how
        self.groups: dict[str, _Seeds] = {}  # trial id -> its configuration
        self.current: _Seeds | None = None  # the configuration whose seeds are being made
        self.latest: dict[str, float] = {}  # trial id -> its metric's latest value

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        if self.current is None or len(self.current.scores) == len(self.seeds):
            config = self.searcher.suggest(trial_id)
            if not isinstance(config, dict):  # None (wait) or Searcher.FINISHED
                return config
            self.current = _Seeds(trial_id, copy.deepcopy(config))
        group = self.current
        seed = self.seeds[len(group.scores)]
        group.scores[trial_id] = None
        self.groups[trial_id] = group
        return {**group.config, SEED_KEY: seed}

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        # A limit on trials, not on the configurations the searcher suggests: Tune's
        # ConcurrencyLimiter applies it around this, as around its Repeater.
        return False

    def on_trial_result(self, trial_id: str, result: dict[Any, Any]) -> None:
        """Kept for a seed that ends without a result: a scheduler stopping it while paused."""
        value = result.get(self.searcher.metric)
        if isinstance(value, int | float):
            self.latest[trial_id] = float(value)

    # Tune calls it with `error` by keyword, or without.
    def on_trial_complete(  # type: ignore[override]
        self, trial_id: str, result: dict[Any, Any] | None = None, **kwargs: Any
    ) -> Any:
        group = self.groups.get(trial_id)
        if group is None:
            return
        metric = self.searcher.metric
        latest = self.latest.pop(trial_id, None)
        value = (result or {}).get(metric, None if kwargs.get("error") else latest)
        group.scores[trial_id] = value if value is not None else np.nan
        if len(group.scores) == len(self.seeds) and None not in group.scores.values():
            # The configuration failed only if no seed scored: the last seed to end (whose
            # `error` Tune passes here) must not decide whether the searcher learns from it.
            told = aggregate([v for v in group.scores.values() if v is not None], self.how)
            kwargs.pop("error", None)
            self.searcher.on_trial_complete(
                group.first,
                result={metric: told if told is not None else np.nan},
                error=told is None,
                **kwargs,
            )

    def get_state(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "searcher"}

    def set_state(self, state: dict) -> None:
        self.__dict__.update(state)


class JudgesBySeeds(Wraps):
    """Around a scheduler: each result's metric is replaced by the aggregate of every seed of the
    same configuration at that time (each seed's latest value up to the result's `time_attr`; a
    seed that is behind counts with its latest), and once one seed of a configuration is
    stopped before the scheduler's max_t, the others run to the same budget (its `time_attr`
    then, or the rung it was cut at) and stop there. So a configuration's seeds are kept or cut
    together, by the aggregate of the seeds that have got that far, not by one seed's luck, and
    they end at one budget. Seeds run as cores allow, so a configuration may be judged before
    all its seeds have started: waiting for them would stop no trial early.

    `time_attr` and `max_t` are the wrapped scheduler's options (max_t None: no bound)."""

    def __init__(
        self,
        inner: TrialScheduler,
        time_attr: str = "training_iteration",
        max_t: float | None = None,
        how: str = "mean",
    ) -> None:
        super().__init__(inner)
        self.time_attr, self.max_t, self.how = time_attr, max_t, how
        # configuration -> trial id -> [(time, value)]: each seed's numbers so far
        self.histories: dict[str, dict[str, list[tuple[float, float]]]] = {}
        # Configurations stopped early -> the budget (time_attr) their seeds stop at; None: at
        # once. A set before the budget was kept: a run begun then resumes with its seeds
        # stopped at once (`__setstate__`).
        self.stopped: dict[str, float | None] = {}
        self.cut_at: float | None = None  # where `_decide` cut the configuration, if not now

    def __setstate__(self, state: dict[str, Any]) -> None:
        if isinstance(state.get("stopped"), set):
            state["stopped"] = dict.fromkeys(state["stopped"])
        state.setdefault("cut_at", None)
        state.setdefault("passed", {})
        self.__dict__.update(state)

    def _aggregate_at(self, group: str, time: float | None) -> float | None:
        """The configuration's aggregate over its seeds' latest values up to `time`."""
        values = []
        for history in self.histories.get(group, {}).values():
            upto = [v for t, v in history if time is None or t <= time] or [history[-1][1]]
            values.append(upto[-1])
        return aggregate(values, self.how)

    def _time_of(self, result: dict) -> float | None:
        value = result.get(self.time_attr)
        return float(value) if isinstance(value, int | float) else None

    def _ends_early(self, time: float | None) -> bool:
        """Whether a stop at `time` is an early stop (not the scheduler's max_t)."""
        return time is None or self.max_t is None or time < self.max_t

    def _judged(self, trial: Trial, result: dict) -> dict:
        """`result` with its metric replaced by the configuration's aggregate at its time, the
        value recorded in the trial's history first; without it where it is not a number."""
        metric = self.metric
        result = numbers_only(result, metric)
        if not metric or result.get(metric) is None:
            return result
        group, time = _configuration(trial), self._time_of(result)
        history = self.histories.setdefault(group, {}).setdefault(trial.trial_id, [])
        at = time if time is not None else float(len(history))
        if not history or history[-1][0] != at:
            history.append((at, result[metric]))
        told = self._aggregate_at(group, time)
        return {**result, metric: told} if told is not None else result

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        group, time = _configuration(trial), self._time_of(result)
        if group in self.stopped:
            # A sibling seed was stopped early: this one runs to the same budget, then stops.
            budget = self.stopped[group]
            if budget is None or time is None or time >= budget:
                return TrialScheduler.STOP
            return TrialScheduler.CONTINUE
        self.cut_at = None
        decision = self._decide(tune_controller, trial, self._judged(trial, result))
        if decision == TrialScheduler.STOP and self._ends_early(time):
            self.stopped[group] = self.cut_at if self.cut_at is not None else time
        return decision

    def _decide(self, tune_controller: Any, trial: Trial, judged: dict) -> str:
        """The wrapped scheduler's decision on a judged result."""
        return self.inner.on_trial_result(tune_controller, trial, judged)

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        # ASHA and the median rule record a finished trial's last result for later comparisons:
        # the aggregate, as every other value they hold.
        self.inner.on_trial_complete(
            tune_controller, trial, self._judged(trial, result) if result else result
        )


class _Configuration:
    """What Tune's ASHA reads of a trial, standing for all seeds of one configuration: its id is
    the configuration (`_configuration`)."""

    def __init__(self, trial_id: str) -> None:
        self.trial_id = trial_id


class SeededASHA(JudgesBySeeds):
    """Tune's ASHA judging configurations: it is told of each configuration once, as one trial,
    and each seed's results as that trial's, with the aggregate of the seeds so far. A rung
    records a configuration once, with its latest aggregate there; each seed reaching the rung
    has it judged again, with what its siblings have got to by then, against the other
    configurations only (recorded per trial, a configuration's own partial aggregates would set
    its bar). Seeds share a bracket."""

    def __init__(self, how: str = "mean", **options: Any) -> None:
        # Without stop_last_trials no trial is stopped at max_t: every stop is a rung's cut.
        self.stops_at_max_t = option(ASHAScheduler, options, "stop_last_trials")
        super().__init__(
            SparseASHA(**options),
            time_attr=option(ASHAScheduler, options, "time_attr"),
            max_t=option(ASHAScheduler, options, "max_t") if self.stops_at_max_t else None,
            how=how,
        )
        self.seeds_live: dict[str, set[str]] = {}  # configuration -> its seeds' trial ids
        self.judged_at: dict[str, set[float]] = {}  # trial id -> rungs it was judged at
        self.passed: dict[str, set[float]] = {}  # configuration -> the rungs it passed
        self.homes: dict[str, Any] = {}  # configuration -> its bracket, for all its seeds

    def _stand_in(self, trial: Trial) -> Any:
        return _Configuration(_configuration(trial))

    def bracket_of(self, trial: Trial) -> Any:
        """The bracket a seed's configuration is in (Tune's, by configuration), or None."""
        return self.tune._trial_info.get(_configuration(trial))

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        group = _configuration(trial)
        if group in self.homes:  # a later seed, its siblings perhaps ended: their bracket
            self.tune._trial_info[group] = self.homes[group]
        else:
            self.inner.on_trial_add(tune_controller, self._stand_in(trial))
            self.homes[group] = self.bracket_of(trial)
        self.seeds_live.setdefault(group, set()).add(trial.trial_id)
        if trial.status == Trial.TERMINATED:
            self._cut_before(group, trial)

    def _cut_before(self, group: str, trial: Trial) -> None:
        """A resumed run: Tune adds its trials to a new scheduler, the ended ones too. A seed
        that ended at one of its bracket's rungs, short of max_t, was cut there (its trainable
        ending by itself exactly at a rung aside): its configuration's other seeds stop there
        too, as they would have in the interrupted run."""
        time = self._time_of(trial.last_result or {})
        bracket = self.bracket_of(trial)
        if time is None or bracket is None or not self._ends_early(time):
            return
        if time in {milestone for milestone, _ in bracket._rungs}:
            budget = self.stopped.get(group)
            self.stopped[group] = time if budget is None else min(budget, time)

    def _decide(self, tune_controller: Any, trial: Trial, judged: dict) -> str:
        """The first seed of a configuration at a rung decides for all its seeds: kept, they go
        on; cut, those behind run to the rung and stop there (`cut_at`). A later seed at the
        rung is judged again, against the other configurations only, to record the
        configuration's new aggregate there (the bar for the others); its verdict does not undo
        the first, for a seed ahead cannot be taken back to the rung."""
        bracket, time = self.bracket_of(trial), self._time_of(judged)
        if bracket is None:
            return TrialScheduler.CONTINUE
        stand_in = self._stand_in(trial)
        if time is None or self.metric not in judged or not self._ends_early(time):
            return self.inner.on_trial_result(tune_controller, stand_in, judged)
        group = _configuration(trial)
        reached = [(m, recorded) for m, recorded in bracket._rungs if time >= m][:1]
        judged_here = self.judged_at.setdefault(trial.trial_id, set())
        for milestone, recorded in reached:  # the highest rung this seed has reached
            if milestone in judged_here:
                break  # judged here already: Tune's bracket continues it
            judged_here.add(milestone)
            recorded.pop(group, None)  # judged afresh, and its new aggregate recorded
            decision = self.inner.on_trial_result(tune_controller, stand_in, judged)
            passed = self.passed.setdefault(group, set())
            if milestone in passed:
                return TrialScheduler.CONTINUE  # decided by its first seed here
            if decision == TrialScheduler.CONTINUE:
                passed.add(milestone)
            else:
                self.cut_at = milestone
            return decision
        return self.inner.on_trial_result(tune_controller, stand_in, judged)

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        bracket, live = self.bracket_of(trial), self.seeds_live.get(_configuration(trial), set())
        if bracket is None or trial.trial_id not in live:
            return
        live.discard(trial.trial_id)
        if result:
            self.inner.on_trial_complete(
                tune_controller, self._stand_in(trial), self._judged(trial, result)
            )
        if live:  # Tune forgets a trial's bracket when it ends; the siblings still report
            self.tune._trial_info[_configuration(trial)] = bracket

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        live = self.seeds_live.get(_configuration(trial), set())
        live.discard(trial.trial_id)
        if not live and self.bracket_of(trial) is not None:
            self.inner.on_trial_remove(tune_controller, self._stand_in(trial))


class SeededMedian(JudgesBySeeds):
    """The median stopping rule judging configurations by their seeds' aggregate."""

    def __init__(self, how: str = "mean", **options: Any) -> None:
        super().__init__(
            SparseMedian(**options),
            time_attr=option(MedianStoppingRule, options, "time_attr"),
            how=how,
        )


def _configuration(trial: Trial) -> str:
    """A trial's configuration without its seed: the key its seeds share."""
    return json.dumps(
        {k: v for k, v in trial.config.items() if k != SEED_KEY}, sort_keys=True, default=str
    )


class SeedsKeptTogether(FilledOnce):
    """A bracket of configurations, each with all its seeds: HyperBand's counts (how many a
    bracket takes, how many a rung keeps) are of configurations, a seed joins the bracket its
    configuration is in, and a rung keeps or cuts a configuration's seeds together, by their
    aggregate at the rung (`judge`, set by the scheduler)."""

    judge: Any = None  # (trial, result) -> the result with its configuration's aggregate

    def configurations(self) -> set[str]:
        return {_configuration(t) for t in self._all_trials}

    def filled(self) -> bool:
        return len(self.configurations()) >= self._n

    def add_trial(self, trial: Trial) -> None:
        """Also for a seed of a configuration already here, once the bracket is full."""
        self._live_trials[trial] = None
        self._all_trials.append(trial)

    def successive_halving(self, metric: str, metric_op: float) -> tuple[list, list]:
        """Tune's halving over one trial per configuration (its best-judged seed, each seed
        judged again on its configuration's seeds at the rung: they reached it one by one, each
        given the aggregate known then), its verdict applied to all the configuration's seeds."""
        live = self._live_trials
        groups: dict[str, list[Trial]] = {}
        for trial, result in live.items():
            groups.setdefault(_configuration(trial), []).append(trial)
            if result is not None and self.judge is not None:
                live[trial] = self.judge(trial, result)

        def judged(trial: Trial) -> float:
            value = number((live[trial] or {}).get(metric))
            return metric_op * value if value is not None else -math.inf

        self._live_trials = {
            best: live[best] for best in (max(ts, key=judged) for ts in groups.values())
        }
        try:
            good, bad = super().successive_halving(metric, metric_op)
        finally:
            self._live_trials = live
        return [t for g in good for t in groups[_configuration(g)]], [
            t for b in bad for t in groups[_configuration(b)]
        ]


class SeededHyperBand(JudgesBySeeds):
    """HyperBand judging configurations by their seeds' aggregate, its brackets holding whole
    configurations (`SeedsKeptTogether`)."""

    def __init__(self, how: str = "mean", **options: Any) -> None:
        self.band = ResumableHyperBand(bracket_class=SeedsKeptTogether, **options)
        super().__init__(
            self.band,
            time_attr=option(HyperBandScheduler, options, "time_attr"),
            max_t=option(HyperBandScheduler, options, "max_t"),
            how=how,
        )
        self.homes: dict[str, tuple[Any, int]] = {}  # configuration -> (its bracket, its band)

    def _at_rung(self, trial: Trial, result: dict) -> dict:
        told = self._aggregate_at(_configuration(trial), self._time_of(result))
        metric = self.metric
        return {**result, metric: told} if told is not None and metric in result else result

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        home = self.homes.get(_configuration(trial))
        if home is not None and trial.status not in ENDED:
            home[0].add_trial(trial)  # beside its sibling seeds
            self.tune._trial_info[trial] = home
            return
        self.inner.on_trial_add(tune_controller, trial)
        if trial in self.tune._trial_info:
            self.homes[_configuration(trial)] = self.tune._trial_info[trial]
            self.tune._trial_info[trial][0].judge = self._at_rung

    def _watched(self, trial: Trial, hook: Any) -> Any:
        """Runs `hook`; a seed its bracket cut early stops its configuration's other seeds."""
        bracket = self.band.bracket_of(trial)
        before = dict(bracket._live_trials) if bracket is not None else {}
        outcome = hook()
        after = bracket._live_trials if bracket is not None else {}
        for gone, result in before.items():  # `trial` itself ends by its own hook (or is judged)
            left = gone is not trial and gone not in after
            time = self._time_of(result or {})
            if left and self._ends_early(time):
                self.stopped.setdefault(_configuration(gone), time)
        return outcome

    def _decide(self, tune_controller: Any, trial: Trial, judged: dict) -> str:
        return self._watched(
            trial, lambda: self.inner.on_trial_result(tune_controller, trial, judged)
        )

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        self._watched(
            trial,
            lambda: super(SeededHyperBand, self).on_trial_complete(tune_controller, trial, result),
        )

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        self._watched(trial, lambda: self.inner.on_trial_remove(tune_controller, trial))

    def on_trial_error(self, tune_controller: Any, trial: Trial) -> None:
        self._watched(trial, lambda: self.inner.on_trial_error(tune_controller, trial))


# The names runs saved before these were public pickled (saved_state.PICKLED_NAMES).
_SeedsKeptTogether = SeedsKeptTogether
