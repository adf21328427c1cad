"""The plan: a validated spec joined with its trainables, sized and checked, before Ray starts.

Everything `validate` prints and everything the runner needs to build Tuners, computed without
importing Ray, so a spec that cannot run fails here with nothing written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tune_app.errors import SpecError, did_you_mean
from tune_app.registry import TrainableRef, resolve
from tune_app.space import grid_size, iter_domains, searched_paths
from tune_app.spec import (
    AshaScheduler,
    Experiment,
    FifoScheduler,
    HyperBandScheduler,
    HyperOptSearch,
    Mode,
    Spec,
)


@dataclass(frozen=True)
class ExperimentPlan:
    """One experiment ready to run: its trainable, metric, size and resource bundles."""

    experiment: Experiment
    trainable: TrainableRef
    metric: str | None
    mode: Mode | None
    trials: int
    trials_exact: bool  # False for model-based searchers, which may stop early
    bundles: tuple[dict[str, float], ...]  # the trial's placement group, head bundle first
    iterations: int | None  # bound on the iterations of all trials, when `stop` gives one
    storage_dir: Path
    searched: tuple[str, ...]  # config paths of the searched parameters

    @property
    def name(self) -> str:
        return self.experiment.name

    @property
    def trial_cpus(self) -> float:
        return sum(b.get("CPU", 0.0) for b in self.bundles)


@dataclass(frozen=True)
class Plan:
    """A whole spec file, ready to run; `cpus` is what the trial sizes were checked against."""

    spec: Spec
    experiments: tuple[ExperimentPlan, ...]
    cpus: float


def make_plan(spec: Spec, *, cpus: float | None = None, storage_path: str | None = None) -> Plan:
    """Check and size every experiment of `spec` against a machine of `cpus` CPUs."""
    cpus = float(cpus if cpus is not None else os.cpu_count() or 1)
    try:
        plans = tuple(_plan_experiment(exp, spec, cpus, storage_path) for exp in spec.experiments)
    except SpecError as err:
        raise err.with_file(str(spec.file)) from None
    return Plan(spec=spec, experiments=plans, cpus=cpus)


def _plan_experiment(
    exp: Experiment, spec: Spec, cpus: float, storage: str | None
) -> ExperimentPlan:
    try:
        ref = resolve(exp.run, spec.file.parent)
    except SpecError as err:
        raise err.under(exp.key_path) from None
    metric, mode = _metric_and_mode(exp, ref)
    _check_reported(exp, ref, metric)
    _check_knobs(exp, ref)
    _check_search(exp, metric)
    _check_checkpoints(exp)
    bundles = _bundles(exp, ref)
    need = sum(b.get("CPU", 0.0) for b in bundles)
    if need > cpus:
        where = "simulations" if len(bundles) > 1 else "resources_per_trial.cpu"
        raise SpecError(
            f"one trial needs {need:g} CPUs (bundles {list(bundles)}) but the machine has {cpus:g}",
            path=f"{exp.key_path}.{where}",
            suggestion="lower resources_per_trial.cpu, simulations or cpu_per_simulation",
        )
    trials = grid_size(exp.config) * exp.num_samples
    root = Path(storage or exp.storage_path).expanduser()
    return ExperimentPlan(
        experiment=exp,
        trainable=ref,
        metric=metric,
        mode=mode,
        trials=trials,
        trials_exact=not isinstance(exp.search, HyperOptSearch),
        bundles=bundles,
        iterations=_iteration_bound(exp, trials),
        storage_dir=(root if root.is_absolute() else Path.cwd() / root) / exp.name,
        searched=tuple(searched_paths(exp.config)),
    )


def _metric_and_mode(exp: Experiment, ref: TrainableRef) -> tuple[str | None, Mode | None]:
    declared = ref.info
    metric = exp.metric or (declared.metric if declared else None)
    mode = exp.mode
    if mode is None and declared is not None and metric == declared.metric:
        mode = declared.mode
    if metric is not None and mode is None:
        raise SpecError(
            f"'mode' is needed with metric '{metric}'",
            path=f"{exp.key_path}.mode",
            allowed=("min", "max"),
        )
    needs = []
    if not isinstance(exp.scheduler, FifoScheduler):
        needs.append(f"the {exp.scheduler.type} scheduler")
    if isinstance(exp.search, HyperOptSearch):
        needs.append("the hyperopt search")
    if metric is None and needs:
        raise SpecError(
            f"{' and '.join(needs)} need a metric to optimise",
            path=f"{exp.key_path}.metric",
            suggestion="add metric: and mode:",
        )
    return metric, mode


def _check_reported(exp: Experiment, ref: TrainableRef, metric: str | None) -> None:
    """Keys a registered trainable never reports would silently never stop or rank anything."""
    if ref.info is None:
        return  # a user's function declares nothing; the runner checks its first results
    reported = ref.info.reported
    keys = [(f"stop.{k}", k) for k in exp.stop]
    if metric is not None:
        keys.append(("metric", metric))
    time_attr = getattr(exp.scheduler, "time_attr", None)
    if time_attr is not None:
        keys.append(("scheduler.time_attr", time_attr))
    for where, key in keys:
        if key not in reported:
            raise SpecError(
                f"'{key}' is never reported by trainable '{ref.run}'",
                path=f"{exp.key_path}.{where}",
                allowed=reported,
                suggestion=did_you_mean(key, reported),
            )


def _check_knobs(exp: Experiment, ref: TrainableRef) -> None:
    """A config key a registered trainable does not read would be silently ignored."""
    if ref.info is None:
        return
    knobs = [k.name for k in ref.info.knobs]
    for key in exp.config:
        if key not in knobs:
            raise SpecError(
                f"trainable '{ref.run}' has no config key '{key}'",
                path=f"{exp.key_path}.config.{key}",
                allowed=knobs,
                suggestion=did_you_mean(key, knobs) or "see `tune_app list`",
            )
    if exp.env is not None and "env" not in knobs:
        raise SpecError(
            f"trainable '{ref.run}' takes no env",
            path=f"{exp.key_path}.env",
            suggestion="remove env:",
        )


def _check_search(exp: Experiment, metric: str | None) -> None:
    if not isinstance(exp.search, HyperOptSearch):
        return
    domains = list(iter_domains(exp.config))
    for path, domain in domains:
        if domain.is_grid:
            raise SpecError(
                "hyperopt cannot search a grid_search axis",
                path=f"{exp.key_path}.config.{path}",
                suggestion="use choice: [...] instead, or search: grid",
            )
    if not domains:
        raise SpecError(
            "hyperopt needs at least one sampled parameter in config",
            path=f"{exp.key_path}.search",
            suggestion="or use search: grid",
        )


def _check_checkpoints(exp: Experiment) -> None:
    ckpt = exp.checkpoint
    # Function trainables checkpoint when they choose to; Tune refuses these two for them.
    for key in ("checkpoint_frequency", "checkpoint_at_end"):
        if getattr(ckpt, key):
            raise SpecError(
                f"{key} applies to class trainables (RLlib algorithms) only; a function "
                "trainable saves checkpoints itself",
                path=f"{exp.key_path}.checkpoint_config.{key}",
            )


def _bundles(exp: Experiment, ref: TrainableRef) -> tuple[dict[str, float], ...]:
    """One head bundle for the trial's own process, then one bundle per simulation."""
    declared = ref.info
    sims = (
        exp.simulations
        if exp.simulations is not None
        else (declared.simulations if declared else 0)
    )
    if declared is not None and declared.simulations and sims < 1:
        raise SpecError(
            f"trainable '{ref.run}' runs its rollouts as simulations; it needs at least one",
            path=f"{exp.key_path}.simulations",
            suggestion=f"its default is {declared.simulations}",
        )
    if exp.resources is not None:
        cpu, gpu = exp.resources.cpu, exp.resources.gpu
    else:
        cpu, gpu = (declared.head_cpu if declared else 1.0), 0.0
    head = {"CPU": float(cpu)}
    if gpu:
        head["GPU"] = float(gpu)
    # An all-zero head bundle is fine: Tune then runs the trial's process outside the bundles.
    return (head, *({"CPU": float(exp.cpu_per_simulation)} for _ in range(sims)))


def _iteration_bound(exp: Experiment, trials: int) -> int | None:
    caps = []
    if "training_iteration" in exp.stop:
        caps.append(int(exp.stop["training_iteration"]))
    sched = exp.scheduler
    if (
        isinstance(sched, HyperBandScheduler | AshaScheduler)
        and sched.time_attr == "training_iteration"
    ):
        caps.append(sched.max_t)
    return trials * min(caps) if caps else None


def describe_scheduler(exp: Experiment) -> str:
    """One line naming the scheduler and its options."""
    sched = exp.scheduler
    opts = sched.model_dump(exclude={"type"})
    return sched.type + (" " + ", ".join(f"{k}={v}" for k, v in opts.items()) if opts else "")


def describe_search(exp: Experiment) -> str:
    """One line naming the searcher and its options."""
    opts = exp.search.model_dump(exclude={"type"})
    if exp.seed is not None:
        opts["seed"] = exp.seed
    return exp.search.type + (" " + ", ".join(f"{k}={v}" for k, v in opts.items()) if opts else "")
