"""Results without a number for the metric, as every scheduler and searcher takes them: a metric
reported on some iterations only (validation every second epoch, none in a warm-up iteration, an
RLlib iteration in which no episode finished), or as text in some results.

The rule: a result without a number for the metric is skipped, never counted as a value; where a
trial is judged at a point in time (a HyperBand rung, the searcher told how a trial ended), its
latest number stands. What Tune 2.60 did instead, and what changes it here:
- every scheduler multiplies the metric by its mode's sign, so text fails or compares as text:
  `NumbersOnly`, around Tune's scheduler, hands it the result without it, as if it were missing;
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
from ray.tune.schedulers import ASHAScheduler, MedianStoppingRule
from ray.tune.search import Searcher

from tune_app.ray_internals.wrapping import Wraps, WrapsSearcher
from tune_app.scoring import number


def numbers_only(result: dict[str, Any], metric: str | None) -> dict[str, Any]:
    """`result` as a scheduler may read it: without the metric where that is not a number (a
    copy then; Tune's own dict goes on to the searcher and the trial as it was)."""
    if not metric or metric not in result or number(result[metric]) is not None:
        return result
    return {k: v for k, v in result.items() if k != metric}


class NumbersOnly(Wraps):
    """Around a scheduler that judges by the metric: it sees the metric only where it is a
    number. (`seeded`'s wrappers read the metric first, in their own hooks: they call
    `numbers_only` there.)"""

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        return self.inner.on_trial_result(tune_controller, trial, numbers_only(result, self.metric))

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        self.inner.on_trial_complete(tune_controller, trial, numbers_only(result, self.metric))


class SparseASHA(NumbersOnly):
    """Tune's ASHA, seeing the metric only where it is a number (it skips the other results)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(ASHAScheduler(**options))


class SparseMedian(NumbersOnly):
    """Tune's median stopping rule, seeing the metric only where it is a number, and told of a
    trial's final result only when it holds one: Tune's keeps it whatever it holds, and every
    later comparison reads its metric (a KeyError that ended the run)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(MedianStoppingRule(**options))

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        if number((result or {}).get(self.metric)) is not None:
            super().on_trial_complete(tune_controller, trial, result)


class LatestMetric(WrapsSearcher):
    """Wraps a model-based searcher: it sees only results holding a number for the metric (for
    each of its metrics, when it holds several objectives), and a trial that ends on a result
    without one is told as ending with its latest number, or with nothing (no result) when it
    never had one."""

    def __init__(self, searcher: Searcher) -> None:
        self.latest: dict[str, dict[str, float]] = {}  # trial id -> each metric's latest number
        super().__init__(searcher)

    def _keys(self) -> list[str]:
        """The metrics it is told: one, or several objectives (Tune's OptunaSearch)."""
        metric: Any = self.metric
        return list(metric) if isinstance(metric, list | tuple) else [metric] if metric else []

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        values = {k: number(result.get(k)) for k in self._keys()}
        found = {k: v for k, v in values.items() if v is not None}
        if not values or len(found) < len(values):
            self.latest.setdefault(trial_id, {}).update(found)
            return
        self.latest[trial_id] = found
        self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        latest = self.latest.pop(trial_id, {})
        if result is not None:
            for key in self._keys():
                if number(result.get(key)) is not None:
                    continue
                if key not in latest:
                    result = None
                    break
                result = {**result, key: latest[key]}
        self.searcher.on_trial_complete(trial_id, result=result, error=error)

    def get_state(self) -> dict:
        return {"latest": {k: dict(v) for k, v in self.latest.items()}}

    def set_state(self, state: dict) -> None:
        keys = self._keys()
        self.latest = {}
        for trial_id, held in state.get("latest", {}).items():
            # A state saved before several objectives held each trial's one number.
            self.latest[trial_id] = dict(held) if isinstance(held, dict) else {keys[0]: held}
