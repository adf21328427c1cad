"""The runner: a checked `Plan` run on Ray (started or joined by `cluster`), one Tuner per
experiment (`experiment`, built by `tuner`), experiments at the same time (`drivers`), each run
folder held by its writer.

Ray is started (or joined) only after the plan is valid, and the results' folders are created
only once the trainables are imported and the cluster is known to fit the plan. Tune is imported
while a local Ray starts (this package imports it only where it is used).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import replace

import ray

from tune_app import head
from tune_app.cluster import check_cluster, ray_for
from tune_app.errors import SpecError
from tune_app.interrupts import as_interrupts
from tune_app.plan.types import ExperimentPlan, Plan
from tune_app.ray_internals.versions import warn_unchecked
from tune_app.resources import ClusterAddress
from tune_app.rundir.lock import hold
from tune_app.rundir.records import RunSummary
from tune_app.rundir.write import Invocation
from tune_app.runner.drivers import run_concurrently
from tune_app.runner.experiment import Loaded, RunOptions, run_experiment

# Our stopper names a missing metric clearly; Tune's own check would raise from deep inside fit().
os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")


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
        from tune_app.progress.view import View

        try:
            loaded = [_load(ep) for ep in plan.experiments]
        except SpecError as err:
            raise err.with_file(str(plan.spec.file)) from None
        check_cluster(plan)
        # Normal verbosity: our compact view; -v: Tune's tables; -q: nothing until the summary.
        view = View.for_stdout() if opts.verbosity == 1 else None
        with view or contextlib.nullcontext(), _library_warnings(opts.verbosity):
            if len(plan.experiments) > 1:
                return run_concurrently(plan, loaded, opts, view)
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


def _load(ep: ExperimentPlan) -> Loaded:
    """Import the experiment's trainable, env and config code on the driver, before anything is
    written: every error of its code is one line naming the experiment's key path (and, from
    `_run_held`, the file)."""
    from tune_app.tuner import param_space

    try:
        env = ep.env.load() if ep.env is not None else ep.experiment.env
        trainable = ep.trainable.load()
        ep.trainable.kind.check_loaded(ep.experiment, trainable)
        return Loaded(trainable=trainable, env=env, space=param_space(ep, env))
    except SpecError as err:
        raise err.under(ep.experiment.key_path) from None


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
