"""The plan: a validated spec joined with its trainables, sized and checked, before Ray starts.

Everything `validate` prints and everything the runner needs to build Tuners, computed without
importing Ray, so a spec that cannot run fails here with nothing written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from tune_app import rllib
from tune_app.envs import EnvRef, resolve_env
from tune_app.errors import SpecError, did_you_mean
from tune_app.registry import TrainableRef, resolve
from tune_app.smoke import shrink
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
from tune_app.storage import is_uri, staging_dir


@dataclass(frozen=True)
class ExperimentPlan:
    """One experiment ready to run: its trainable, metric, size and resource bundles.

    `experiment` is the spec's, with legacy RLlib keys and metric names already translated.
    """

    experiment: Experiment
    trainable: TrainableRef
    env: EnvRef | None  # checked for registered trainables and RLlib; user functions get the text
    metric: str | None
    mode: Mode | None
    trials: int
    trials_exact: bool  # False for model-based searchers, which may stop early
    bundles: tuple[dict[str, float], ...]  # the trial's placement group, head bundle first
    iterations: int | None  # bound on the iterations of all trials, when `stop` gives one
    storage_dir: Path  # the app's files; for cloud storage, the local staging folder
    searched: tuple[str, ...]  # config paths of the searched parameters
    storage_uri: str | None = None  # the experiment's folder on cloud storage, if there

    @property
    def location(self) -> str:
        """Where the results are, as a user names it (a folder or a URI)."""
        return self.storage_uri or str(self.storage_dir)

    @property
    def storage_root(self) -> str:
        """Tune's storage_path: the folder (or URI) holding the experiment's folder."""
        return (
            self.storage_uri.rsplit("/", 1)[0] if self.storage_uri else str(self.storage_dir.parent)
        )

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
    warnings: tuple[str, ...] = ()  # the spec's legacy-key warnings, then the plan's
    smoke: bool = False  # shrunk by --smoke: metric expectations are not checked


def make_plan(
    spec: Spec,
    *,
    cpus: float | None = None,
    storage_path: str | None = None,
    smoke: bool = False,
) -> Plan:
    """Check and size every experiment of `spec` against a machine of `cpus` CPUs.

    With `smoke`, every experiment is shrunk to a tiny run (see `tune_app.smoke`) whose results
    go to a `smoke/` folder under the storage path.
    """
    cpus = float(cpus if cpus is not None else os.cpu_count() or 1)
    warnings: list[str] = list(spec.warnings)
    try:
        plans = tuple(
            _plan_experiment(exp, spec, cpus, storage_path, warnings, smoke)
            for exp in spec.experiments
        )
    except SpecError as err:
        raise err.with_file(str(spec.file)) from None
    return Plan(spec=spec, experiments=plans, cpus=cpus, warnings=tuple(warnings), smoke=smoke)


def _plan_experiment(
    exp: Experiment,
    spec: Spec,
    cpus: float,
    storage: str | None,
    warnings: list[str],
    smoke: bool,
) -> ExperimentPlan:
    try:
        ref = resolve(exp.run, spec.file.parent)
    except SpecError as err:
        raise err.under(exp.key_path) from None
    env = _env(exp, ref, spec.file.parent)
    if ref.kind == "rllib":
        exp = _translate_rllib(exp, warnings)
    if smoke:
        exp = shrink(exp, ref)
    metric, mode = _metric_and_mode(exp, ref)
    _check_reported(exp, ref, metric)
    _check_knobs(exp, ref)
    _check_search(exp, metric)
    _check_checkpoints(exp, ref)
    bundles = _rllib_bundles(exp, env) if ref.kind == "rllib" else _bundles(exp, ref)
    need = sum(b.get("CPU", 0.0) for b in bundles)
    if need > cpus:
        where = "simulations" if len(bundles) > 1 else "resources_per_trial.cpu"
        hint = "lower resources_per_trial.cpu, simulations or cpu_per_simulation"
        if ref.kind == "rllib":
            hint = "set simulations: (RLlib's num_env_runners) lower, or num_cpus_per_env_runner"
        raise SpecError(
            f"one trial needs {need:g} CPUs (bundles {list(bundles)}) but the machine has {cpus:g}",
            path=f"{exp.key_path}.{where}",
            suggestion=hint,
        )
    trials = grid_size(exp.config) * exp.num_samples
    where = storage or exp.storage_path
    uri = None
    if is_uri(where):
        uri = f"{where.rstrip('/')}{'/smoke' if smoke else ''}/{exp.name}"
    root = Path(where).expanduser() / ("smoke" if smoke else "")
    return ExperimentPlan(
        experiment=exp,
        trainable=ref,
        env=env,
        metric=metric,
        mode=mode,
        trials=trials,
        trials_exact=not isinstance(exp.search, HyperOptSearch),
        bundles=bundles,
        iterations=_iteration_bound(exp, trials),
        storage_dir=(
            staging_dir(uri)
            if uri
            else (root if root.is_absolute() else Path.cwd() / root) / exp.name
        ),
        storage_uri=uri,
        searched=tuple(searched_paths(exp.config)),
    )


def _metric_and_mode(exp: Experiment, ref: TrainableRef) -> tuple[str | None, Mode | None]:
    declared = ref.info
    metric = exp.metric or (declared.metric if declared else None)
    mode = exp.mode
    if mode is None and declared is not None and metric == declared.metric:
        mode = declared.mode
    if ref.kind == "rllib":
        metric = metric or rllib.METRIC
        mode = mode or (rllib.MODE if metric == rllib.METRIC else None)
    if metric is not None and mode is None:
        raise SpecError(
            f"'mode' is needed with metric '{metric}'",
            path=f"{exp.key_path}.mode",
            allowed=("min", "max"),
        )
    needs = []
    if exp.expect.metrics:
        needs.append("expect's metric bounds (checked on the best trial)")
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
    keys = [(f"stop.{k}", k) for k in exp.stop]
    keys += [(f"expect.{k}", k) for k in exp.expect.metrics]
    if metric is not None:
        keys.append(("metric", metric))
    time_attr = getattr(exp.scheduler, "time_attr", None)
    if time_attr is not None:
        keys.append(("scheduler.time_attr", time_attr))
    if ref.kind == "rllib":
        for where, key in keys:
            rllib.check_metric(key, f"{exp.key_path}.{where}", ref.run)
    if ref.info is None:
        return  # a user's function declares nothing; the runner checks its first results
    reported = ref.info.reported
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


def _check_checkpoints(exp: Experiment, ref: TrainableRef) -> None:
    if ref.kind == "rllib":
        return
    ckpt = exp.checkpoint
    # Function trainables checkpoint when they choose to; Tune refuses these two for them.
    for key in ("checkpoint_frequency", "checkpoint_at_end"):
        if getattr(ckpt, key):
            raise SpecError(
                f"{key} applies to class trainables (RLlib algorithms) only; a function "
                "trainable saves checkpoints itself",
                path=f"{exp.key_path}.checkpoint_config.{key}",
            )


def _env(exp: Experiment, ref: TrainableRef, spec_dir: Path) -> EnvRef | None:
    """Check `env:` for trainables that make the env themselves; a user function gets the text."""
    env = exp.env
    if ref.kind == "rllib" and env is None and isinstance(exp.config, dict):
        env = exp.config.get("env")  # the classic RLlib YAMLs put env in config
        if env is not None and not isinstance(env, str):
            raise SpecError(
                "config.env must be one environment name", path=f"{exp.key_path}.config.env"
            )
    if env is None:
        if ref.kind == "rllib":
            raise SpecError(
                f"RLlib algorithm '{ref.run}' needs an env",
                path=f"{exp.key_path}.env",
                suggestion="add env: CartPole-v1 (a gymnasium id) or env: my_module:MyEnv",
            )
        return None
    if ref.kind == "function":
        return None
    try:
        return resolve_env(env, spec_dir)
    except SpecError as err:
        raise err.under(exp.key_path) from None


def _translate_rllib(exp: Experiment, warnings: list[str]) -> Experiment:
    """The experiment with RLlib's legacy config keys and metric names in new-stack spelling."""
    try:
        translated = rllib.translate_config(exp.run, exp.config)
    except SpecError as err:
        raise err.under(exp.key_path) from None
    config = dict(translated.config)
    config.pop("env", None)  # the EnvRef carries it
    where = exp.key_path
    warnings.extend(f"{where}.{w}" for w in translated.warnings)
    # The spec's simulations and resources are the algorithm's env runners and main process.
    for spec_key, value, key in (
        ("simulations", exp.simulations, "num_env_runners"),
        (
            "simulations",
            exp.simulations is not None and exp.cpu_per_simulation,
            "num_cpus_per_env_runner",
        ),
        ("resources_per_trial", exp.resources and exp.resources.cpu, "num_cpus_for_main_process"),
        ("resources_per_trial", exp.resources and exp.resources.gpu, "num_gpus_per_learner"),
    ):
        if value is None or value is False:
            continue
        if key in config and config[key] != value:
            raise SpecError(
                f"{spec_key} sets {key} to {value:g}, but config.{key} is {config[key]}",
                path=f"{where}.{spec_key}",
                suggestion="set only one of them",
            )
        config[key] = value

    def metric(key: str, at: str) -> str:
        new, warning = rllib.translate_metric(key, f"{where}.{at}")
        if warning:
            warnings.append(warning)
        return new

    stop = {metric(k, f"stop.{k}"): v for k, v in exp.stop.items()}
    expect = exp.expect.model_copy(
        update={"metrics": {metric(k, f"expect.{k}"): v for k, v in exp.expect.metrics.items()}}
    )
    scheduler = exp.scheduler
    time_attr = getattr(scheduler, "time_attr", None)
    if time_attr:
        scheduler = scheduler.model_copy(
            update={"time_attr": metric(time_attr, "scheduler.time_attr")}
        )
    checkpoint = exp.checkpoint
    if checkpoint.checkpoint_score_attribute:
        checkpoint = checkpoint.model_copy(
            update={
                "checkpoint_score_attribute": metric(
                    checkpoint.checkpoint_score_attribute,
                    "checkpoint_config.checkpoint_score_attribute",
                )
            }
        )
    return replace(
        exp,
        config=config,
        stop=stop,
        expect=expect,
        metric=metric(exp.metric, "metric") if exp.metric else None,
        scheduler=scheduler,
        checkpoint=checkpoint,
    )


def _rllib_bundles(exp: Experiment, env: EnvRef | None) -> tuple[dict[str, float], ...]:
    config = dict(exp.config)
    if env is not None and env.kind == "gym":
        config["env"] = env.env
    try:
        return rllib.bundles(exp.run, config)
    except SpecError as err:
        raise err.under(exp.key_path) from None


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
