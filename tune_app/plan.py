"""The plan: a validated spec joined with its trainables, sized and checked, before Ray starts.

Everything `validate` prints and everything the runner needs to build Tuners, computed without
importing Ray, so a spec that cannot run fails here with nothing written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tune_app import objectives
from tune_app.envs import EnvRef
from tune_app.errors import Collector, SpecError
from tune_app.extras import check_methods
from tune_app.kinds import Layout, TrainableKind
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
from tune_app.resources import Machine, trials_at_once
from tune_app.rundir.location import RunLocation
from tune_app.seeds import SEED_KEY
from tune_app.smoke import shrink
from tune_app.space import iter_domains, searched_paths
from tune_app.spec.models import Experiment, Mode, Spec
from tune_app.trackers import check as check_trackers


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
    layout: Layout | None = None  # the sampling layout the kind chose for the search, if any

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

    def at_once(self, machine: Machine) -> int:
        """Trials that run at the same time on `machine`: every resource of the bundles
        counted (`resources.trials_at_once`), at most the trials and max_concurrent_trials."""
        limit = min(self.trials, self.experiment.max_concurrent_trials or self.trials)
        return trials_at_once(self.bundles, machine, limit)


@dataclass(frozen=True)
class Plan:
    """A whole spec file, ready to run; `machine` is what the trial sizes were checked against
    (this machine, the one `--cpus`/`--gpus` name, or a cluster's nodes)."""

    spec: Spec
    experiments: tuple[ExperimentPlan, ...]
    machine: Machine
    warnings: tuple[str, ...] = ()  # the spec's legacy-key warnings, then the plan's
    smoke: bool = False  # shrunk by --smoke: metric expectations are not checked

    @property
    def cpus(self) -> float:
        """The machine's CPUs; infinite for a cluster not yet joined."""
        return self.machine.cpus


def make_plan(
    spec: Spec,
    *,
    cpus: float | None = None,
    gpus: float | None = None,
    machine: Machine | None = None,
    storage_path: str | None = None,
    smoke: bool = False,
    rllib_checks: bool = False,
) -> Plan:
    """Check and size every experiment of `spec` against `machine`, by default this one (or
    one of `cpus` CPUs and `gpus` GPUs; infinite `cpus`: a cluster known only once joined).

    With `smoke`, every experiment is shrunk to a tiny run (see `tune_app.smoke`) whose results
    go to a `smoke/` folder under the storage path. With `rllib_checks`, RLlib itself (imported
    for it) also validates each RLlib experiment's config, as `run` does. Every problem of every
    experiment is reported at once.
    """
    if machine is None:
        known = cpus is None or math.isfinite(cpus)
        machine = Machine.local(cpus, gpus) if known else Machine.unknown()
    warnings: list[str] = list(spec.warnings)
    errors = Collector()
    plans = []
    for exp, share in zip(spec.experiments, _shares(spec.experiments), strict=True):
        with errors.check():
            plans.append(
                _plan_experiment(
                    exp,
                    spec,
                    machine,
                    machine.share(share),
                    storage_path,
                    warnings,
                    smoke,
                    rllib_checks,
                )
            )
    try:
        errors.raise_any()
    except SpecError as err:
        raise err.with_file(str(spec.file)) from None
    return Plan(
        spec=spec,
        experiments=tuple(plans),
        machine=machine,
        warnings=tuple(warnings),
        smoke=smoke,
    )


def _shares(experiments: tuple[Experiment, ...]) -> list[float]:
    """The part of the machine each experiment's layout plans for: a spec's experiments run at
    once on one machine, so each gets a part in proportion to the trials it can run at once
    (its trials as written, an env grid included, under its max_concurrent_trials)."""
    claims = [min(e.trials(), e.max_concurrent_trials or math.inf) for e in experiments]
    total = sum(claims)
    return [c / total for c in claims]


def _plan_experiment(
    exp: Experiment,
    spec: Spec,
    machine: Machine,
    share: Machine,
    storage: str | None,
    warnings: list[str],
    smoke: bool,
    rllib_checks: bool,
) -> ExperimentPlan:
    try:
        ref = resolve(exp.run, spec.file.parent)
    except SpecError as err:
        raise err.under(exp.key_path) from None
    kind = ref.kind
    errors = Collector()
    env = None
    with errors.check():
        env = kind.env(exp, spec.file.parent, warnings)
    written = exp
    exp, failed = kind.translate(exp, warnings, env)
    envs = len(env.grid) if env is not None and env.grid else 1
    trials = exp.trials(envs)
    layout = None
    if failed is not None:
        errors.errors.append(failed)
    else:  # chosen for the search as written: --smoke then shrinks it like any config
        exp, layout = kind.layout(exp, trials, share)
    if smoke and failed is None:
        exp = shrink(exp, ref)
    metric, mode = None, None
    with errors.check():
        metric, mode = _metric_and_mode(exp, kind)
    for check in (
        lambda: _check_reported(exp, kind, metric),
        lambda: kind.check_config(exp),
        lambda: _check_search(exp, metric),
        lambda: kind.check_checkpoint_keys(exp),
        lambda: _check_population(exp, kind, warnings),
        lambda: _check_seeds(exp, kind),
        lambda: _check_dotted_keys(exp),
        lambda: check_trackers(exp.trackers),
        lambda: check_methods(exp.search, exp.scheduler, exp.key_path),
        lambda: objectives.check(exp),
    ):
        with errors.check():
            check()
    bundles: tuple[dict[str, float], ...] = ()
    with errors.check():
        if failed is None:  # an untranslated config cannot be sized
            bundles = kind.bundles(exp, written, env, machine, rllib_checks)
    errors.raise_any()
    _warn_unwatched_time(exp, warnings)
    warnings += [w for w in (objectives.unread_constraints(exp),) if w is not None]
    trials = exp.trials(envs)
    _check_concurrency(exp, trials)
    folder = RunLocation.for_experiment(storage or exp.storage_path, exp.name, smoke=smoke)
    unwritable = folder.unwritable()
    if unwritable:
        raise SpecError(
            f"results cannot be written there: {unwritable}",
            path="--storage-path" if storage else f"{exp.key_path}.storage_path",
            suggestion="choose another storage_path (or --storage-path)",
        )
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
        folder=folder,
        searched=_searched(exp, env),
        layout=layout,
    )


def _searched(exp: Experiment, env: EnvRef | None) -> tuple[str, ...]:
    """The config paths trials differ in: sampled and grid values, the env grid, the seed, and
    the keys PBT or PB2 mutate (a trial ends with its own values of those)."""
    found = list(searched_paths(exp.config))
    found += ["env"] if env is not None and env.grid else []
    found += [SEED_KEY] if exp.seeds else []
    found += [p for p in mutated_paths(exp.scheduler) if p not in found]
    return tuple(found)


def _metric_and_mode(exp: Experiment, kind: TrainableKind) -> tuple[str | None, Mode | None]:
    if exp.objectives:  # several: Tune names no metric, the searcher holds them
        return None, None
    default_metric, default_mode = kind.default_metric
    metric = exp.metric or default_metric
    mode: Mode | None = exp.mode
    if mode is None and default_metric is not None and metric == default_metric:
        mode = default_mode
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


def _check_reported(exp: Experiment, kind: TrainableKind, metric: str | None) -> None:
    """Keys a trainable never reports would silently never stop or rank anything."""
    keys = [(f"stop.{k}", k) for k in exp.stop]
    keys += [(f"expect.{k}", k) for k in exp.expect.metrics]
    if metric is not None:
        keys.append(("metric", metric))
    keys += [(f"metric[{i}]", o.name) for i, o in enumerate(exp.objectives)]
    keys += [(f"constraints.{c.name}", c.name) for c in exp.constraints]
    time_attr = getattr(exp.scheduler, "time_attr", None)
    if time_attr is not None:
        keys.append(("scheduler.time_attr", time_attr))
    kind.check_reported(exp, keys)


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


def _check_population(exp: Experiment, kind: TrainableKind, warnings: list[str]) -> None:
    """PBT and PB2 copy checkpoints between trials: a trainable that saves none is never
    exploited, and a mutated key the trainable does not read changes nothing."""
    entry = scheduler_of(exp.scheduler)
    if not entry.population:
        return
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
    kind.check_population(exp, warnings)


def _check_seeds(exp: Experiment, kind: TrainableKind) -> None:
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
    kind.check_seeds(exp)
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


def _warn_unwatched_time(exp: Experiment, warnings: list[str]) -> None:
    """Tune checks `stop` only when a result arrives: `time_total_s` there never ends a trial
    that stops reporting, which only `result_timeout_s` fails."""
    if "time_total_s" in exp.stop and exp.result_timeout_s is None:
        warnings.append(
            f"{exp.key_path}.stop.time_total_s: checked only when a trial reports a result, so "
            "it never stops a trial that hangs; set result_timeout_s to fail a trial silent "
            "that long (time_budget_s bounds the whole search)"
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


def layout_lines(plan: Plan) -> list[str]:
    """One line per experiment whose kind chose a layout: what, how many trials at once, why."""
    return [f"{ep.name}: {ep.layout.line}" for ep in plan.experiments if ep.layout is not None]


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
