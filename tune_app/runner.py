"""The runner: a checked `Plan` to Ray Tune Tuners, searchers, schedulers and callbacks.

One Tuner per experiment. Ray is started here (or joined, with an address) only after the plan
is valid, and the results' folders are created only once the cluster is known to fit the plan.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import ray
from ray import tune
from ray.tune.utils import flatten_dict

from tune_app import progress
from tune_app.callbacks import JsonlResults, relocate
from tune_app.cluster import cluster_address, local_pythonpath, runtime_env
from tune_app.errors import SpecError
from tune_app.methods import Context, scheduler_of, searcher_of
from tune_app.plan import ExperimentPlan, Plan
from tune_app.rllib import RESULT_GROUPS, to_rllib
from tune_app.rllib_metrics import diverged
from tune_app.rundir import storage
from tune_app.rundir.layout import (
    RESULTS_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    write_json,
)
from tune_app.rundir.outcome import Summary, summarize, summary_dict
from tune_app.rundir.write import mark_finished_trials, write_run_files
from tune_app.space import to_tune
from tune_app.tensorboard import TrialBoard

# Our stopper names a missing metric clearly; Tune's own check would raise from deep inside fit().
os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")


@dataclass(frozen=True)
class RunOptions:
    """How to run a plan: where Ray is, and how much to print (0 quiet, 1 normal, 2 verbose)."""

    address: str | None = None
    verbosity: int = 1
    command: tuple[str, ...] = ()  # the command line's arguments, kept in run.json
    board: Any = None  # the driver's ProgressBoard actor, for experiments run in their own tasks
    resume: bool = False  # continue the runs in the plan's folders (Tune's saved state)


def run(plan: Plan, opts: RunOptions) -> list[Summary]:
    """Run (or resume) every experiment of `plan`; raises SpecError before writing anything."""
    if not opts.resume:
        _refuse_existing(plan)
    loaded = [_load(ep) for ep in plan.experiments]
    started_here = not ray.is_initialized()
    if started_here:
        _init_ray(plan, opts)
    # Normal verbosity: our compact view; -v: Tune's own tables; -q: nothing until the summary.
    view = progress.View.for_stdout() if opts.verbosity == 1 else None
    try:
        _check_cluster(plan)
        with view or contextlib.nullcontext():
            if len(plan.experiments) > 1:
                return _run_concurrently(plan, loaded, opts, view)
            ep = plan.experiments[0]
            progress.attach(ep.name, view)
            try:
                return [run_experiment(ep, loaded[0], plan, opts)]
            finally:
                progress.attach(ep.name, None)
    finally:
        if started_here:
            ray.shutdown()


@dataclass(frozen=True)
class Loaded:
    """An experiment's trainable (function or Algorithm class) and env value, imported."""

    trainable: Any
    env: Any


def _load(ep: ExperimentPlan) -> Loaded:
    """Import the experiment's trainable and env on the driver, before anything is written."""
    try:
        env = ep.env.load() if ep.env is not None else ep.experiment.env
        return Loaded(trainable=ep.trainable.load(), env=env)
    except SpecError as err:
        raise err.under(ep.experiment.key_path) from None


def _run_concurrently(
    plan: Plan, loaded: list[Loaded], opts: RunOptions, view: progress.View | None
) -> list[Summary]:
    """Fit every experiment's Tuner at once, each in a zero-CPU task on this node.

    Tune's `run_experiments` cannot give experiments their own searchers and schedulers, so each
    experiment drives its own Tuner; the trials of all of them share the cluster.
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    driver = ray.remote(  # type: ignore[call-overload]  # Ray's stubs lack node affinity
        num_cpus=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
    )(run_experiment)
    # Tune's per-experiment tables would interleave: each task relays its progress to one view.
    board = None
    if view is not None:
        board = ray.remote(num_cpus=0)(progress.ProgressBoard).remote()
    inner = replace(opts, board=board)
    refs = [
        driver.remote(ep, what, plan, inner)
        for ep, what in zip(plan.experiments, loaded, strict=True)
    ]
    try:
        waiting = list(refs)
        while waiting:
            _, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=0.5)
            if board is not None and view is not None:
                progress.pump(board, view)
        return ray.get(refs)
    except BaseException:
        for ref in refs:
            ray.cancel(ref)
        raise


def run_experiment(ep: ExperimentPlan, loaded: Loaded, plan: Plan, opts: RunOptions) -> Summary:
    """Build (or restore) and fit one experiment's Tuner, then write its summary."""
    if opts.board is not None:
        progress.attach(ep.name, progress.Relay(opts.board))
    # Tune's console output: its full tables with -v, else nothing (our view shows progress).
    os.environ["RAY_AIR_NEW_OUTPUT"] = "1" if opts.verbosity >= 2 else "0"
    # Tune logs each trial failure with its whole traceback; the view prints one line and the
    # traceback stays in the trial's error.txt (-v shows Tune's logs).
    logging.getLogger("ray.tune").setLevel(
        logging.INFO if opts.verbosity >= 2 else logging.CRITICAL
    )
    if not opts.resume:
        if ep.storage_uri:  # a staging folder: whatever an older run left there is stale
            shutil.rmtree(ep.storage_dir, ignore_errors=True)
        ep.storage_dir.mkdir(parents=True, exist_ok=False)
        write_run_files(ep, plan, list(opts.command))
        if ep.storage_uri:
            storage.push(ep.storage_dir, ep.storage_uri)
    is_rllib = ep.trainable.kind == "rllib"
    if is_rllib:
        # RLlib sizes each trial's placement group from its config (default_resource_request).
        trainable = loaded.trainable
    else:
        pgf = tune.PlacementGroupFactory(list(ep.bundles))
        trainable = tune.with_resources(loaded.trainable, pgf)
    os.environ["TUNE_GLOBAL_CHECKPOINT_S"] = _state_period(ep)
    began = time.monotonic()
    earlier, finished = _earlier_wall_time(ep) if opts.resume else (0.0, False)
    if opts.resume:
        # Tune's saved state: finished trials stay, unfinished ones restart from their last
        # checkpoint, the searcher's history is restored; callbacks and stopper come back too.
        relocate(ep.name, ep.storage_dir, ep.storage_uri)
        _mark_finished(ep)
        tuner = tune.Tuner.restore(
            ep.location, trainable=trainable, param_space=param_space(ep, loaded.env)
        )
    else:
        tuner = _tuner(ep, trainable, loaded, opts)
    grid = tuner.fit()
    # Tune's final save can keep a stale status: a paused trial that a scheduler stops without a
    # live actor is never re-saved (HyperBand does this). The journal knows how each trial ended.
    _mark_finished(ep)
    # A finished run resumed runs nothing: its wall time stays what it was.
    summary = summarize(ep, grid, earlier if finished else earlier + time.monotonic() - began)
    write_json(ep.storage_dir / SUMMARY_FILE, summary_dict(summary))
    if ep.storage_uri:
        storage.push(ep.storage_dir, ep.storage_uri)
    return summary


def _earlier_wall_time(ep: ExperimentPlan) -> tuple[float, bool]:
    """The wall time a resumed run already spent (from the summary an interrupted or finished
    run wrote; a killed run left none), and whether that run had finished."""
    try:
        summary = json.loads((ep.storage_dir / SUMMARY_FILE).read_text())
        wall = float(summary["wall_time_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0, False
    return wall, not summary.get("interrupted")


# A user's own TUNE_GLOBAL_CHECKPOINT_S wins over the app's choice.
_USER_STATE_PERIOD = os.environ.get("TUNE_GLOBAL_CHECKPOINT_S")


def _state_period(ep: ExperimentPlan) -> str:
    """How often Tune saves its experiment state. Its default (10 s or more) makes a killed
    driver resume trials from checkpoints up to that old: the app saves every second while the
    state is small. RLlib trials keep Tune's default: their large configs make each save cost
    CPU the trials need (about 17% of PPO's sampling on 2 cores, saving every second)."""
    if _USER_STATE_PERIOD:
        return _USER_STATE_PERIOD
    if ep.trainable.kind == "rllib":
        return "auto"
    return f"{max(1.0, min(10.0, ep.trials / 100)):g}"


def _mark_finished(ep: ExperimentPlan) -> None:
    """Patch Tune's saved state with the journal of ended trials, wherever the state lives."""
    if ep.storage_uri:
        storage.pull_state(ep.storage_uri, ep.storage_dir)
    if mark_finished_trials(ep.storage_dir) and ep.storage_uri:
        storage.push_state(ep.storage_dir, ep.storage_uri)


def _tuner(ep: ExperimentPlan, trainable: Any, loaded: Loaded, opts: RunOptions) -> tune.Tuner:
    exp = ep.experiment
    is_rllib = ep.trainable.kind == "rllib"
    stopper = SpecStopper(exp.stop, ep.metric, late=is_rllib)
    return tune.Tuner(
        trainable,
        param_space=param_space(ep, loaded.env),
        tune_config=tune.TuneConfig(
            metric=ep.metric,
            mode=ep.mode,
            search_alg=_searcher(ep),
            scheduler=_scheduler(ep),
            num_samples=exp.num_samples,
            max_concurrent_trials=(
                exp.max_concurrent_trials if searcher_of(exp.search).limits_concurrency else None
            ),
            # A fresh trial process costs 1.5-2 s; function trainables reset cleanly instead.
            # RLlib algorithms cannot reset their env runners to a new config.
            reuse_actors=not is_rllib,
        ),
        run_config=tune.RunConfig(
            name=exp.name,
            storage_path=ep.storage_root,
            stop=stopper,
            callbacks=_callbacks(ep, opts),
            failure_config=tune.FailureConfig(max_failures=exp.max_failures),
            checkpoint_config=tune.CheckpointConfig(
                num_to_keep=exp.checkpoint.num_to_keep,
                checkpoint_score_attribute=exp.checkpoint.checkpoint_score_attribute,
                checkpoint_score_order=exp.checkpoint.checkpoint_score_order,
                # Function trainables checkpoint themselves (the plan refuses these for them).
                checkpoint_frequency=exp.checkpoint.checkpoint_frequency,
                checkpoint_at_end=exp.checkpoint.checkpoint_at_end,
            ),
            verbose=2 if opts.verbosity >= 2 else 0,
        ),
    )


def _callbacks(ep: ExperimentPlan, opts: RunOptions) -> list[tune.Callback]:
    # TrialBoard replaces Tune's default TensorBoard logger (Tune adds one only if none is given).
    callbacks: list[tune.Callback] = [
        JsonlResults(ep.storage_dir / RESULTS_FILE, ep.name, mirror_to=ep.storage_uri),
        TrialBoard.for_experiment(ep),
    ]
    callbacks.append(
        progress.ProgressCallback(
            ep.name,
            ep.metric,
            ep.mode,
            ep.searched,
            _iteration_bound(ep.experiment.stop),
            scope=ep.experiment.scope,
        )
    )
    return callbacks


def _iteration_bound(stop: dict[str, float]) -> int | None:
    bound = stop.get("training_iteration")
    return int(bound) if bound else None


def param_space(ep: ExperimentPlan, env: Any) -> dict[str, Any]:
    """The experiment's config as Tune's param_space; the env rides in it, as in RLlib."""
    space = to_tune(ep.experiment.config)
    if ep.trainable.kind == "rllib":
        space = to_rllib(space)
    if env is not None:
        space.setdefault("env", env)
    return space


class SpecStopper(tune.Stopper):
    """The spec's `stop` thresholds: a key reaching its value ends the trial.

    Also a guard: a stop key or the metric missing from a trial's first result ends the search at
    once, where Tune would warn once and run the trial to its natural end (or forever). With
    `late`, keys in RLlib's result groups are exempt: episode returns appear only once an episode
    has ended, evaluation results every `evaluation_interval` iterations. A trial whose metric
    (or an RLlib loss) turns NaN or infinite is stopped: it has diverged, and the summary counts
    it as failed. RLlib's "no episode finished yet" NaNs never get here (`rllib_metrics`).
    """

    def __init__(
        self,
        criteria: dict[str, float],
        metric: str | None = None,
        late: bool = False,
    ) -> None:
        self.criteria = dict(criteria)
        self.metric = metric
        wanted = dict.fromkeys([*criteria, *([metric] if metric else [])])
        self.required = [k for k in wanted if not (late and k.startswith(RESULT_GROUPS))]
        self.seen: set[str] = set()
        self.missing = False

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        flat = flatten_dict(result)
        if diverged(flat, self.metric):
            return True
        if trial_id not in self.seen:
            self.seen.add(trial_id)
            if any(k not in flat for k in self.required):
                self.missing = True
                return True
        return any(k in flat and _reached(flat[k], v) for k, v in self.criteria.items())

    def stop_all(self) -> bool:
        return self.missing


def _reached(value: Any, threshold: float) -> bool:
    try:
        return bool(value >= threshold)
    except TypeError:
        return False


def _searcher(ep: ExperimentPlan) -> Any:
    exp = ep.experiment
    ctx = Context(seed=exp.seed, max_concurrent_trials=exp.max_concurrent_trials)
    return searcher_of(exp.search).build(exp.search, ctx)


def _scheduler(ep: ExperimentPlan) -> Any:
    sched = ep.experiment.scheduler
    return scheduler_of(sched).build(sched, Context(seed=ep.experiment.seed))


def _refuse_existing(plan: Plan) -> None:
    for ep in plan.experiments:
        if ep.storage_uri:
            if storage.has_file(ep.storage_uri, RUN_FILE):
                raise SpecError(
                    f"results of an earlier run are in {ep.storage_uri}",
                    path=f"{ep.experiment.key_path}.storage_path",
                    suggestion=f"continue it with: tune_app resume {ep.storage_uri}, or pass "
                    "--storage-path to write elsewhere",
                )
            continue
        if (ep.storage_dir / "tuner.pkl").exists() and _unfinished(ep.storage_dir):
            raise SpecError(
                f"a resumable run of experiment '{ep.name}' is in {ep.storage_dir}",
                path=f"{ep.experiment.key_path}.storage_path",
                suggestion=f"continue it with: tune_app resume {ep.storage_dir} (or pass "
                "--storage-path to start afresh elsewhere)",
            )
        if ep.storage_dir.exists() and any(ep.storage_dir.iterdir()):
            raise SpecError(
                f"results of an earlier run are in {ep.storage_dir}",
                path=f"{ep.experiment.key_path}.storage_path",
                suggestion="pass --storage-path to write elsewhere, or remove that folder",
            )


def _unfinished(folder: Path) -> bool:
    """Whether the run in `folder` left trials unfinished (or never wrote its summary)."""
    try:
        summary = json.loads((folder / SUMMARY_FILE).read_text())
    except (OSError, ValueError):
        return True
    return bool(summary.get("interrupted"))


def _init_ray(plan: Plan, opts: RunOptions) -> None:
    address = cluster_address(opts.address)
    kwargs: dict[str, Any] = dict(
        include_dashboard=False,
        logging_level=logging.WARNING if opts.verbosity >= 2 else logging.ERROR,
        # Workers' own output (trainables' prints, RLlib's warnings) only with -v.
        log_to_driver=opts.verbosity >= 2,
    )
    if address:
        ray.init(address=address, runtime_env=runtime_env(plan), **kwargs)
        return
    path = local_pythonpath(plan)
    if path:
        os.environ["PYTHONPATH"] = path  # the local Ray's workers inherit it
    ray.init(address="local", num_cpus=int(plan.cpus), **kwargs)


def _check_cluster(plan: Plan) -> None:
    have = ray.cluster_resources()
    for ep in plan.experiments:
        for key in ("CPU", "GPU"):
            need = sum(b.get(key, 0.0) for b in ep.bundles)
            if need > have.get(key, 0.0):
                raise SpecError(
                    f"one trial needs {need:g} {key}s (bundles {list(ep.bundles)}) but the "
                    f"cluster has {have.get(key, 0.0):g}",
                    path=f"{ep.experiment.key_path}.resources_per_trial",
                    suggestion="ask for fewer resources per trial",
                )
