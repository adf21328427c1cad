"""HyperBand that finishes a resumed search and fills each bracket once.

Tune saves trials but not HyperBand's brackets: on resume it adds every trial back to a fresh
scheduler, finished ones included. A bracket holding a finished trial waits forever for it to
reach the next milestone, so the paused trials of that bracket are never resumed and the search
hangs. Here finished trials join no bracket; unfinished ones (paused or running when the run
stopped) start new brackets and continue from their checkpoints. Pickled with the Tuner, so the
same class runs the resume.

A rung is judged on each trial's latest number for the metric, where the trial's result at the
rung has none (a metric reported every other iteration), and a trial that never had one ranks
last; Tune's halving read the metric of each trial's latest result, and failed without it.

Tune also counts a bracket as full only while its trials are alive. When trials are made as
others end (BOHB's searcher makes them so, and so does any searcher under a concurrency limit),
the bracket that runs its trials to max_t never fills: it takes every later trial, and the rest
of the search is random search at full length (ray-project/ray#12536). Here a bracket is full
once it has been given its trials.
"""

from __future__ import annotations

import math
from typing import Any

from ray.tune.experiment import Trial
from ray.tune.schedulers import HyperBandForBOHB, HyperBandScheduler
from ray.tune.schedulers.hyperband import _Bracket

from tune_app.ray_internals.sparse import NumbersOnly, numbers_only
from tune_app.scoring import number


class _FilledOnce(_Bracket):
    """A bracket that is full once it was given its trials, ended ones included; a trial without
    a number for the metric at a rung ranks last."""

    def filled(self) -> bool:
        return len(self._all_trials) >= self._n

    def successive_halving(self, metric: str, metric_op: float) -> tuple[list, list]:
        for trial, result in self._live_trials.items():
            if result is not None and number(result.get(metric)) is None:
                self._live_trials[trial] = {**result, metric: -metric_op * math.inf}
        return super().successive_halving(metric, metric_op)


class _FinishedTrialsStayOut(NumbersOnly, HyperBandScheduler):
    """Brackets hold only trials that can still report, and fill once; a trial is judged on its
    latest number for the metric (mixed into Tune's HyperBands)."""

    bracket_class: type[_FilledOnce] = _FilledOnce

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        # The bracket keeps the result it is given as the trial's state at the rung: without a
        # number, a copy with the trial's latest. A copy, not Tune's dict: BOHB's HyperBand marks
        # a rung's budget on the dict it is given for its searcher to learn from, and a rung
        # without a number teaches the searcher nothing (`sparse.LatestMetric` skips it).
        latest: dict[str, Any] = self.__dict__.setdefault("_latest_numbers", {})
        result = numbers_only(result, self._metric)
        if self._metric in result:
            latest[trial.trial_id] = result[self._metric]
        elif trial.trial_id in latest:
            result = {**result, self._metric: latest[trial.trial_id]}
        return super().on_trial_result(tune_controller, trial, result)

    def _create_bracket(self, s: int) -> _Bracket:
        return self.bracket_class(
            time_attr=self._time_attr,
            max_trials=self._get_n0(s),
            init_t_attr=self._get_r0(s),
            max_t_attr=self._max_t_attr,
            eta=self._eta,
            s=s,
            stop_last_trials=self._stop_last_trials,
        )

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        if trial.status in (Trial.TERMINATED, Trial.ERROR):
            return  # ended before the interruption: no bracket may wait on it
        super().on_trial_add(tune_controller, trial)

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        if trial in self._trial_info:
            super().on_trial_remove(tune_controller, trial)

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        if trial in self._trial_info:
            super().on_trial_complete(tune_controller, trial, result)

    def on_trial_error(self, tune_controller: Any, trial: Trial) -> None:
        if trial in self._trial_info:
            super().on_trial_error(tune_controller, trial)


class ResumableHyperBand(_FinishedTrialsStayOut, HyperBandScheduler):
    """Tune's HyperBandScheduler whose brackets hold only trials that can still report and
    fill once."""


class ResumableHyperBandForBOHB(_FinishedTrialsStayOut, HyperBandForBOHB):
    """Tune's HyperBand for BOHB, likewise."""
