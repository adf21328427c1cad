"""Constraints told to Optuna: its samplers (TPE, NSGA-II) take a constraints function of a
finished trial, which reads values the trial carries; Tune's OptunaSearch tells Optuna only the
objectives. `ToldConstraints`, around Tune's OptunaSearch, sets each trial's constraint values
on its Optuna trial (a user attribute) just before the trial is told, and `constraint_values` is
the function the sampler is given.

Private: `OptunaSearch._ot_trials` (Tune trial id -> its Optuna trial), read when a trial ends.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ray.tune.search import Searcher

from tune_app.objectives import Limit
from tune_app.ray_internals.wrapping import WrapsSearcher
from tune_app.scoring import finite

# The Optuna trial's user attribute holding its constraint values (<= 0: kept).
ATTRIBUTE = "tune_app_constraints"


def _values(count: int, trial: Any) -> Sequence[float]:
    # A trial told without them (pruned before any result): broken, as Optuna counts it.
    return trial.user_attrs.get(ATTRIBUTE) or [1.0] * count


def constraint_values(limits: Sequence[Limit]) -> Callable[[Any], Sequence[float]]:
    """Optuna's constraints function for `limits`: a frozen trial to one value per limit
    (<= 0 when kept). A module function, so the sampler pickles with Tune's search state."""
    return functools.partial(_values, len(limits))


class ToldConstraints(WrapsSearcher):
    """Around Tune's OptunaSearch: a trial's last value of each limited key is set on its Optuna
    trial as it ends, for the sampler's constraints function."""

    def __init__(self, searcher: Searcher, limits: Sequence[Limit]) -> None:
        self.limits = tuple(limits)
        super().__init__(searcher)

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        ot_trial = getattr(self.searcher, "_ot_trials", {}).get(trial_id)
        if ot_trial is not None and result:
            values = [lim.excess(finite(result.get(lim.name))) for lim in self.limits]
            ot_trial.set_user_attr(ATTRIBUTE, values)
        self.searcher.on_trial_complete(trial_id, result=result, error=error)
