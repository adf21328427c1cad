"""A scheduler or searcher that holds Tune's, unmodified, and hands it every call: what the app
changes about one (results without a number, a configuration's seeds judged together, brackets
of a resumed HyperBand, values searched by index) is a wrapper around it, as Tune's
`ConcurrencyLimiter` and `Repeater` wrap a searcher, not a subclass overriding Tune's methods."""

from __future__ import annotations

import inspect
from typing import Any

from ray.tune.experiment import Trial
from ray.tune.schedulers import TrialScheduler
from ray.tune.search import Searcher


class Wraps(TrialScheduler):
    """Hands every hook to `inner` as it came; a variant overrides the hooks it changes. Reads of
    anything else (the inner's tables, for its debug string and the tests) reach the inner."""

    def __init__(self, inner: TrialScheduler) -> None:
        self.inner = inner
        super().__init__()

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("inner")
        if inner is None or name.startswith("__"):  # unpickling asks before `inner` is set
            raise AttributeError(name)
        return getattr(inner, name)

    @property
    def tune(self) -> Any:
        """Tune's own scheduler, under every wrapper (Any: the wrappers read its tables)."""
        inner = self.inner
        while isinstance(inner, Wraps):
            inner = inner.inner
        return inner

    @property
    def metric(self) -> str | None:
        return self.inner.metric

    @property
    def supports_buffered_results(self) -> bool:
        return self.inner.supports_buffered_results

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        return self.inner.set_search_properties(metric, mode, **spec)

    def on_trial_add(self, tune_controller: Any, trial: Trial) -> None:
        self.inner.on_trial_add(tune_controller, trial)

    def on_trial_error(self, tune_controller: Any, trial: Trial) -> None:
        self.inner.on_trial_error(tune_controller, trial)

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        return self.inner.on_trial_result(tune_controller, trial, result)

    def on_trial_complete(self, tune_controller: Any, trial: Trial, result: dict) -> None:
        self.inner.on_trial_complete(tune_controller, trial, result)

    def on_trial_remove(self, tune_controller: Any, trial: Trial) -> None:
        self.inner.on_trial_remove(tune_controller, trial)

    def choose_trial_to_run(self, tune_controller: Any) -> Trial | None:
        return self.inner.choose_trial_to_run(tune_controller)

    def debug_string(self) -> str:
        return self.inner.debug_string()

    def save(self, checkpoint_path: str) -> None:
        self.inner.save(checkpoint_path)

    def restore(self, checkpoint_path: str) -> None:
        self.inner.restore(checkpoint_path)


class SkipsEnded(Wraps):
    """Hands the scheduler's choice of a trial to run a view of the trials without those at the
    front that ended: every scheduler here chooses among pending and paused trials, and Tune's
    FIFO (ASHA's and the median's too) and PBT read the search's whole list of trials at every
    choice, from its first trial on. A search of 10,000 short trials then spent a time that
    grew with the trials already finished on each trial it started. A trial that ended runs no
    more in this controller (TERMINATED; ERROR too: a trial retried after a failure is made
    PENDING within the call that records it): the view starts after the first run of them,
    kept as a count that only grows."""

    def __init__(self, inner: TrialScheduler) -> None:
        super().__init__(inner)
        self.ended = 0  # the trials at the front of the controller's list that ended

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A restored search may hold its trials in another order, or run an ended one again.
        self.__dict__.update(state, ended=0)

    def choose_trial_to_run(self, tune_controller: Any) -> Trial | None:
        trials = tune_controller.get_trials()
        while self.ended < len(trials) and trials[self.ended].status in ENDED:
            self.ended += 1
        view: Any = _TrialsFrom(tune_controller, trials, self.ended)
        return self.inner.choose_trial_to_run(view if self.ended else tune_controller)


ENDED = (Trial.TERMINATED, Trial.ERROR)  # a trial that will run no more


class _TrialsFrom:
    """A controller whose `get_trials` starts at `start`; anything else is the controller's."""

    def __init__(self, controller: Any, trials: list[Trial], start: int) -> None:
        self._controller, self._trials, self._start = controller, trials, start

    def get_trials(self) -> list[Trial]:
        return self._trials[self._start :]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._controller, name)


def option(cls: type, options: dict[str, Any], name: str) -> Any:
    """The value of constructor option `name` that `cls(**options)` runs with: the one given, or
    the constructor's default."""
    if name in options:
        return options[name]
    return inspect.signature(cls).parameters[name].default


class WrapsSearcher(Searcher):
    """Hands every call to `searcher` as it came (as Tune's `ConcurrencyLimiter` does); a variant
    overrides the calls it changes. Tune saves a wrapper's state (`get_state`) apart from the
    searcher it wraps: `SearchGenerator.save_to_dir` walks `.searcher`, by class name."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher: Any = searcher  # a Searcher; BOHB's has on_pause and on_unpause too
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
        self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(
        self, trial_id: str, result: dict | None = None, error: bool = False
    ) -> None:
        self.searcher.on_trial_complete(trial_id, result=result, error=error)

    def add_evaluated_point(self, *args: Any, **kwargs: Any) -> None:
        self.searcher.add_evaluated_point(*args, **kwargs)

    def get_state(self) -> dict:
        return {}

    def set_state(self, state: dict) -> None:
        pass

    def save(self, checkpoint_path: str) -> None:
        self.searcher.save(checkpoint_path)

    def restore(self, checkpoint_path: str) -> None:
        self.searcher.restore(checkpoint_path)

    # BOHB's HyperBand tells the searcher which trials it paused.
    def on_pause(self, trial_id: str) -> None:
        self.searcher.on_pause(trial_id)

    def on_unpause(self, trial_id: str) -> None:
        self.searcher.on_unpause(trial_id)
