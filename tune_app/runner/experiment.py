"""One experiment's run: its folder started (run.json, spec.yaml), its Tuner built (`tuner`)
or restored from Tune's saved state and fit, its summary written; what it is given (`RunOptions`,
and the experiment's code as `Loaded`).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import os
import pickle
import time
from dataclasses import dataclass
from typing import Any

from tune_app.errors import SpecError, StorageError, TuneAppError, TuneFailure
from tune_app.interrupts import deferred, forget_write_errors, write_error
from tune_app.methods import searcher_of
from tune_app.plan.types import ExperimentPlan, Plan
from tune_app.ray_internals.fitting import patched_while_fitting
from tune_app.resources import ClusterAddress
from tune_app.rundir.files import write_json
from tune_app.rundir.outcome import summarize
from tune_app.rundir.records import RunSummary
from tune_app.rundir.write import Invocation, read_run_record, write_run_files
from tune_app.saved_state import earlier_wall_time, mark_finished, saved_summary
from tune_app.sources import app_fingerprint
from tune_app.trackers import run as tracking


@dataclass(frozen=True)
class RunOptions:
    """How to run a plan: where Ray is, and how much to print (0 quiet, 1 normal, 2 verbose)."""

    address: ClusterAddress | None = None  # None: a local Ray
    verbosity: int = 1
    command: tuple[str, ...] = ()  # the command line's arguments, kept in run.json
    started: Invocation | None = None  # `command` where it was given (`run` takes it)
    board: Any = None  # the driver's ProgressBoard actor, for experiments run in their own tasks
    resume: bool = False  # continue the runs in the plan's folders (Tune's saved state)
    # Ray was started here, locally: its workers have this process's environment.
    local_ray: bool = False


@dataclass(frozen=True)
class Loaded:
    """An experiment's trainable (function or Algorithm class), env value and Tune param space
    (the config's code imported: RLlib's connectors, callbacks), loaded."""

    trainable: Any
    env: Any
    space: dict[str, Any]


def run_experiment(ep: ExperimentPlan, loaded: Loaded, plan: Plan, opts: RunOptions) -> RunSummary:
    """Build (or restore) and fit one experiment's Tuner, then write its summary."""
    from ray import tune

    from tune_app import progress
    from tune_app.callbacks import restoring
    from tune_app.progress.view import Relay
    from tune_app.tuner import build_tuner, given_loggers_only, state_period

    if opts.board is not None:
        progress.attach(ep.name, Relay(opts.board))
    # Tune's console output: its full tables with -v, else nothing (our view shows progress).
    os.environ["RAY_AIR_NEW_OUTPUT"] = "1" if opts.verbosity >= 2 else "0"
    # Tune logs each trial failure with its whole traceback; the view prints one line and the
    # traceback stays in the trial's error.txt (-v shows Tune's logs).
    logging.getLogger("ray.tune").setLevel(
        logging.INFO if opts.verbosity >= 2 else logging.CRITICAL
    )
    forget_write_errors()
    if not opts.resume:
        _start_folder(ep, plan, opts)
    legacy = None  # the trainable as a run begun before per-experiment names registered it
    if ep.trainable.kind.sizes_own_placement:
        trainable = loaded.trainable  # its class sizes each trial from the config
    else:
        pgf = tune.PlacementGroupFactory(list(ep.bundles))
        trainable = tune.with_resources(_per_experiment(loaded.trainable, ep.name), pgf)
        legacy = tune.with_resources(_per_experiment(loaded.trainable, None), pgf)
    os.environ["TUNE_GLOBAL_CHECKPOINT_S"] = state_period(ep)
    began = time.monotonic()
    earlier, finished = earlier_wall_time(ep) if opts.resume else (0.0, False)
    try:
        if opts.resume:
            # Tune's saved state: finished trials stay, unfinished ones restart from their last
            # checkpoint, the searcher's history is restored; callbacks and stopper come back.
            mark_finished(ep)
            with restoring(ep.name, ep.folder):
                tuner = _restore(ep, trainable, loaded.space, legacy)
        else:
            tuner = build_tuner(ep, trainable, loaded.space, opts.verbosity, plan.experiments)
        with (
            patched_while_fitting(opts.local_ray, ep.experiment.result_buffer),
            given_loggers_only(),
        ):
            try:
                grid = tuner.fit()
            except Exception as err:
                if isinstance(err, TuneAppError) or not ep.folder.tune_started():
                    raise
                # Tune's own loop raised (a trial's error fails that trial alone): the state it
                # saved last resumes.
                wall = earlier + time.monotonic() - began
                summary = saved_summary(ep, wall)
                if summary is not None:  # the trackers record how far it got, as a run's end
                    tracking.finish(ep, summary)
                raise TuneFailure.loop_raised(err, [summary] if summary else []) from err
    except BaseException as err:
        tracking.stop(ep)  # those `finish` did not end
        if not opts.resume and _nothing_ran(ep, err):
            # Refused before any trial reported: nothing to resume or read, and a folder left
            # behind would be taken for a run by the readers and by the next `run`.
            ep.folder.remove()
        raise
    # A finished run resumed runs nothing: its wall time stays what it was.
    with deferred():  # a signal now waits for the summary, then interrupts
        return _finish(ep, grid, earlier if finished else earlier + time.monotonic() - began)


def _per_experiment(trainable: Any, experiment: str | None) -> Any:
    """`trainable` under a name of its experiment's own (None: its own name, as runs begun
    before kept it), for Tune to register it by.

    Tune registers a trainable by its name in a registry shared by every Tuner of the Ray job,
    with the resources `with_resources` gave it: two experiments of one spec running the same
    function at the same time registered it twice under one name, and the trials of both got
    whichever experiment's resources came last (a trial asking 1 CPU held 2). A wrapper, not the
    function itself: `with_resources` sets its attribute on the function it is given."""
    base = trainable.__name__
    name = base if experiment is None else f"{base}_{_tag(experiment)}"
    if inspect.isclass(trainable):
        return type(name, (trainable,), {"__module__": trainable.__module__})

    @functools.wraps(trainable)
    def trial(*args: Any, **kwargs: Any) -> Any:
        return trainable(*args, **kwargs)

    trial.__name__ = name
    return trial


def _tag(experiment: str) -> str:
    """Six hex digits of the experiment's name: short (Tune cuts a trial's folder name at 130
    characters, trial id included) and of neither shape a trial id has (5 or 8 hex digits)."""
    return hashlib.sha1(experiment.encode("utf-8")).hexdigest()[:6]


def _restore(ep: ExperimentPlan, trainable: Any, space: dict[str, Any], legacy: Any = None) -> Any:
    """Tune's Tuner from the run's saved state. That state pickles the app's scheduler, searcher
    and callback objects: one written by another version of the app may name classes this one
    does not have, which is said in one line, not as an unpickling traceback. A run begun
    before trainables were named per experiment saved the plain name, which Tune requires back
    (its ValueError): `legacy` carries it."""
    from ray import tune

    if (prepare := searcher_of(ep.experiment.search).on_restore) is not None:
        prepare()  # before Tune sets the restored searcher up again (Optuna: its study)
    try:
        where = ep.folder.tune_where
        try:
            return tune.Tuner.restore(where, trainable=trainable, param_space=space)
        except ValueError as err:
            # Tune's own ValueError, not a subclass of it (pyarrow's ArrowInvalid is one).
            if legacy is None or type(err) is not ValueError:
                raise
            return tune.Tuner.restore(where, trainable=legacy, param_space=space)
    except (AttributeError, ImportError, pickle.UnpicklingError, TypeError) as err:
        record = read_run_record(ep.folder)
        if not record.app_code or record.app_code == app_fingerprint():
            raise
        raise SpecError(
            f"{ep.folder.where} was run by another version of tune_app (code {record.app_code}, "
            f"this is {app_fingerprint()}), whose saved search state this one cannot read "
            f"({type(err).__name__}: {str(err)[:120]})",
            suggestion="its results read as they are (analyze, report, best); to continue the "
            "search, resume it with the version that ran it, or start a new run",
        ) from None


def _start_folder(ep: ExperimentPlan, plan: Plan, opts: RunOptions) -> None:
    """A new run's folder with its records (run.json, spec.yaml). A write that fails leaves no
    folder: nothing ran, and the next `run` starts afresh."""
    try:
        ep.folder.create()
        write_run_files(ep, plan, opts.started or Invocation.here(opts.command, plan.spec.file))
        ep.folder.push()
    except FileExistsError:
        raise
    except OSError as err:
        ep.folder.remove()
        raise StorageError(err) from None


def _finish(ep: ExperimentPlan, grid: Any, wall_time_s: float) -> RunSummary:
    """The journal folded into Tune's saved state and summary.json written. A write that failed,
    here or in Tune's loop (which it stopped), raises StorageError with the summary."""
    failed = write_error()
    try:
        # Tune's final save can keep a stale status: a paused trial that a scheduler stops
        # without a live actor is never re-saved (HyperBand does this). The journal knows how
        # each trial ended.
        mark_finished(ep)
    except OSError as err:
        failed = failed or err
    summary = summarize(ep, grid, wall_time_s)
    try:
        write_json(ep.folder.summary, summary.to_json())
        ep.folder.push()
    except OSError as err:
        failed = failed or err
    else:
        tracking.finish(ep, summary)
    if failed is not None:
        tracking.stop(ep)
        raise StorageError(failed, summaries=[summary])
    return summary


def _nothing_ran(ep: ExperimentPlan, err: BaseException) -> bool:
    """Whether this new run's folder (made here, its lock held) holds nothing to keep: Tune
    stopped before saving its state or any trial reported, or a spec error refused the run
    before any trial reported (Tune may have saved its state of pending trials: a resume
    would meet the same error)."""
    if not ep.folder.tune_started():
        return True
    return isinstance(err, SpecError) and not ep.folder.holds_results()
