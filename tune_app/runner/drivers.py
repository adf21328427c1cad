"""Several experiments of one spec at the same time: each fit by an actor of its own
(`ExperimentDriver`), at most `driver_slots` at once as the machine's memory allows, their
progress relayed to the one view, and Ctrl-C passed on to each.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import ray

from tune_app import head
from tune_app.errors import SpecError, StorageError, TuneFailure
from tune_app.plan.types import ExperimentPlan, Plan
from tune_app.rundir.records import RunSummary
from tune_app.runner.experiment import Loaded, RunOptions, run_experiment

if TYPE_CHECKING:
    from tune_app.progress.view import View


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


def run_concurrently(
    plan: Plan, loaded: list[Loaded], opts: RunOptions, view: View | None
) -> list[RunSummary]:
    """Fit the experiments' Tuners at the same time, each in a zero-CPU actor of its own on this
    node, at most `driver_slots` at once: as one ends (its actor and memory freed) the next
    queued one starts.

    Tune's `run_experiments` cannot give experiments their own searchers and schedulers, so each
    experiment drives its own Tuner; the trials of all of them share the cluster.
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from tune_app.progress.view import ProgressBoard, pump

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
        board = ray.remote(num_cpus=0)(ProgressBoard).remote()
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
                pump(board, view)
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
    """The actor that runs one experiment of several (`run_concurrently`)."""

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
