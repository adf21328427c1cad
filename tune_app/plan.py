"""The plan: a validated spec joined with its trainables, sized and checked, before Ray starts.

Everything `validate` prints and everything the runner needs to build Tuners, computed without
importing Ray, so a spec that cannot run fails here with nothing written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tune_app import rllib
from tune_app.contract import Knob
from tune_app.envs import EnvRef, resolve_env, resolve_env_grid
from tune_app.errors import Collector, SpecError, did_you_mean
from tune_app.methods import (
    BRACKET_SEARCHERS,
    SCHEDULERS,
    SEARCHERS,
    mutated_paths,
    names_where,
    scheduler_of,
    searcher_of,
)
from tune_app.registry import TrainableRef, resolve
from tune_app.rundir.location import RunLocation
from tune_app.seeds import SEED_KEY
from tune_app.smoke import shrink
from tune_app.space import LIST_KINDS, RULES, Domain, grid_size, iter_domains, searched_paths
from tune_app.spec.models import Experiment, Mode, Spec


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
    folder: RunLocation  # where its run folder is, local or on cloud storage
    searched: tuple[str, ...]  # config paths of the searched parameters

    @property
    def location(self) -> str:
        """Where the results are, as a user names it (a folder or a URI)."""
        return self.folder.where

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
    rllib_checks: bool = False,
) -> Plan:
    """Check and size every experiment of `spec` against a machine of `cpus` CPUs.

    With `smoke`, every experiment is shrunk to a tiny run (see `tune_app.smoke`) whose results
    go to a `smoke/` folder under the storage path. With `rllib_checks`, RLlib itself (imported
    for it) also validates each RLlib experiment's config, as `run` does. Every problem of every
    experiment is reported at once.
    """
    cpus = float(cpus if cpus is not None else os.cpu_count() or 1)
    warnings: list[str] = list(spec.warnings)
    errors = Collector()
    plans = []
    for exp in spec.experiments:
        with errors.check():
            plans.append(
                _plan_experiment(exp, spec, cpus, storage_path, warnings, smoke, rllib_checks)
            )
    try:
        errors.raise_any()
    except SpecError as err:
        raise err.with_file(str(spec.file)) from None
    return Plan(
        spec=spec, experiments=tuple(plans), cpus=cpus, warnings=tuple(warnings), smoke=smoke
    )


def _plan_experiment(
    exp: Experiment,
    spec: Spec,
    cpus: float,
    storage: str | None,
    warnings: list[str],
    smoke: bool,
    rllib_checks: bool,
) -> ExperimentPlan:
    try:
        ref = resolve(exp.run, spec.file.parent)
    except SpecError as err:
        raise err.under(exp.key_path) from None
    errors = Collector()
    env = None
    with errors.check():
        env = _env(exp, ref, spec.file.parent, warnings)
    written = exp
    config_ok = True
    if ref.kind == "rllib":
        exp, failed = rllib.translate_experiment(
            exp, warnings, gym_env=env is None or all(e.kind == "gym" for e in env.members)
        )
        if failed is not None:
            errors.errors.append(failed)
            config_ok = False
    if smoke and config_ok:
        exp = shrink(exp, ref)
    metric, mode = None, None
    with errors.check():
        metric, mode = _metric_and_mode(exp, ref)
    for check in (
        lambda: _check_reported(exp, ref, metric),
        lambda: _check_knobs(exp, ref),
        lambda: _check_search(exp, metric),
        lambda: _check_checkpoints(exp, ref),
        lambda: _check_population(exp, ref, warnings),
        lambda: _check_seeds(exp, ref),
        lambda: _check_dotted_keys(exp),
    ):
        with errors.check():
            check()
    bundles: tuple[dict[str, float], ...] = ()
    with errors.check():
        if ref.kind == "rllib" and config_ok:
            # RLlib sizes a trial the same whatever the env: the first gymnasium one is checked.
            gym_ids = [e.env for e in env.members if e.kind == "gym"] if env is not None else []
            gym_id = gym_ids[0] if gym_ids else None
            bundles = rllib.trial_bundles(exp, written, gym_id, cpus, rllib_checks)
        elif ref.kind != "rllib":
            bundles = _bundles(exp, ref)
            _check_fits(exp, bundles, cpus)
    errors.raise_any()
    envs = len(env.grid) if env is not None and env.grid else 1
    trials = grid_size(exp.config) * envs * exp.num_samples * max(1, len(exp.seeds))
    _check_concurrency(exp, trials)
    return ExperimentPlan(
        experiment=exp,
        trainable=ref,
        env=env,
        metric=metric,
        mode=mode,
        trials=trials,
        trials_exact=searcher_of(exp.search).exact_trials,
        bundles=bundles,
        iterations=_iteration_bound(exp, trials),
        folder=RunLocation.for_experiment(storage or exp.storage_path, exp.name, smoke=smoke),
        searched=_searched(exp, env),
    )


def _searched(exp: Experiment, env: EnvRef | None) -> tuple[str, ...]:
    """The config paths trials differ in: sampled and grid values, the env grid, the seed, and
    the keys PBT or PB2 mutate (a trial ends with its own values of those)."""
    found = list(searched_paths(exp.config))
    found += ["env"] if env is not None and env.grid else []
    found += [SEED_KEY] if exp.seeds else []
    found += [p for p in mutated_paths(exp.scheduler) if p not in found]
    return tuple(found)


def _metric_and_mode(exp: Experiment, ref: TrainableRef) -> tuple[str | None, Mode | None]:
    declared = ref.info
    metric = exp.metric or (declared.metric if declared else None)
    mode: Mode | None = exp.mode
    if mode is None and declared is not None and metric == declared.metric:
        mode = declared.mode
    if ref.kind == "rllib":
        metric = metric or rllib.METRIC
        mode = mode or ("max" if metric == rllib.METRIC else None)
    if metric is not None and mode is None:
        raise SpecError(
            f"'mode' is needed with metric '{metric}'",
            path=f"{exp.key_path}.mode",
            allowed=("min", "max"),
        )
    needs = []
    if exp.expect.metrics:
        needs.append("expect's metric bounds (checked on the best trial)")
    if scheduler_of(exp.scheduler).needs_metric:
        needs.append(f"the {exp.scheduler.type} scheduler")
    if searcher_of(exp.search).needs_metric:
        needs.append(f"the {exp.search.type} search")
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
    """A registered trainable's config keys: an unknown key would be silently ignored, a value
    of the wrong type or a missing required knob would fail every trial."""
    if ref.info is None:
        return
    knobs = {k.name: k for k in ref.info.knobs}
    errors = Collector()
    config = exp.config if isinstance(exp.config, dict) else {}
    for key, value in config.items():
        with errors.check():
            where = f"{exp.key_path}.config.{key}"
            if key not in knobs:
                raise SpecError(
                    f"trainable '{ref.run}' has no config key '{key}'",
                    path=where,
                    allowed=list(knobs),
                    suggestion=did_you_mean(key, knobs) or "see `tune_app list`",
                )
            _check_knob_type(knobs[key], value, where, ref.run)
    for knob in knobs.values():
        given = knob.name in config or (knob.name == "env" and exp.env is not None)
        if knob.default is None and not given:
            errors.errors.append(
                SpecError(
                    f"trainable '{ref.run}' needs config key '{knob.name}' "
                    f"({knob.type.__name__}: {knob.doc})",
                    path=f"{exp.key_path}.config",
                    suggestion=f"add {knob.name}: under config (a value or a search space)",
                )
            )
    if exp.env is not None and "env" not in knobs:
        errors.errors.append(
            SpecError(
                f"trainable '{ref.run}' takes no env",
                path=f"{exp.key_path}.env",
                suggestion="remove env:",
            )
        )
    errors.raise_any()


def _check_knob_type(knob: Knob, value: Any, where: str, run: str) -> None:
    """Every value `value` can take (a constant, a list's values, a sampler's kind) is of the
    knob's type; an int is a float, a bool is neither."""
    expected = knob.type.__name__
    if isinstance(value, Domain):
        if value.kind in LIST_KINDS:
            for item in value.args:
                _check_knob_type(knob, item, where, run)
            return
        produced = int if RULES[value.kind].integer else float
        if produced is knob.type or (produced is int and knob.type is float):
            return
        raise SpecError(
            f"trainable '{run}' reads '{knob.name}' as {expected}, but {value.kind} draws "
            f"{produced.__name__}s",
            path=where,
            suggestion="use randint, qrandint or lograndint for an int"
            if knob.type is int
            else "use choice: [...] or grid_search: [...]",
        )
    if _of_type(value, knob.type):
        return
    raise SpecError(
        f"trainable '{run}' reads '{knob.name}' as {expected}, but got {value!r}",
        path=where,
        suggestion=f"write {'an' if expected[0] in 'aeiou' else 'a'} {expected} ({knob.doc})",
    )


def _of_type(value: Any, kind: type) -> bool:
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


def _check_search(exp: Experiment, metric: str | None) -> None:
    """What the searcher needs of the space: no grid axes, at least one sampled value."""
    entry = searcher_of(exp.search)
    domains = list(iter_domains(exp.config))
    errors = Collector()
    if not entry.takes_grid:
        for path, domain in domains:
            if domain.is_grid:
                errors.errors.append(
                    SpecError(
                        f"{entry.name} cannot search a grid_search axis",
                        path=f"{exp.key_path}.config.{path}",
                        suggestion="use choice: [...] instead, or search: grid",
                    )
                )
    if entry.refuses is not None:
        for path, domain in domains:
            refused = entry.refuses(domain)
            if refused is not None:
                errors.errors.append(
                    SpecError(
                        refused[0],
                        path=f"{exp.key_path}.config.{path}",
                        suggestion=refused[1],
                    )
                )
    if entry.needs_sampled and not domains:
        errors.errors.append(
            SpecError(
                f"{entry.name} needs at least one sampled parameter in config",
                path=f"{exp.key_path}.search",
                suggestion="or use search: grid",
            )
        )
    errors.raise_any()


def _check_checkpoints(exp: Experiment, ref: TrainableRef) -> None:
    """Registered trainables are functions; a user's `module:name` is checked once imported
    (`check_loaded`): it may be a `tune.Trainable` class."""
    if ref.kind == "registered":
        _refuse_checkpoint_keys(exp, "a function trainable saves checkpoints itself", exp.key_path)


def _refuse_checkpoint_keys(exp: Experiment, why: str, where: str) -> None:
    """Tune takes checkpoint_frequency and checkpoint_at_end for class trainables only."""
    errors = Collector()
    for key in ("checkpoint_frequency", "checkpoint_at_end"):
        if getattr(exp.checkpoint, key):
            errors.errors.append(
                SpecError(
                    f"{key} applies to class trainables (RLlib algorithms, tune.Trainable "
                    f"classes that save checkpoints) only; {why}",
                    path=f"{where}.checkpoint_config.{key}".lstrip("."),
                )
            )
    errors.raise_any()


def saves_checkpoints(trainable: Any) -> bool | None:
    """For a `tune.Trainable` class: whether it overrides `save_checkpoint` (Tune's own raises
    NotImplementedError). None for anything else (a function saves when it chooses to)."""
    from ray import tune

    if isinstance(trainable, type) and issubclass(trainable, tune.Trainable):
        return trainable.save_checkpoint is not tune.Trainable.save_checkpoint
    return None


def check_loaded(ep: ExperimentPlan, trainable: Any) -> None:
    """What only the imported trainable tells: a user's function cannot take Tune's checkpoint
    keys, and a class that saves no checkpoints cannot be checkpointed, paused or copied.
    Paths are relative to the experiment."""
    exp = ep.experiment
    if ep.trainable.kind != "function":
        return
    saves = saves_checkpoints(trainable)
    if saves:
        return
    if saves is None:
        why = f"'{ep.trainable.run}' is a function: it saves checkpoints itself"
        _refuse_checkpoint_keys(exp, why, "")
        return
    why = f"class '{ep.trainable.run}' does not implement save_checkpoint"
    errors = Collector()
    with errors.check():
        _refuse_checkpoint_keys(exp, why, "")
    entry = scheduler_of(exp.scheduler)
    if entry.population or entry.pauses:
        errors.errors.append(
            SpecError(
                f"scheduler {entry.name} {'copies' if entry.population else 'pauses'} trials "
                f"through checkpoints, but {why}",
                path="scheduler",
                suggestion="implement save_checkpoint and load_checkpoint, or use scheduler: asha",
            )
        )
    errors.raise_any()


def _check_population(exp: Experiment, ref: TrainableRef, warnings: list[str]) -> None:
    """PBT and PB2 copy checkpoints between trials: a trainable that saves none is never
    exploited, and a mutated key the trainable does not read changes nothing."""
    entry = scheduler_of(exp.scheduler)
    if not entry.population:
        return
    where = f"{exp.key_path}.scheduler"
    if not searcher_of(exp.search).generates_variants:
        allowed = names_where(SEARCHERS, lambda s: s.generates_variants)
        raise SpecError(
            f"scheduler {entry.name} runs with {' or '.join(allowed)} search only, not "
            f"{exp.search.type}: its population's exploits and explores are the search (Tune "
            "refuses a searcher beside it when the run starts)",
            path=f"{exp.key_path}.search",
            allowed=allowed,
            suggestion=f"write search: {allowed[-1]}",
        )
    options = exp.scheduler.model_dump()
    mutated = list(options.get("hyperparam_mutations") or options.get("hyperparam_bounds") or {})
    if ref.info is not None:
        if not ref.info.checkpoints:
            raise SpecError(
                f"scheduler {entry.name} copies checkpoints between trials, but trainable "
                f"'{ref.run}' saves none",
                path=where,
                suggestion="use a trainable that reports tune.Checkpoint (es_cartpole) or an "
                "RLlib algorithm, or another scheduler",
            )
        knobs = [k.name for k in ref.info.knobs]
        for key in mutated:
            if key not in knobs:
                raise SpecError(
                    f"trainable '{ref.run}' has no config key '{key}' to mutate",
                    path=f"{where}.{key}",
                    allowed=knobs,
                    suggestion=did_you_mean(key, knobs),
                )
    elif ref.kind == "rllib":
        option = next(k for k in ("hyperparam_mutations", "hyperparam_bounds") if k in options)
        for path in mutated_paths(exp.scheduler):
            rllib.check_mutated_key(exp.run, path.split(".")[0], f"{where}.{option}.{path}")
    else:
        warnings.append(
            f"{where}: {entry.name} exploits only trials that report checkpoints "
            "(tune.report(..., checkpoint=...)) and restore from tune.get_checkpoint()"
        )


def _check_seeds(exp: Experiment, ref: TrainableRef) -> None:
    """The seeds axis passes each seed as config.seed: the trainable must read it, the config
    must not set it too, and the searcher must take repeated configurations."""
    if not exp.seeds:
        return
    where = f"{exp.key_path}.seeds"
    if isinstance(exp.config, dict) and SEED_KEY in exp.config:
        raise SpecError(
            "config.seed is set by the seeds axis; the config must not set it too",
            path=f"{exp.key_path}.config.seed",
            suggestion="remove config.seed, or remove seeds",
        )
    if ref.info is not None:
        ref.info.refuse_missing_knob(SEED_KEY, "it cannot run on seeds", path=where)
    entry = searcher_of(exp.search)
    if entry.pairs_with is not None:
        others = names_where(SEARCHERS, lambda s: s.pairs_with is None)
        raise SpecError(
            f"search {entry.name} runs its own brackets and cannot judge a configuration by "
            "several seeds",
            path=where,
            suggestion=f"use search: {_or(others[::-1])} with seeds",
        )
    sampled = any(not d.is_grid for _, d in iter_domains(exp.config))
    if entry.takes_grid and exp.num_samples > 1 and not sampled:
        raise SpecError(
            f"num_samples {exp.num_samples} repeats every grid configuration on the same "
            f"seeds (nothing is sampled), so each seed would count {exp.num_samples} times",
            path=f"{exp.key_path}.num_samples",
            suggestion=f"leave num_samples out and write seeds: "
            f"{len(exp.seeds) * exp.num_samples} for more seeds",
        )
    if not scheduler_of(exp.scheduler).takes_seeds:
        raise SpecError(
            f"scheduler {exp.scheduler.type} copies single trials into others, so the seeds of "
            "a configuration would not stay one configuration",
            path=where,
            suggestion=f"use scheduler {_or(names_where(SCHEDULERS, lambda e: e.takes_seeds))} "
            "with seeds",
        )


def _check_dotted_keys(exp: Experiment) -> None:
    """Results and readers name config values by dotted paths: a key `opt.lr` beside a nested
    `opt: {lr: ...}` would be two values under one name, each read as the other."""
    seen: set[str] = set()

    def walk(tree: Any, prefix: str) -> None:
        if not isinstance(tree, dict):
            return
        for key, value in tree.items():
            path = f"{prefix}{key}"
            if path in seen:
                raise SpecError(
                    f"'{path}' names two values: a key with a dot in it and a nested key",
                    path=f"{exp.key_path}.config.{path}",
                    suggestion="rename one of them (a key without dots, or nest both)",
                )
            seen.add(path)
            walk(value, f"{path}.")

    walk(exp.config, "")


def _check_concurrency(exp: Experiment, trials: int) -> None:
    """Tune's synchronous HyperBand halves a rung among the trials its bracket holds when the
    last of them reaches it. Under a concurrency limit a trial waiting at a rung still counts
    against the limit, so no later trial joins its bracket: each rung is "halved" among the few
    trials let in at once, and with a limit below the reduction factor no trial is ever stopped
    early. Measured with random search, max_t 9, 17 trials: 75 iterations in all without a
    limit, 153 (all 17 to max_t) with max_concurrent_trials 2. BOHB's HyperBand waits for its
    bracket to fill, and its searcher does not count waiting trials, so it is not affected."""
    limit, entry = exp.max_concurrent_trials, scheduler_of(exp.scheduler)
    if not entry.synchronous or exp.search.type in BRACKET_SEARCHERS or limit is None:
        return
    if limit >= trials:
        return  # every trial may be made at once: the limit changes nothing
    asynchronous = names_where(SCHEDULERS, lambda e: e.bounds_time and not e.synchronous)
    raise SpecError(
        f"max_concurrent_trials {limit} with scheduler {entry.name}: Tune's synchronous "
        f"{entry.name} halves each rung among the trials its bracket holds at that moment, and "
        f"the limit lets it hold {limit} of {trials}, so trials would not be stopped early",
        path=f"{exp.key_path}.max_concurrent_trials",
        suggestion=f"leave max_concurrent_trials out (trials that do not fit wait, and "
        f"{entry.name} resumes its paused ones), or use scheduler {_or(asynchronous)} "
        "(asynchronous: made for a fixed number of trials at once), or search "
        f"{_or(sorted(BRACKET_SEARCHERS))}",
    )


def _or(names: list[str]) -> str:
    """'a, b or c'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _check_fits(exp: Experiment, bundles: tuple[dict[str, float], ...], cpus: float) -> None:
    need = sum(b.get("CPU", 0.0) for b in bundles)
    if need > cpus:
        where = "simulations" if len(bundles) > 1 else "resources_per_trial.cpu"
        raise SpecError(
            f"one trial needs {need:g} CPUs (bundles {list(bundles)}) but the machine has {cpus:g}",
            path=f"{exp.key_path}.{where}",
            suggestion="lower resources_per_trial.cpu, simulations or cpu_per_simulation",
        )


def _env(exp: Experiment, ref: TrainableRef, spec_dir: Path, warnings: list[str]) -> EnvRef | None:
    """Check `env:` for trainables that make the env themselves; a user function gets the text."""
    env = exp.env
    if ref.kind == "rllib" and env is None and isinstance(exp.config, dict):
        env = exp.config.get("env")  # the classic RLlib YAMLs put env in config
        if isinstance(env, Domain) and env.is_grid:
            return _env_grid(exp, list(env.args), spec_dir, warnings)
        if env is not None and not isinstance(env, str):
            raise SpecError(
                "config.env must be one environment name or a grid_search over names",
                path=f"{exp.key_path}.config.env",
                suggestion="env: CartPole-v1, or env: {grid_search: [CartPole-v1, Acrobot-v1]}",
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
        found = resolve_env(env, spec_dir)
    except SpecError as err:
        raise err.under(exp.key_path) from None
    if found.note:
        where = "env" if exp.env is not None else "config.env"
        warnings.append(f"{exp.key_path}.{where}: {found.note}")
    return found


def _env_grid(exp: Experiment, envs: Any, spec_dir: Path, warnings: list[str]) -> EnvRef:
    """RLlib's `config.env: {grid_search: [...]}`: every env checked, and a searcher that takes
    grid axes."""
    entry = searcher_of(exp.search)
    if not entry.takes_grid:
        raise SpecError(
            f"{entry.name} cannot search a grid_search axis",
            path=f"{exp.key_path}.config.env",
            suggestion="one experiment per env, or search: grid",
        )
    try:
        found = resolve_env_grid(envs, "config.env", spec_dir)
    except SpecError as err:
        raise err.under(exp.key_path) from None
    if found.note:
        warnings.append(f"{exp.key_path}.config.env.{found.note}")
    return found


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
        cpu, gpu, memory = exp.resources.cpu, exp.resources.gpu, exp.resources.memory
    else:
        cpu, gpu, memory = (declared.head_cpu if declared else 1.0), 0.0, 0.0
    head = {"CPU": float(cpu)}
    if gpu:
        head["GPU"] = float(gpu)
    if memory:
        head["memory"] = float(memory)
    # An all-zero head bundle is fine: Tune then runs the trial's process outside the bundles.
    return (head, *({"CPU": float(exp.cpu_per_simulation)} for _ in range(sims)))


def _iteration_bound(exp: Experiment, trials: int) -> int | None:
    caps = []
    if "training_iteration" in exp.stop:
        caps.append(int(exp.stop["training_iteration"]))
    sched = exp.scheduler
    if (
        scheduler_of(sched).bounds_time
        and getattr(sched, "time_attr", None) == "training_iteration"
    ):
        caps.append(int(sched.model_dump()["max_t"]))
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
