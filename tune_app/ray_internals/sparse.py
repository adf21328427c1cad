"""Results without a number for the metric, as every scheduler and searcher takes them: a metric
reported on some iterations only (validation every second epoch, none in a warm-up iteration, an
RLlib iteration in which no episode finished), or as text in some results.

The rule: a result without a number for the metric is skipped, never counted as a value; where a
trial is judged at a point in time (a HyperBand rung, the searcher told how a trial ended), its
latest number stands. What Tune 2.60 did instead, and what changes it here:
- every scheduler multiplies the metric by its mode's sign, so text fails or compares as text:
  `NumbersOnly` hands them the result without it, as if it were missing;
- ASHA and PBT (built with `require_attrs=False`) skip a result without the metric; the median
  rule skips it too, but keeps a trial's final result, and reads its metric later (KeyError):
  `SparseMedian`; HyperBand ranks a rung by each trial's latest result (KeyError):
  `hyperband.ResumableHyperBand`;
- a searcher is told the trial's last result when it ends: HyperOpt raises on one without the
  metric, Optuna marks the trial pruned, and Optuna's `on_trial_result` reads the metric of
  every result (KeyError): `LatestMetric`.
"""

from __future__ import annotations

from typing import Any

from ray.tune.experiment import Trial
from ray.tune.schedulers import ASHAScheduler, MedianStoppingRule, TrialScheduler
from ray.tune.search import Searcher

from tune_app.scoring import number


def numbers_only(result: dict[str, Any], metric: str | None) -> dict[str, Any]:
    """`result` as a scheduler may read it: without the metric where that is not a number (a
    copy then; Tune's own dict goes on to the searcher and the trial as it was)."""
    if not metric or metric not in result or number(result[metric]) is not None:
        return result
    return {k: v for k, v in result.items() if k != metric}


class NumbersOnly(TrialScheduler):
    """Mixed into a scheduler that judges by the metric, before it among the bases: it sees the
    metric only where it is a number. (`seeded`'s schedulers read the metric in their own hooks,
    first: they call `numbers_only` there.)"""

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        return super().on_trial_result(tune_controller, trial, numbers_only(result, self.metric))

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        super().on_trial_complete(tune_controller, trial, numbers_only(result, self.metric))


class SparseASHA(NumbersOnly, ASHAScheduler):
    """Tune's ASHA, seeing the metric only where it is a number (it skips the other results)."""


class SparseMedian(NumbersOnly, MedianStoppingRule):
    """Tune's median stopping rule, seeing the metric only where it is a number, and keeping a
    trial's final result only when it holds one: Tune's keeps it whatever it holds, and every
    later comparison reads its metric (a KeyError that ended the run)."""

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        if number((result or {}).get(self.metric)) is not None:
            super().on_trial_complete(tune_controller, trial, result)


class LatestMetric(Searcher):
    """Wraps a model-based searcher (as Tune's ConcurrencyLimiter does): it sees only results
    holding a number for the metric, and a trial that ends on a result without one is told as
    ending with its latest number, or with nothing (no result) when it never had one."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher: Any = searcher  # a Searcher; BOHB's has on_pause and on_unpause too
        self.latest: dict[str, float] = {}  # trial id -> its metric's latest number
        super().__init__(metric=searcher.metric, mode=searcher.mode)

    @property
    def metric(self) -> str:
        return self.searcher.metric

    @property
    def mode(self) -> str:
        return self.searcher.mode

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: dict, **spec: Any
    ) -> bool:
        return self.searcher.set_search_properties(metric, mode, config, **spec)

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        return self.searcher.set_max_concurrency(max_concurrent)

    def suggest(self, trial_id: str) -> dict | None:
        return self.searcher.suggest(trial_id)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        value = number(result.get(self.metric)) if self.metric else None
        if value is None:
            return
        self.latest[trial_id] = value
        self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        latest = self.latest.pop(trial_id, None)
        metric = self.metric
        if result is not None and metric and number(result.get(metric)) is None:
            result = {**result, metric: latest} if latest is not None else None
        self.searcher.on_trial_complete(trial_id, result=result, error=error)

    def add_evaluated_point(self, *args: Any, **kwargs: Any) -> None:
        self.searcher.add_evaluated_point(*args, **kwargs)

    # Tune saves a wrapper's state apart from the searcher it wraps (SearchGenerator.save_to_dir
    # walks `.searcher`), as it does ConcurrencyLimiter's.
    def get_state(self) -> dict:
        return {"latest": dict(self.latest)}

    def set_state(self, state: dict) -> None:
        self.latest = dict(state.get("latest", {}))

    def save(self, checkpoint_path: str) -> None:
        self.searcher.save(checkpoint_path)

    def restore(self, checkpoint_path: str) -> None:
        self.searcher.restore(checkpoint_path)

    # BOHB's HyperBand tells the searcher which trials it paused.
    def on_pause(self, trial_id: str) -> None:
        self.searcher.on_pause(trial_id)

    def on_unpause(self, trial_id: str) -> None:
        self.searcher.on_unpause(trial_id)
