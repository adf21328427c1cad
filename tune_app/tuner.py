"""Building one experiment's Tuner from its plan: the param space, searcher, scheduler, stopper
and callbacks, and how often Tune saves its state."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from ray import tune
from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback
from ray.tune.search import Searcher
from ray.tune.stopper import CombinedStopper

from tune_app import progress
from tune_app.callbacks import JsonlResults, PlainNumbers, SameFailures, TrialLogsFollowResults
from tune_app.divergence import diverged
from tune_app.kinds.saving import saves_checkpoints
from tune_app.methods import Context, scheduler_of, searcher_of
from tune_app.plan.types import ExperimentPlan
from tune_app.ray_internals.buffering import WINDOW_S
from tune_app.ray_internals.replacing import environment
from tune_app.ray_internals.wrapping import SkipsEnded
from tune_app.rllib.tables import RESULT_GROUPS
from tune_app.rundir.outcome import flatten_result
from tune_app.scoring import number
from tune_app.seeds import wrappers as seeded
from tune_app.space import to_tune
from tune_app.tensorboard import TrialBoard
from tune_app.timeouts import ResultTimeout
from tune_app.trackers.run import callbacks_for

# A user's own TUNE_GLOBAL_CHECKPOINT_S wins over the app's choice.
_USER_STATE_PERIOD = os.environ.get("TUNE_GLOBAL_CHECKPOINT_S")


def state_period(ep: ExperimentPlan) -> str:
    """How often Tune saves its experiment state. Its default ("auto": 10 s, or 19 times what
    the last save took) makes a killed driver resume trials from checkpoints up to that old: the
    app saves every second while the state is small, up to 10 s at 1,000 trials. From there on
    Tune's own rule: a save writes every trial's state (10 KB each), 1.2 s at 10,000 trials, and
    every 10 s that took a share of the driver that grew with the trials. RLlib trials keep
    Tune's default: their large configs make each save cost CPU the trials need (about 17% of
    PPO's sampling on 2 cores, saving every second)."""
    if _USER_STATE_PERIOD:
        return _USER_STATE_PERIOD
    if not ep.trainable.kind.frequent_state_saves or ep.trials >= STATE_AUTO_FROM:
        return "auto"
    return f"{max(1.0, ep.trials / 100):g}"


STATE_AUTO_FROM = 1000  # trials from which Tune's own period (10 s at least) takes over


def build_tuner(
    ep: ExperimentPlan,
    trainable: Any,
    space: dict[str, Any],
    verbosity: int,
    together: tuple[ExperimentPlan, ...] = (),
) -> tune.Tuner:
    """A new Tuner for `ep`: `trainable` sized to its bundles, on `space` (`param_space`);
    `together`: the experiments run with it (TensorBoard's HParams columns of them all)."""
    exp, kind = ep.experiment, ep.trainable.kind
    # The scheduler's time_attr too: misspelt, PBT never perturbs and ASHA never stops a trial.
    clock = getattr(exp.scheduler, "time_attr", None)
    stopper = SpecStopper(
        exp.stop, ep.ranked_by, late=kind.reports_late, also=(clock,) if clock else ()
    )
    # Trials failing alike before any reports end the search: seen as a callback (Tune tells
    # stoppers of no error), ended as a stopper (only a stopper's stop_all ends a search).
    guard = SameFailures.allowing(exp.expect.max_errored_trials)
    return tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(
            metric=ep.metric,
            mode=ep.mode,
            search_alg=_searcher(ep, space),
            scheduler=_scheduler(ep),
            # A searcher repeated on seeds: one suggestion per configuration, one trial per seed.
            # A grid warm-started: each grid point left is one sample (`WarmStart.samples`).
            num_samples=_samples(ep) * (_repeats(ep) or 1),
            max_concurrent_trials=(
                exp.max_concurrent_trials if searcher_of(exp.search).limits_concurrency else None
            ),
            # A fresh trial process costs 1.5-2 s; trainables that reset cleanly are reused.
            # RLlib algorithms cannot reset their env runners to a new config.
            reuse_actors=kind.reuses_actors and resets_cleanly(trainable),
            # Checked at every step of Tune's loop, not at results, so it ends hung trials too
            # (Tune kills a process that does not stop within 10 s: a 4 s budget, 14 s).
            time_budget_s=exp.time_budget_s,
        ),
        run_config=tune.RunConfig(
            name=ep.folder.name,  # a re-run's folder is `<name>_<n>`
            storage_path=ep.folder.parent,
            stop=CombinedStopper(stopper, guard),
            callbacks=[*_callbacks(ep, together), guard],
            failure_config=tune.FailureConfig(
                max_failures=exp.max_failures, fail_fast=exp.fail_fast
            ),
            log_to_file=exp.log_to_file,
            # Tune writes the log files in the trial's working folder under Ray's session; as
            # artifacts they reach the trial's own folder.
            sync_config=tune.SyncConfig(sync_artifacts=bool(exp.log_to_file)),
            checkpoint_config=tune.CheckpointConfig(
                num_to_keep=exp.checkpoint.num_to_keep,
                checkpoint_score_attribute=exp.checkpoint.checkpoint_score_attribute,
                checkpoint_score_order=exp.checkpoint.checkpoint_score_order,
                # Function trainables checkpoint themselves (the plan refuses these for them).
                checkpoint_frequency=exp.checkpoint.checkpoint_frequency,
                checkpoint_at_end=_checkpoint_at_end(ep, trainable),
            ),
            verbose=2 if verbosity >= 2 else 0,
        ),
    )


def _checkpoint_at_end(ep: ExperimentPlan, trainable: Any) -> bool | None:
    """The spec's checkpoint_at_end; unset, Tune's default (on for classes, off for functions),
    except for a `tune.Trainable` class that saves no checkpoints: Tune would call its
    save_checkpoint at every trial's end, and fail the trial."""
    asked = ep.experiment.checkpoint.checkpoint_at_end
    if asked is None and saves_checkpoints(trainable) is False:
        return False
    return asked


def resets_cleanly(trainable: Any) -> bool:
    """Whether Tune may hand a trial's process to the next trial: a function trainable resets
    itself; a `tune.Trainable` class only if it overrides `reset_config` (Tune's own returns
    False, and a reused actor's trial then fails)."""
    if isinstance(trainable, type) and issubclass(trainable, tune.Trainable):
        return trainable.reset_config is not tune.Trainable.reset_config
    return True


# Tune's documented switch, read as a Tuner fits: with it on, Tune adds none of its CSV, JSON and
# TensorBoard loggers to the callbacks given.
AUTO_LOGGERS_ENV = "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"


@contextlib.contextmanager
def given_loggers_only() -> Iterator[None]:
    """While this holds (a Tuner's fit), Tune adds no logger of its own: `_callbacks` gives
    all three, TrialBoard in place of Tune's TensorBoard logger (which writes every key under
    `ray/tune/`). The environment is as it was afterwards."""
    with environment({AUTO_LOGGERS_ENV: "1"}):
        yield


def _callbacks(
    ep: ExperimentPlan, together: tuple[ExperimentPlan, ...] = ()
) -> list[tune.Callback]:
    # The CSV and JSON loggers are given here, whatever the environment says: Tune's results,
    # and the app, read their files back. Tune adds none while `given_loggers_only` holds.
    callbacks: list[tune.Callback] = [PlainNumbers()]  # first: the others read its numbers
    if ep.experiment.result_timeout_s is not None:
        # Next: it records why the trials it fails failed, which the others read. Buffered
        # results reach the driver up to a gathering window late.
        late = WINDOW_S if ep.experiment.buffered else 0
        callbacks.append(ResultTimeout(ep.experiment.result_timeout_s + late))
    callbacks += [
        JsonlResults(ep.folder, ep.name),
        TrialBoard.for_experiment(ep, together),
        TrialLogsFollowResults(),  # before the CSV and JSON loggers, which append
        CSVLoggerCallback(),
        JsonLoggerCallback(),
    ]
    callbacks += callbacks_for(ep)
    callbacks.append(
        progress.ProgressCallback(
            ep.name,
            ep.metric,
            ep.mode,
            ep.searched,
            ep.stop_iterations,
            scope=ep.experiment.scope,
            folder=ep.folder,
            output=ep.experiment.log_to_file,
            budget_s=ep.experiment.time_budget_s,
            several=ep.experiment.objectives,
            constraints=ep.experiment.constraints,
            plan=ep.trial_ends,
            at_once=ep.at_once,
            beside=ep.sharing.experiments if ep.sharing else (),
        )
    )
    return callbacks


def param_space(ep: ExperimentPlan, env: Any) -> dict[str, Any]:
    """The experiment's config as Tune's param_space; the env rides in it, as in RLlib. Imports
    the config's code: the runner calls it as it loads the experiment (`runner._load`), whose
    SpecErrors are placed under the experiment's key path, before anything is written."""
    space = ep.trainable.kind.tune_space(to_tune(ep.experiment.config))
    if env is not None:
        space.setdefault("env", env)
    return space


# Results one trial may report before a stop, metric or time_attr key that no result of any
# trial has held as a number ends the search. A key reported now and then (validation every few
# epochs, none in a warm-up iteration) has shown up by then; a misspelt one never stops or ranks
# a trial, and a trainable that loops until its stop criteria would run forever.
REPORT_GRACE = 10


class SpecStopper(tune.Stopper):
    """The spec's `stop` thresholds: a key reaching its value ends the trial; a result without
    the key, or with something other than a number in it, stops nothing.

    Also a guard: once a trial has reported `grace` results and a stop key, the metric or the
    scheduler's time_attr has been a number in no result of any trial, the search ends at once,
    where Tune would warn once and run the trial to its natural end (or forever); the summary
    says which key, and whether it was never reported or never a number. With `late`, keys in
    RLlib's result groups are exempt: episode returns appear only once an episode has ended,
    evaluation results every `evaluation_interval` iterations. A trial whose metric (or an RLlib
    loss, or any objective of a search of several: `metric` is then their names) turns NaN or
    infinite is stopped: it has diverged, and the summary counts it as failed.
    RLlib's "no episode finished yet" NaNs never get here (`rllib.metrics`).
    """

    def __init__(
        self,
        criteria: dict[str, float],
        metric: str | tuple[str, ...] | None = None,
        late: bool = False,
        also: tuple[str, ...] = (),
        grace: int = REPORT_GRACE,
    ) -> None:
        self.criteria = dict(criteria)
        self.metric = metric
        ranked = (metric,) if isinstance(metric, str) else tuple(metric or ())
        wanted = dict.fromkeys([*criteria, *ranked, *also])
        self.required = [k for k in wanted if not (late and k.startswith(RESULT_GROUPS))]
        self.grace = grace
        self.held: set[str] = set()  # required keys that some result held a number in
        self.results: dict[str, int] = {}  # trial id -> the results it reported
        self.missing = False

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A run begun when the guard judged each trial's first result alone, resumed.
        state.setdefault("grace", REPORT_GRACE)
        state.setdefault("held", set())
        state.setdefault("results", {})
        self.__dict__.update(state)

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        flat = flatten_result(result)
        if diverged(flat, self.metric):
            return True
        self.held.update(k for k in self.required if number(flat.get(k)) is not None)
        self.results[trial_id] = self.results.get(trial_id, 0) + 1
        if self.results[trial_id] >= self.grace and not self.held.issuperset(self.required):
            self.missing = True
            return True
        return any(_reached(flat.get(k), v) for k, v in self.criteria.items())

    def stop_all(self) -> bool:
        return self.missing


def _reached(value: Any, threshold: float) -> bool:
    found = number(value)
    return found is not None and found >= threshold


def _samples(ep: ExperimentPlan) -> int:
    num = ep.experiment.num_samples
    return ep.warm.samples(num) if ep.warm is not None else num


def _searcher(ep: ExperimentPlan, space: dict[str, Any] | None = None) -> Any:
    """The experiment's searcher on Tune's param_space `space` (which a warm start's earlier
    points are handed in: `methods.by_index.handed_points`)."""
    exp = ep.experiment
    ctx = Context(
        seed=exp.seed,
        max_concurrent_trials=exp.max_concurrent_trials,
        folder=ep.folder,
        seeds_aggregate=exp.aggregate if exp.seeds else None,
        seeds=tuple(exp.seeds) if searcher_of(exp.search).takes_grid else (),
        objectives=tuple(o.name for o in exp.objectives),
        modes=tuple(o.mode for o in exp.objectives),
        constraints=exp.constraints,
        earlier=ep.warm.points if ep.warm is not None else (),
        told=ep.warm.told if ep.warm is not None else (),
        space=space,
    )
    searcher = searcher_of(exp.search).build(exp.search, ctx)
    if _repeats(ep):
        searcher = seeded.repeated(searcher, exp.seeds, exp.aggregate)
    if not isinstance(searcher, Searcher):
        return searcher  # Tune's variant generator: it learns nothing from results
    from tune_app.ray_internals.sparse import LatestMetric

    # Told only numbers, and a trial's latest one when its last result has none.
    return LatestMetric(searcher)


def _repeats(ep: ExperimentPlan) -> int:
    """Seeds a model-based searcher repeats each configuration on; 0 without seeds, or for a
    searcher making its variants on every seed itself."""
    exp = ep.experiment
    return seeded.repeats(exp.seeds, makes_variants=searcher_of(exp.search).takes_grid)


def _scheduler(ep: ExperimentPlan) -> Any:
    exp = ep.experiment
    ctx = Context(
        seed=exp.seed,
        searcher=exp.search.type,
        folder=ep.folder,
        seeds_aggregate=exp.aggregate if exp.seeds else None,
    )
    return SkipsEnded(scheduler_of(exp.scheduler).build(exp.scheduler, ctx))
