"""`result_timeout_s`: a running trial that reports nothing for that long fails.

Tune checks stop criteria (`time_total_s` included) only when a result arrives, and has no limit
on the time between results, so a trial that hangs (a deadlock, a simulator that never returns)
would hold its CPUs until someone kills the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ray.tune import Callback
from ray.tune.experiment import Trial

from tune_app import failures
from tune_app.ray_internals.actors import kill_trial_actor


class ResultTimeout(Callback):
    """Fails a RUNNING trial that reported no result for `limit_s` seconds: its process is killed,
    which Tune handles as any dead worker (retried from its last checkpoint under max_failures, or
    ERROR), and the failure is recorded as `NoResultError` "no result for N s" in the files Tune
    keeps for it, so the summary, `analyze` and `report` name that cause, not "killed".

    The clock starts when the trial's process is ready (Tune's `on_trial_start`: a first start, a
    retry, a paused trial resumed) and again at each result. Only RUNNING trials are watched: one
    pending for resources, being set up (an RLlib algorithm building its env runners), or paused
    by a scheduler (HyperBand, PBT) is not silent. Checked at each step of Tune's loop (a step
    waits at most 0.1 s for an event), so a trial fails within a fraction of a second of the limit.

    Must come before callbacks that read the failure (`progress`), which Tune calls in order.
    """

    def __init__(
        self,
        limit_s: float,
        clock: Callable[[], float] = time.monotonic,
        kill: Callable[[Any], bool] = kill_trial_actor,
    ) -> None:
        self.limit_s = limit_s
        self._clock = clock
        self._kill = kill
        self._since: dict[str, tuple[Any, float]] = {}  # trial id -> (trial, last start or result)
        self._ended: set[str] = set()  # killed here, their failure not yet recorded

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._since[trial.trial_id] = (trial, self._clock())
        self._ended.discard(trial.trial_id)

    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        if trial.trial_id in self._since:
            self._since[trial.trial_id] = (trial, self._clock())

    def on_step_begin(self, iteration: int, trials: list, **info: Any) -> None:
        now = self._clock()
        for trial_id, (trial, since) in list(self._since.items()):
            if now - since < self.limit_s or trial.status != Trial.RUNNING:
                continue
            if trial_id not in self._ended and self._kill(trial):
                self._ended.add(trial_id)

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._since.pop(trial.trial_id, None)
        self._ended.discard(trial.trial_id)

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        """A failed trial leaves the watch until it starts again; if it failed because it was
        killed here, its failure is recorded as what it was."""
        self._since.pop(trial.trial_id, None)
        if trial.trial_id not in self._ended:
            return
        self._ended.discard(trial.trial_id)
        if trial.error_file:
            failures.record_failure(
                trial.error_file, trial.pickled_error_file, failures.no_result(self.limit_s)
            )

    on_trial_error = on_trial_recover  # a trial that failed for good (no retry left): alike

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its callbacks for resume; the trials and clock readings stay here.
        return {**self.__dict__, "_since": {}, "_ended": set()}
