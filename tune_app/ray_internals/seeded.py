"""Searchers and schedulers on seeds (see `seeds`): a model-based searcher suggests each
configuration once, it runs once per seed, and the searcher is told the configuration's
aggregate; an early-stopping scheduler sees each result's metric as the aggregate of that
configuration's seeds so far."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from ray.tune.experiment import Trial
from ray.tune.schedulers import ASHAScheduler, TrialScheduler
from ray.tune.search import BasicVariantGenerator, Repeater
from ray.tune.search.basic_variant import _TrialIterator
from ray.tune.search.repeater import TRIAL_INDEX

from tune_app.ray_internals.hyperband import ResumableHyperBand, _FilledOnce
from tune_app.ray_internals.sparse import SparseMedian, numbers_only
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


class SeedRepeater(Repeater):
    """Tune's Repeater with the seed in `config["seed"]` and the spec's aggregate (mean, iqm or
    median) instead of Repeater's fixed mean."""

    def __init__(self, searcher: Any, seeds: Sequence[int], how: str) -> None:
        super().__init__(searcher, repeat=len(seeds), set_index=True)
        self.seeds = list(seeds)
        self.how = how
        self.latest: dict[str, float] = {}  # trial id -> its metric's latest value

    def on_trial_result(self, trial_id: str, result: dict[Any, Any]) -> None:
        """Kept for a seed that ends without a result: a scheduler stopping it while paused."""
        value = result.get(self.searcher.metric)
        if isinstance(value, int | float):
            self.latest[trial_id] = float(value)

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        config = super().suggest(trial_id)
        if isinstance(config, dict) and TRIAL_INDEX in config:
            config[SEED_KEY] = self.seeds[config.pop(TRIAL_INDEX)]
        return config

    # Repeater's own signature (**kwargs) differs from Searcher's (`error`); Tune calls both ways.
    def on_trial_complete(  # type: ignore[override]
        self, trial_id: str, result: dict[Any, Any] | None = None, **kwargs: Any
    ) -> Any:
        group = self._trial_id_to_group.get(trial_id)
        if group is None:
            return
        metric = self.searcher.metric
        latest = self.__dict__.get("latest", {}).pop(trial_id, None)
        value = (result or {}).get(metric, None if kwargs.get("error") else latest)
        group.report(trial_id, value if value is not None else np.nan)
        if group.finished_reporting():
            # The configuration failed only if no seed scored: the last seed to end (whose
            # `error` Tune passes here) must not decide whether the searcher learns from it.
            told = aggregate(list(group.scores()), self.how)
            kwargs.pop("error", None)
            self.searcher.on_trial_complete(
                group.primary_trial_id,
                result={metric: told if told is not None else np.nan},
                error=told is None,
                **kwargs,
            )


class JudgesBySeeds(TrialScheduler):
    """Mixed into a scheduler: each result's metric is replaced by the aggregate of every seed of
    the same configuration at that time (each seed's latest value up to the result's
    `time_attr`; a seed that is behind counts with its latest), and once one seed of a
    configuration is stopped before the scheduler's max_t, the others stop at their next result.
    So a configuration's seeds are kept or cut together, by the aggregate of the seeds that have
    got that far, not by one seed's luck. Seeds run as cores allow, so a configuration may be
    judged before all its seeds have started: waiting for them would stop no trial early."""

    how: str = "mean"

    def _seed_state(self) -> tuple[dict[str, dict[str, list[tuple[float, float]]]], set[str]]:
        histories = self.__dict__.setdefault("_seed_histories", {})
        stopped = self.__dict__.setdefault("_seed_groups_stopped", set())
        return histories, stopped

    @staticmethod
    def _group(trial: Trial) -> str:
        return _configuration(trial)

    def _aggregate_at(self, group: str, time: float | None) -> float | None:
        """The configuration's aggregate over its seeds' latest values up to `time`."""
        values = []
        for history in self._seed_state()[0].get(group, {}).values():
            upto = [v for t, v in history if time is None or t <= time] or [history[-1][1]]
            values.append(upto[-1])
        return aggregate(values, self.how)

    def _time_of(self, result: dict) -> float | None:
        value = result.get(getattr(self, "_time_attr", None) or "training_iteration")
        return float(value) if isinstance(value, int | float) else None

    def _ends_early(self, time: float | None) -> bool:
        """Whether a stop at `time` is an early stop (not the scheduler's max_t)."""
        most = getattr(self, "_max_t", None) or getattr(self, "_max_t_attr", None)
        return time is None or most is None or time < most

    def _judged(self, trial: Trial, result: dict) -> dict:
        """`result` with its metric replaced by the configuration's aggregate at its time, the
        value recorded in the trial's history first; without it where it is not a number."""
        metric = getattr(self, "_metric", None)
        result = numbers_only(result, metric)
        if not metric or result.get(metric) is None:
            return result
        group, time = self._group(trial), self._time_of(result)
        history = self._seed_state()[0].setdefault(group, {}).setdefault(trial.trial_id, [])
        at = time if time is not None else float(len(history))
        if not history or history[-1][0] != at:
            history.append((at, result[metric]))
        told = self._aggregate_at(group, time)
        return {**result, metric: told} if told is not None else result

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        _, stopped = self._seed_state()
        group = self._group(trial)
        if group in stopped:
            return TrialScheduler.STOP  # a sibling seed was stopped early: the whole configuration
        time = self._time_of(result)
        result = self._judged(trial, result)
        decision = super().on_trial_result(tune_controller, trial, result)
        if decision == TrialScheduler.STOP and self._ends_early(time):
            stopped.add(group)
        return decision

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        # ASHA and the median rule record a finished trial's last result for later comparisons:
        # the aggregate, as every other value they hold.
        super().on_trial_complete(
            tune_controller, trial, self._judged(trial, result) if result else result
        )


class SeededASHA(JudgesBySeeds, ASHAScheduler):
    """ASHA judging configurations by their seeds' aggregate. A rung records a configuration
    once, with its latest aggregate there; each seed reaching the rung judges it again, with
    what its siblings have got to by then, against the other configurations only (recorded per
    trial, a configuration's own partial aggregates would set its bar). Seeds share a bracket.
    The rest is Tune's ASHAScheduler.on_trial_result (Ray 2.60)."""

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        homes: dict[str, Any] = self.__dict__.setdefault("_homes", {})
        group = self._group(trial)
        if group in homes:
            self._trial_info[trial.trial_id] = homes[group]
            return
        super().on_trial_add(tune_controller, trial)
        homes[group] = self._trial_info[trial.trial_id]

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        _, stopped = self._seed_state()
        group = self._group(trial)
        if group in stopped:
            return TrialScheduler.STOP
        result = self._judged(trial, result)
        if self._time_attr not in result or self._metric not in result:
            return TrialScheduler.CONTINUE
        time = result[self._time_attr]
        if time >= self._max_t and self._stop_last_trials:
            return TrialScheduler.STOP
        judged = self.__dict__.setdefault("_judged_at", {}).setdefault(trial.trial_id, set())
        value = self._metric_op * result[self._metric]
        for milestone, recorded in self._trial_info[trial.trial_id]._rungs:  # highest first
            if time < milestone:
                continue
            if milestone in judged:
                break
            judged.add(milestone)
            cutoff = self._trial_info[trial.trial_id].cutoff(
                {k: v for k, v in recorded.items() if k != group}
            )
            recorded[group] = value
            if cutoff is not None and value < cutoff:
                self._num_stopped += 1
                stopped.add(group)
                return TrialScheduler.STOP
            break
        return TrialScheduler.CONTINUE

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        bracket = self._trial_info.pop(trial.trial_id, None)
        if bracket is None or not result:
            return
        result = self._judged(trial, result)
        if self._time_attr in result and self._metric in result:
            group = self._group(trial)
            for milestone, recorded in bracket._rungs:  # as Tune's: the highest rung not yet
                if result[self._time_attr] >= milestone and group not in recorded:  # recorded
                    recorded[group] = self._metric_op * result[self._metric]
                    break

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        self._trial_info.pop(trial.trial_id, None)


class SeededMedian(JudgesBySeeds, SparseMedian):
    """The median stopping rule judging configurations by their seeds' aggregate."""


def _configuration(trial: Trial) -> str:
    """A trial's configuration without its seed: the key its seeds share."""
    return json.dumps(
        {k: v for k, v in trial.config.items() if k != SEED_KEY}, sort_keys=True, default=str
    )


class _SeedsKeptTogether(_FilledOnce):
    """A bracket of configurations, each with all its seeds: HyperBand's counts (how many a
    bracket takes, how many a rung keeps) are of configurations, a seed joins the bracket its
    configuration is in, and a rung keeps or cuts a configuration's seeds together, by their
    aggregate (refreshed by the scheduler before halving, so siblings share it)."""

    def configurations(self) -> set[str]:
        return {_configuration(t) for t in self._all_trials}

    def filled(self) -> bool:
        return len(self.configurations()) >= self._n

    def add_trial(self, trial: Trial) -> None:
        """Also for a seed of a configuration already here, once the bracket is full."""
        self._live_trials[trial] = None
        self._all_trials.append(trial)

    def successive_halving(self, metric: str, metric_op: float) -> tuple[list, list]:
        # Tune's _Bracket.successive_halving (Ray 2.60), counting configurations, not trials.
        if self._halves == 0 and not self.stop_last_trials:
            return list(self._live_trials), []
        assert self._halves > 0
        self._halves -= 1
        self._n = int(np.ceil(self._n / self._eta))
        self._r = int(min(self._r * self._eta, self._max_t_attr))
        self._cumul_r = self._r
        groups: dict[str, list[Trial]] = {}
        for trial in self._live_trials:
            groups.setdefault(_configuration(trial), []).append(trial)

        def judged(trials: list[Trial]) -> float:
            return max(
                metric_op * (self._live_trials[t] or {}).get(metric, -np.inf) for t in trials
            )

        ranked = sorted(groups.values(), key=judged)
        good = [t for trials in ranked[-self._n :] for t in trials]
        bad = [t for trials in ranked[: -self._n] for t in trials]
        return good, bad


class SeededHyperBand(JudgesBySeeds, ResumableHyperBand):
    """HyperBand judging configurations by their seeds' aggregate, its brackets holding whole
    configurations (`_SeedsKeptTogether`). A bracket's trials reach a rung one by one, so each
    was given the aggregate known when it got there: before halving, every one is judged
    again on its configuration's seeds at that rung."""

    bracket_class = _SeedsKeptTogether

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        homes: dict[str, tuple[Any, int]] = self.__dict__.setdefault("_homes", {})
        home = homes.get(_configuration(trial))
        if home is not None and trial.status not in (Trial.TERMINATED, Trial.ERROR):
            home[0].add_trial(trial)  # beside its sibling seeds
            self._trial_info[trial] = home
            return
        super().on_trial_add(tune_controller, trial)
        if trial in self._trial_info:
            homes[_configuration(trial)] = self._trial_info[trial]

    def _process_bracket(self, tune_controller: Any, bracket: Any) -> str:
        live: dict[Trial, dict | None] = bracket._live_trials
        if self._metric and bracket.cur_iter_done():
            for trial, result in list(live.items()):
                if result is not None and self._metric in result:
                    told = self._aggregate_at(self._group(trial), self._time_of(result))
                    if told is not None:
                        live[trial] = {**result, self._metric: told}
        before = dict(live)
        action = super()._process_bracket(tune_controller, bracket)
        stopped = self._seed_state()[1]
        for trial, result in before.items():
            if trial not in live and self._ends_early(self._time_of(result or {})):
                stopped.add(self._group(trial))
        return action
