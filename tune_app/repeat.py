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

from tune_app.hyperband import ResumableHyperBand
from tune_app.seeds import SEED_KEY, aggregate


class SeedRepeater(Repeater):
    """Tune's Repeater with the seed in `config["seed"]` and the spec's aggregate (mean, iqm or
    median) instead of Repeater's fixed mean."""

    def __init__(self, searcher: Any, seeds: Sequence[int], how: str) -> None:
        super().__init__(searcher, repeat=len(seeds), set_index=True)
        self.seeds = list(seeds)
        self.how = how

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
        value = (result or {}).get(metric)
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
    """Mixed into a scheduler: each result's metric is replaced by the aggregate of the latest
    values of every seed of the same configuration so far, so the seeds of a configuration are
    stopped, paused or kept together, by the configuration's aggregate, not one seed's luck."""

    how: str = "mean"

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        metric = getattr(self, "_metric", None)
        if metric and metric in result and result[metric] is not None:
            group = json.dumps(
                {k: v for k, v in trial.config.items() if k != SEED_KEY},
                sort_keys=True,
                default=str,
            )
            latest = self.__dict__.setdefault("_seed_latest", {}).setdefault(group, {})
            latest[trial.trial_id] = result[metric]
            told = aggregate(list(latest.values()), self.how)
            if told is not None:
                result = {**result, metric: told}
        return super().on_trial_result(tune_controller, trial, result)


class SeededASHA(JudgesBySeeds, ASHAScheduler):
    """ASHA judging configurations by their seeds' aggregate."""


class SeededMedian(JudgesBySeeds, MedianStoppingRule):
    """The median stopping rule judging configurations by their seeds' aggregate."""


class SeededHyperBand(JudgesBySeeds, ResumableHyperBand):
    """HyperBand judging configurations by their seeds' aggregate."""


SEEDED = {"asha": SeededASHA, "median": SeededMedian, "hyperband": SeededHyperBand}
