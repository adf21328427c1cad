"""The Tune side of a tracker: a `LoggerCallback` that hands each trial's start, results and end
to the tracker's `Mirror` and returns at once. Tune's own MLflow and W&B callbacks are not
used: they call the tracker in the driver's loop (a frozen server held every result for
MLflow's HTTP timeout), start a new run for every trial start, and W&B's writes each trial's run
from a Ray actor that Tune kills as soon as the trial ends (runs left empty, in trial folders).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ray.tune.logger import LoggerCallback

from tune_app.callbacks import located
from tune_app.trackers.mirror import LIVE, Mirror, mirror_for, target_of

if TYPE_CHECKING:
    from tune_app.plan.types import ExperimentPlan


class TrackerLog(LoggerCallback):
    """One tracker of one experiment, fed off the driver's critical path."""

    def __init__(self, sink: str, options: Any, ep: ExperimentPlan) -> None:
        self.sink = sink
        self.options = options
        self.target = target_of(ep)
        self.folder = ep.folder
        self.mirror: Mirror | None = None

    def setup(self, *args: Any, **kwargs: Any) -> None:
        # Its run folder where it is now (a resumed run's may have moved): `__setstate__`.
        folder = self.folder
        target = replace(
            self.target, results=folder.results, spec=folder.spec, summary=folder.summary
        )
        self.mirror = mirror_for(self.sink, self.options, target)
        LIVE[(self.sink, target.experiment)] = self.mirror

    def log_trial_start(self, trial: Any) -> None:
        if self.mirror is not None:
            self.mirror.start(trial.trial_id, trial.config)

    def log_trial_result(self, iteration: int, trial: Any, result: dict) -> None:
        if self.mirror is not None:
            self.mirror.result(trial.trial_id, trial.config, result)

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        if self.mirror is not None:
            self.mirror.end(trial.trial_id, failed, trial.local_path)

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        if self.mirror is not None:
            self.mirror.reconcile()

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its callbacks for resume; the worker is started again by `setup`.
        return {**self.__dict__, "mirror": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Tune restores this callback from the run's pickle on resume: the folder may have moved.
        state["folder"] = located(state["target"].experiment, state["folder"])
        self.__dict__.update(state)
