"""HyperBand that finishes a resumed search.

Tune saves trials but not HyperBand's brackets: on resume it adds every trial back to a fresh
scheduler, finished ones included. A bracket holding a finished trial waits forever for it to
reach the next milestone, so the paused trials of that bracket are never resumed and the search
hangs. Here finished trials join no bracket; unfinished ones (paused or running when the run
stopped) start new brackets and continue from their checkpoints. Pickled with the Tuner, so the
same class runs the resume.
"""

from __future__ import annotations

from typing import Any

from ray.tune.experiment import Trial
from ray.tune.schedulers import HyperBandForBOHB, HyperBandScheduler

RESUME_NOTE = (
    "Tune does not save HyperBand's brackets: the unfinished trials continue from their "
    "checkpoints in new brackets, finished trials stay as they are"
)


class _FinishedTrialsStayOut(HyperBandScheduler):
    """Brackets hold only trials that can still report (mixed into Tune's HyperBands)."""

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
    """Tune's HyperBandScheduler whose brackets hold only trials that can still report."""


class ResumableHyperBandForBOHB(_FinishedTrialsStayOut, HyperBandForBOHB):
    """Tune's HyperBand for BOHB, likewise."""
