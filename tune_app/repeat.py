"""Searchers and schedulers on seeds (see `seeds`): a model-based searcher suggests each
configuration once, it runs once per seed, and the searcher is told the configuration's
aggregate; an early-stopping scheduler sees each result's metric as the aggregate of that
configuration's seeds so far."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from ray.tune.experiment import Trial
from ray.tune.schedulers import ASHAScheduler, MedianStoppingRule, TrialScheduler
from ray.tune.search import Repeater
from ray.tune.search.repeater import TRIAL_INDEX

from tune_app.hyperband import ResumableHyperBand, _FilledOnce
from tune_app.seeds import SEED_KEY, aggregate


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
        value recorded in the trial's history first."""
        metric = getattr(self, "_metric", None)
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
    """ASHA judging configurations by their seeds' aggregate."""


class SeededMedian(JudgesBySeeds, MedianStoppingRule):
    """The median stopping rule judging configurations by their seeds' aggregate."""


def _configuration(trial: Trial) -> str:
    """A trial's configuration without its seed: the key its seeds share."""
    return json.dumps(
        {k: v for k, v in trial.config.items() if k != SEED_KEY}, sort_keys=True, default=str
    )


class _SeedsKeptTogether(_FilledOnce):
    """A bracket whose halving keeps a configuration's seeds together: the seeds of a
    configuration cut at the boundary of the kept share are kept with their siblings (its
    trials, not its configurations, are what HyperBand counts)."""

    def successive_halving(self, metric: str, metric_op: float) -> tuple[list, list]:
        good, bad = super().successive_halving(metric, metric_op)
        kept = {_configuration(t) for t in good}
        return list(good) + [t for t in bad if _configuration(t) in kept], [
            t for t in bad if _configuration(t) not in kept
        ]


class SeededHyperBand(JudgesBySeeds, ResumableHyperBand):
    """HyperBand judging configurations by their seeds' aggregate. A bracket's trials reach a
    rung one by one, so each was given the aggregate known when it got there: before halving,
    every one is judged again on its configuration's seeds at that rung, and the
    configurations it stops early are stopped whole."""

    bracket_class = _SeedsKeptTogether

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


SEEDED = {"asha": SeededASHA, "median": SeededMedian, "hyperband": SeededHyperBand}
