"""Constraints told to Optuna: each trial's constraint values are set on its Optuna trial
(`Trial.set_constraint`, Optuna 5's way; its samplers that honour constraints, TPE and NSGA-II,
read them from there) just before Tune's OptunaSearch tells the trial's objectives, which is all
Tune tells it.

Private: `OptunaSearch._ot_trials` (Tune trial id -> its Optuna trial), read when a trial ends.
"""

from __future__ import annotations

from collections.abc import Sequence

from ray.tune.search import Searcher

from tune_app.objectives import Limit
from tune_app.ray_internals.wrapping import WrapsSearcher
from tune_app.scoring import finite


class ToldConstraints(WrapsSearcher):
    """Around Tune's OptunaSearch: as a trial ends, how far its last value of each limited key
    lies outside its bounds (<= 0: kept; never reported: broken) is set on its Optuna trial."""

    def __init__(self, searcher: Searcher, limits: Sequence[Limit]) -> None:
        self.limits = tuple(limits)
        super().__init__(searcher)

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        ot_trial = getattr(self.searcher, "_ot_trials", {}).get(trial_id)
        if ot_trial is not None and result:
            for limit in self.limits:
                ot_trial.set_constraint(limit.name, limit.excess(finite(result.get(limit.name))))
        self.searcher.on_trial_complete(trial_id, result=result, error=error)
