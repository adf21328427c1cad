"""The runner: a checked `Plan` run on Ray (started or joined by `cluster`), one Tuner per
experiment (built by `tuner`), experiments at the same time, each run folder held by its writer.

Ray is started (or joined) only after the plan is valid, and the results' folders are created
only once the trainables are imported and the cluster is known to fit the plan. Tune is imported
while a local Ray starts (this module imports it only where it is used).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import inspect
import logging
import os
import pickle
import signal
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import ray

from tune_app import head
from tune_app.cluster import check_cluster, ray_for
from tune_app.errors import SpecError, StorageError, TuneAppError, TuneFailure
from tune_app.interrupts import as_interrupts, deferred, forget_write_errors, write_error
from tune_app.methods import searcher_of
from tune_app.plan.types import ExperimentPlan, Plan
from tune_app.ray_internals.fitting import patched_while_fitting
from tune_app.ray_internals.versions import warn_unchecked
from tune_app.resources import ClusterAddress
from tune_app.rundir.files import write_json
from tune_app.rundir.lock import hold
from tune_app.rundir.outcome import summarize
from tune_app.rundir.records import RunSummary
from tune_app.rundir.write import Invocation, read_run_record, write_run_files
from tune_app.saved_state import earlier_wall_time, mark_finished, saved_summary
from tune_app.sources import app_fingerprint
from tune_app.trackers import run as tracking

if TYPE_CHECKING:
    from tune_app import progress

# Our stopper names a missing metric clearly; Tune's own check would raise from deep inside fit().
os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")


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


def run(plan: Plan, opts: RunOptions) -> list[RunSummary]:
    """Run (or resume) every experiment of `plan`; raises SpecError before writing anything."""
    # At every verbosity, and from the Python API: a warning of its own category.
    warn_unchecked()
    opts = replace(opts, started=Invocation.here(opts.command, plan.spec.file))
    # SIGTERM and SIGHUP stop it as Ctrl-C does; one writer per run folder, for the run's whole
    # life (any exit releases it).
    with as_interrupts(), hold([ep.folder for ep in plan.experiments], resuming=opts.resume):
        return _run_held(plan, opts)


def _run_held(plan: Plan, opts: RunOptions) -> list[RunSummary]:
    if not opts.resume:
        _refuse_existing(plan)
    else:  # the lease is held: the staging folders are this run's to fill
        for ep in plan.experiments:
            ep.folder.pull()
    started_here = not ray.is_initialized()
    if started_here and not opts.address:
        opts = replace(opts, local_ray=True)
    # Tune and the app's callbacks import in 0.7 s of CPU; a local Ray takes 2 s to start, most
    # of it waiting for its daemons: the import runs meanwhile.
    tune_side = _Import("tune_app.tuner")
    began = time.monotonic()
    with (
        ray_for(plan, opts.address, opts.verbosity) if started_here else contextlib.nullcontext(),
        head.watched(
            ray.get_runtime_context().gcs_address,
            functools.partial(
                head.end_for_lost_head, plan, began, ClusterAddress.option(opts.address)
            ),
        ),
    ):
        tune_side.wait()
        from tune_app import progress

        try:
            loaded = [_load(ep) for ep in plan.experiments]
        except SpecError as err:
            raise err.with_file(str(plan.spec.file)) from None
        check_cluster(plan)
        # Normal verbosity: our compact view; -v: Tune's tables; -q: nothing until the summary.
        view = progress.View.for_stdout() if opts.verbosity == 1 else None
        with view or contextlib.nullcontext(), _library_warnings(opts.verbosity):
            if len(plan.experiments) > 1:
                return _run_concurrently(plan, loaded, opts, view)
            ep = plan.experiments[0]
            progress.attach(ep.name, view)
            try:
                return [run_experiment(ep, loaded[0], plan, opts)]
            finally:
                progress.attach(ep.name, None)


class _Import:
    """A module imported in a thread while this one goes on; `wait` joins it. Should the thread
    fail (two threads importing the same modules can, rarely, deadlock), the import is done
    again here, where its error, if real, is raised."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.failed = False
        self.thread = threading.Thread(target=self._run, name=f"import {module}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            importlib.import_module(self.module)
        except BaseException:
            self.failed = True

    def wait(self) -> None:
        self.thread.join()
        if self.failed:
            importlib.import_module(self.module)


@dataclass(frozen=True)
class Loaded:
    """An experiment's trainable (function or Algorithm class), env value and Tune param space
    (the config's code imported: RLlib's connectors, callbacks), loaded."""

    trainable: Any
    env: Any
    space: dict[str, Any]


def _load(ep: ExperimentPlan) -> Loaded:
    """Import the experiment's trainable, env and config code on the driver, before anything is
    written: every error of its code is one line naming the experiment's key path (and, from
    `_run_held`, the file)."""
    from tune_app.plan.checks import check_loaded_buffer
    from tune_app.tuner import param_space

    try:
        env = ep.env.load() if ep.env is not None else ep.experiment.env
        trainable = ep.trainable.load()
        ep.trainable.kind.check_loaded(ep.experiment, trainable)
        check_loaded_buffer(ep.experiment, trainable)
        return Loaded(trainable=trainable, env=env, space=param_space(ep, env))
    except SpecError as err:
        raise err.under(ep.experiment.key_path) from None


# One experiment's driver (`ExperimentDriver`): a Ray worker process holding Ray, Tune, the app and
# the experiment's searcher: about 270 MB resident each, measured. Fifty experiments in one spec
# started fifty at once (about 13 GB) and a node ran out of memory.
DRIVER_BYTES = 400 * 2**20
DRIVER_MEMORY_SHARE = 0.25  # of the machine's memory, for drivers; trials need the rest
MAX_DRIVERS_ENV = "TUNE_APP_MAX_DRIVERS"  # overrides the number the machine's memory gives


def driver_slots(experiments: int, memory_bytes: int | None = None) -> int:
    """How many experiments' drivers run at once, the others queued in the spec's order: what
    a quarter of this machine's memory holds at DRIVER_BYTES each (TUNE_APP_MAX_DRIVERS
    overrides), at least one."""
    given = os.environ.get(MAX_DRIVERS_ENV, "").strip()
    if given.isdigit() and int(given) > 0:
        slots = int(given)
    else:
        memory = memory_bytes if memory_bytes is not None else _machine_memory()
        slots = int(memory * DRIVER_MEMORY_SHARE // DRIVER_BYTES)
    return max(1, min(experiments, slots))


def _machine_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system: assume 8 GB
        return 8 * 2**30


def _run_concurrently(
    plan: Plan, loaded: list[Loaded], opts: RunOptions, view: progress.View | None
) -> list[RunSummary]:
    """Fit the experiments' Tuners at the same time, each in a zero-CPU actor of its own on this
    node, at most `driver_slots` at once: as one ends (its actor and memory freed) the next
    queued one starts.

    Tune's `run_experiments` cannot give experiments their own searchers and schedulers, so each
    experiment drives its own Tuner; the trials of all of them share the cluster.
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from tune_app import progress

    here = ray.get_runtime_context().get_node_id()
    # An actor, not a task: Ray's memory monitor kills a running task (retried or not) before
    # the trial actors it started, so one trial taking too much memory killed the task that
    # drove its whole experiment (and a task it retried began the experiment anew, into its
    # own folder: FileExistsError). Actors go newest first: the trials before their driver.
    driver = ray.remote(  # type: ignore[call-overload]  # Ray's stubs lack node affinity
        num_cpus=0,
        max_restarts=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
    )(ExperimentDriver)
    # Tune's per-experiment tables would interleave: each actor relays its progress to one view.
    board = None
    if view is not None:
        board = ray.remote(num_cpus=0)(progress.ProgressBoard).remote()
    inner = replace(opts, board=board)
    slots = driver_slots(len(plan.experiments))
    queued = list(range(len(plan.experiments)))
    running: dict[Any, tuple[int, Any, int]] = {}  # result ref -> (experiment, actor, pid)
    summaries: dict[int, RunSummary] = {}
    try:
        while queued or running:
            while queued and len(running) < slots:
                i = queued.pop(0)
                actor = driver.remote()
                pid = ray.get(actor.pid.remote())
                ref = actor.run.remote(plan.experiments[i], loaded[i], plan, inner)
                running[ref] = (i, actor, pid)
            done, _ = ray.wait(list(running), num_returns=len(running), timeout=0.5)
            for ref in done:
                summary = ray.get(ref)  # one that failed (its storage full) stops the others now
                i, actor, _pid = running.pop(ref)
                summaries[i] = summary
                ray.kill(actor)  # its memory back before the next starts
            if board is not None and view is not None:
                progress.pump(board, view)
        return [summaries[i] for i in range(len(plan.experiments))]
    except BaseException as err:
        head.lost_with_head()  # an experiment's driver ended with the head (`head.leave`)
        _interrupt(list(running), [pid for _, _, pid in running.values()])
        if isinstance(err, ray.exceptions.RayTaskError) and isinstance(err.cause, StorageError):
            raise StorageError(err.cause.error) from None  # the others stopped with theirs
        if isinstance(err, ray.exceptions.RayTaskError) and isinstance(err.cause, SpecError):
            raise err.cause from None  # one line, as from a single experiment
        if isinstance(err, ray.exceptions.RayTaskError) and isinstance(err.cause, TuneFailure):
            raise TuneFailure(err.cause.cause) from None  # the others stopped with theirs
        raise


class ExperimentDriver:
    """The actor that runs one experiment of several (`_run_concurrently`)."""

    def pid(self) -> int:
        return os.getpid()

    def run(self, ep: ExperimentPlan, loaded: Loaded, plan: Plan, opts: RunOptions) -> RunSummary:
        with head.watched(ray.get_runtime_context().gcs_address, head.leave):
            return run_experiment(ep, loaded, plan, opts)


def _interrupt(refs: list[Any], pids: list[int]) -> None:
    """Stop the experiments still running as Ctrl-C stops one (Tune saves its state): SIGINT
    to their actors, on this node (a running actor task cannot be cancelled)."""
    done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
    for ref, pid in zip(refs, pids, strict=True):
        if ref not in done:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)


def run_experiment(ep: ExperimentPlan, loaded: Loaded, plan: Plan, opts: RunOptions) -> RunSummary:
    """Build (or restore) and fit one experiment's Tuner, then write its summary."""
    from ray import tune

    from tune_app import progress
    from tune_app.callbacks import restoring
    from tune_app.tuner import build_tuner, given_loggers_only, state_period

    if opts.board is not None:
        progress.attach(ep.name, progress.Relay(opts.board))
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


# Libraries the searchers and schedulers call in the driver, whose Python warnings (numerical
# ones in BOHB's KDEs and PB2's Gaussian process, pandas' deprecations, Optuna's experimental
# samplers) a user can do nothing about.
_CHATTY = r"(statsmodels|sklearn|pandas|optuna|hpbandster|ConfigSpace)(\.|$)"
_EXPERIMENTAL = r"(?s).*(is experimental|an experimental feature).*The interface can change"


@contextlib.contextmanager
def _library_warnings(verbosity: int) -> Iterator[None]:
    """With -q, those libraries' warnings are not shown; otherwise they are, as Python shows
    them."""
    with warnings.catch_warnings():
        if verbosity < 1:
            warnings.filterwarnings("ignore", module=_CHATTY)
            # Optuna's ExperimentalWarning, said where Ray's or the app's code calls it; by its
            # words, as importing Optuna for its class costs every run 4 MB and 40 ms.
            warnings.filterwarnings("ignore", message=_EXPERIMENTAL)
        yield


def _nothing_ran(ep: ExperimentPlan, err: BaseException) -> bool:
    """Whether this new run's folder (made here, its lock held) holds nothing to keep: Tune
    stopped before saving its state or any trial reported, or a spec error refused the run
    before any trial reported (Tune may have saved its state of pending trials: a resume
    would meet the same error)."""
    if not ep.folder.tune_started():
        return True
    return isinstance(err, SpecError) and not ep.folder.holds_results()


def _refuse_existing(plan: Plan) -> None:
    """Never write into a folder a run wrote: `api.run` chose folders no run had (a re-run
    writes `<name>_<n>`), and another run may have started in one since."""
    for ep in plan.experiments:
        folder = ep.folder
        if not folder.uri and folder.local.exists() and not folder.has_tune_state():
            if not folder.tune_started() and folder.holds_only_records():
                # A driver killed before Tune started: nothing ran, nothing to resume.
                folder.remove()
                continue
        if folder.holds_remote_run() or (not folder.uri and folder.holds_files()):
            raise SpecError(
                f"a run of experiment '{ep.name}' is already in {folder.where}",
                path=f"{ep.experiment.key_path}.storage_path",
                suggestion="run again: a new run writes beside the earlier ones "
                f"({folder.fresh().where})",
            )
