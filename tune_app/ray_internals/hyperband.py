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

Tune pauses a trial by saving it first, and the trial is RUNNING until the save returns. A
finished bracket stopped only its PAUSED trials, so a trial whose save returned afterwards stayed
PAUSED, with no bracket left to resume it, and the search hung. Here a finished bracket stops its
trials that are saving too, as Tune's halving already stops its bad ones.

Each is a wrapper around Tune's HyperBandScheduler (or HyperBandForBOHB), unmodified; only the
bracket is a subclass of Tune's `_Bracket`, for Tune has no hook to choose a bracket's class.
"""

from __future__ import annotations

import math
from typing import Any

from ray.tune.experiment import Trial
from ray.tune.schedulers import HyperBandForBOHB, HyperBandScheduler, TrialScheduler
from ray.tune.schedulers.hyperband import _Bracket

from tune_app.ray_internals.sparse import numbers_only
from tune_app.ray_internals.wrapping import ENDED, Wraps
from tune_app.scoring import number


# A subclass: Tune's HyperBand makes its brackets itself (`_create_bracket`), with no hook.
class FilledOnce(_Bracket):
    """A bracket that is full once it was given its trials, ended ones included; a trial without
    a number for the metric at a rung ranks last; a finished bracket stops its saving trials."""

    def filled(self) -> bool:
        return len(self._all_trials) >= self._n

    def successive_halving(self, metric: str, metric_op: float) -> tuple[list, list]:
        for trial, result in self._live_trials.items():
            if result is not None and number(result.get(metric)) is None:
                self._live_trials[trial] = {**result, metric: -metric_op * math.inf}
        return super().successive_halving(metric, metric_op)

    def cleanup_full(self, tune_controller: Any) -> None:
        for trial in self.current_trials():
            if trial.status == Trial.PAUSED or trial.is_saving:
                tune_controller.stop_trial(trial)


class ResumableHyperBand(Wraps):
    """Tune's HyperBand (or, with `inner`, HyperBand for BOHB) whose brackets hold only trials
    that can still report, and fill once; a trial is judged on its latest number for the
    metric."""

    def __init__(
        self,
        inner: TrialScheduler | None = None,
        bracket_class: type[FilledOnce] = FilledOnce,
        **options: Any,
    ) -> None:
        super().__init__(inner if inner is not None else HyperBandScheduler(**options))
        self.bracket_class = bracket_class
        self.latest: dict[str, float] = {}  # trial id -> its metric's latest number

    def bracket_of(self, trial: Trial) -> _Bracket | None:
        """The bracket `trial` is in, or None."""
        home = self.tune._trial_info.get(trial)
        return home[0] if home is not None else None

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        if trial.status in ENDED:
            return  # ended before the interruption: no bracket may wait on it
        self.inner.on_trial_add(tune_controller, trial)
        bracket = self.bracket_of(trial)
        if bracket is not None and not isinstance(bracket, self.bracket_class):
            bracket.__class__ = self.bracket_class  # made by Tune's HyperBand just now

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        # The bracket keeps the result it is given as the trial's state at the rung: without a
        # number, a copy with the trial's latest. A copy, not Tune's dict: BOHB's HyperBand marks
        # a rung's budget on the dict it is given for its searcher to learn from, and a rung
        # without a number teaches the searcher nothing (`sparse.LatestMetric` skips it).
        metric = self.metric
        result = numbers_only(result, metric)
        if metric in result:
            self.latest[trial.trial_id] = result[metric]
        elif metric and trial.trial_id in self.latest:
            result = {**result, metric: self.latest[trial.trial_id]}
        return self.inner.on_trial_result(tune_controller, trial, result)

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        if self.bracket_of(trial) is not None:
            self.inner.on_trial_remove(tune_controller, trial)

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        if self.bracket_of(trial) is not None:
            self.inner.on_trial_complete(tune_controller, trial, result)

    def on_trial_error(self, tune_controller: Any, trial: Trial) -> None:
        if self.bracket_of(trial) is not None:
            self.inner.on_trial_error(tune_controller, trial)


class ResumableHyperBandForBOHB(ResumableHyperBand):
    """Tune's HyperBand for BOHB, likewise."""

    def __init__(self, **options: Any) -> None:
        super().__init__(HyperBandForBOHB(**options))


# The names runs saved before these were public pickled (saved_state.PICKLED_NAMES).
_FilledOnce = FilledOnce
