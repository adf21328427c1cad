"""The plan: a validated spec joined with its trainables, sized and checked, before Ray starts.

Everything `validate` prints and everything the runner needs to build Tuners, computed without
importing Ray, so a spec that cannot run fails here with nothing written. The checks it runs on
each experiment are in `tune_app.plan.checks`.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from dataclasses import dataclass, replace

from tune_app.envs import EnvRef
from tune_app.errors import Collector, SpecError
from tune_app.extras import check_methods
from tune_app.kinds import TrainableKind
from tune_app.methods import mutated_paths, scheduler_of, searcher_of
from tune_app.plan import checks
from tune_app.plan.smoke import shrink
from tune_app.plan.types import ExperimentPlan, Plan, Sharing
from tune_app.registry import TrainableRef, resolve
from tune_app.resources import Machine, trials_at_once
from tune_app.rundir.allowed import home_problem, local_uri_problem, root_problem
from tune_app.rundir.location import RunLocation
from tune_app.rundir.storage import unreachable
from tune_app.seeds import SEED_KEY
from tune_app.space import searched_paths
from tune_app.spec.models import Mode
from tune_app.spec.resolved import Experiment, Spec
from tune_app.trackers import check as check_trackers
from tune_app.user_code.locating import shadowing
from tune_app.warmstart.earlier import read_warm_start


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

    With `smoke`, every experiment is shrunk to a tiny run (see `tune_app.plan.smoke`) whose results
    go to a `smoke/` folder under the storage path. With `rllib_checks`, RLlib itself (imported
    for it) also validates each RLlib experiment's config, as `run` does. Every problem of every
    experiment is reported at once.
    """
    if machine is None:
        known = cpus is None or math.isfinite(cpus)
        machine = Machine.local(cpus, gpus) if known else Machine.unknown()
    warnings: list[str] = list(spec.warnings)
    errors = Collector()
    drafts = []
    for exp in spec.experiments:
        with errors.check():
            drafts.append(_draft(exp, spec, machine, warnings))
    plans = []
    for draft, part in zip(drafts, _parts(drafts, machine), strict=True):
        beside = _sharing(draft, drafts)
        with errors.check():
            plans.append(
                _plan_experiment(
                    draft, machine, part, beside, storage_path, warnings, smoke, rllib_checks
                )
            )
    with errors.check():
        _folders_apart(plans)
    with errors.check():
        _nothing_shadowed(plans)
    with errors.check():
        checks.check_tune_variables()
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


def _nothing_shadowed(plans: list[ExperimentPlan]) -> None:
    """Refuse a module file beside a user's module named as one of Python's own or an installed
    package's: the run puts that folder on the path of every process it starts, Ray's own
    included; `json.py` there stopped a local Ray from starting (a time-out after 35 s), and
    `ray.py` ran inside Ray's processes."""
    for ep in plans:
        for file, shadowed in shadowing(ep.search_path):
            raise SpecError(
                f"{file} has the name of {shadowed}: a run puts its folder on the path of every "
                "process it starts, Ray's own included, which would import it in that module's "
                "place",
                path=f"{ep.experiment.key_path}.run",
                suggestion=f"rename {file.name} (and its imports)",
            )


def _folders_apart(plans: list[ExperimentPlan]) -> None:
    """Refuse experiments whose run folders lie one inside another (`storage_path: /r/b` for
    `a`, `/r` for `b`): one run folder has one writer, and the readers would take one run's
    folder for a run of the other."""
    where = [(ep, ep.folder.uri or str(ep.folder.local)) for ep in plans]
    for (inner, at), (outer, around) in itertools.permutations(where, 2):
        if at == around or at.startswith(around.rstrip("/") + "/"):
            raise SpecError(
                f"experiment '{inner.name}' would write its run in {at}, inside experiment "
                f"'{outer.name}''s run folder {around}",
                path=f"{inner.experiment.key_path}.storage_path",
                suggestion="give the experiments storage paths that do not hold one another",
            )


@dataclass(frozen=True)
class _Draft:
    """An experiment resolved and translated, before its part of the machine is known: the
    resources its trials take decide that part, and its layout is chosen on it."""

    exp: Experiment  # translated
    written: Experiment  # as the spec wrote it
    ref: TrainableRef
    env: EnvRef | None
    failed: SpecError | None  # a config that cannot be translated (in `errors` too)
    errors: Collector  # its problems so far, said with the plan's others
    takes: frozenset[str]  # the resources a trial of it takes


def _draft(exp: Experiment, spec: Spec, machine: Machine, warnings: list[str]) -> _Draft:
    """`exp` resolved, its env checked, its config translated, and what its trials take."""
    try:
        ref = resolve(exp.run, spec.file.parent)
    except SpecError as err:
        raise err.under(exp.key_path) from None
    kind = ref.kind
    errors = Collector()
    env = None
    with errors.check():
        env = kind.env(exp, spec.file.parent, warnings)
    translated, failed = kind.translate(exp, warnings, env)
    errors.errors += [failed] if failed is not None else []
    # Sized before its layout, fit unchecked: a layout chooses how much of a resource, not which.
    takes = frozenset(k for node in machine.nodes for k in node)  # unsized: any of them
    with contextlib.suppress(SpecError):  # refused, and said, once its layout is chosen
        if failed is None:
            sized = kind.bundles(translated, exp, env, Machine.unknown(), False)
            takes = frozenset(k for b in sized for k, v in b.items() if v > 0)
    return _Draft(translated, exp, ref, env, failed, errors, takes)


def _parts(drafts: list[_Draft], machine: Machine) -> list[Machine]:
    """The part of the machine each experiment's layout is chosen on, so that the experiments'
    trials, run at the same time, fit side by side: each resource is split among the experiments
    whose trials take it, in proportion to the trials each can run at once (its trials as
    written, an env grid included, under its max_concurrent_trials). One whose trials take no
    GPU leaves the GPUs to those that do; a spec of one experiment plans for the machine. Nothing
    holds an experiment to its part (Tune places each one's trials as resources free up), so its
    trials at once are counted on the whole machine."""
    claims = [min(d.written.trials(), d.written.max_concurrent_trials or math.inf) for d in drafts]
    parts = []
    for d, claim in zip(drafts, claims, strict=True):
        users = {
            r: sum(c for o, c in zip(drafts, claims, strict=True) if r in o.takes) for r in d.takes
        }
        parts.append(machine.share({r: claim / total for r, total in users.items()}))
    return parts


def _sharing(draft: _Draft, drafts: list[_Draft]) -> Sharing | None:
    """What `draft`'s trials take that the spec's other experiments' trials take too."""
    others = [o for o in drafts if o is not draft and o.takes & draft.takes]
    if not others:
        return None
    shared = sorted(set().union(*(o.takes & draft.takes for o in others)))
    return Sharing(tuple(shared), tuple(o.exp.name for o in others))


def _plan_experiment(
    draft: _Draft,
    machine: Machine,
    share: Machine,
    sharing: Sharing | None,
    storage: str | None,
    warnings: list[str],
    smoke: bool,
    rllib_checks: bool,
) -> ExperimentPlan:
    exp, ref, env, failed, errors = draft.exp, draft.ref, draft.env, draft.failed, draft.errors
    kind = ref.kind
    envs = len(env.grid) if env is not None and env.grid else 1
    trials = exp.trials(envs)
    layout = None
    if failed is None:  # chosen for the search as written: --smoke then shrinks it like any config
        exp, layout = kind.layout(exp, trials, share)
    # The warm start is checked against the space as written, not --smoke's, and the keys
    # against every expect bound (--smoke puts its own in place of the others).
    written_size = exp
    if smoke and failed is None:
        exp = shrink(exp, ref)
    metric, mode = None, None
    with errors.check():
        metric, mode = _metric_and_mode(exp, kind)
    for check in (
        lambda: checks.check_reported(written_size, kind, metric),
        lambda: kind.check_config(exp),
        lambda: checks.check_search(exp),
        lambda: kind.check_checkpoint_keys(exp),
        lambda: checks.check_population(exp, kind, warnings),
        lambda: checks.check_seeds(exp, kind),
        lambda: checks.check_result_buffer(exp),
        lambda: checks.check_dotted_keys(exp),
        lambda: check_trackers(exp.trackers),
        lambda: check_methods(exp.search, exp.scheduler, exp.key_path),
        lambda: checks.check_objectives(exp),
    ):
        with errors.check():
            check()
    warm = None
    with errors.check():
        warm = read_warm_start(written_size, metric, mode, envs)
    bundles: tuple[dict[str, float], ...] = ()
    with errors.check():
        if failed is None:  # an untranslated config cannot be sized
            bundles = kind.bundles(exp, draft.written, env, machine, rllib_checks)
    errors.raise_any()
    checks.warn_unwatched_time(exp, warnings)
    checks.warn_no_metric(exp, metric, warnings)
    checks.warn_unread_constraints(exp, warnings)
    if smoke and warm is not None:
        warnings.append(f"{exp.key_path}.warm_start: checked; a --smoke run starts without it")
        warm = None
    if warm is not None and not warm.handed:  # interrupted runs whose trials never ended
        named = ", ".join(r.run for r in warm.runs)
        holds = "holds" if len(warm.runs) == 1 else "hold"
        warnings.append(
            f"{exp.key_path}.warm_start: {named} {holds} no finished trial with a score to hand "
            "over: the search starts as it would without a warm start"
        )
    trials = warm.trials(exp, envs) if warm is not None else exp.trials(envs)
    checks.check_concurrency(exp, trials)
    limit = min(trials, exp.max_concurrent_trials or trials)
    at_once = trials_at_once(bundles, machine, limit)  # as Tune runs it: alone on the machine
    if layout is not None:  # said for the search as it runs: --smoke's, on its part
        line = kind.layout_line(exp, layout, at_once, share)
        layout = replace(layout, line=line + (f"; {sharing.line}" if sharing else ""))
    where = storage or exp.storage_path
    folder = RunLocation.for_experiment(where, exp.name, smoke=smoke)
    unwritable = (
        local_uri_problem(where)
        or home_problem(where)
        or root_problem(where)
        or unreachable(where)
        or folder.unwritable()
    )
    if unwritable:
        raise SpecError(
            f"results cannot be written there: {unwritable}",
            path="--storage-path" if storage else f"{exp.key_path}.storage_path",
            suggestion="choose another storage_path (or --storage-path)",
        )
    stop = _stop_bound(exp)
    return ExperimentPlan(
        experiment=exp,
        trainable=ref,
        env=env,
        metric=metric,
        mode=mode,
        trials=trials,
        trials_exact=searcher_of(exp.search).exact_trials,
        bundles=bundles,
        at_once=at_once,
        iterations=_iteration_bound(exp, trials, stop),
        folder=folder,
        searched=_searched(exp, env),
        layout=layout,
        warm=warm,
        trial_ends=scheduler_of(exp.scheduler).trial_lengths(exp.scheduler, stop),
        stop_iterations=stop,
        sharing=sharing,
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


def _stop_bound(exp: Experiment) -> int | None:
    """The most iterations a trial runs under the spec's stop on training_iteration, if it has
    one: it stops at its first result at or past the bound (2.5: the 3rd; 0 or less: the 1st)."""
    bound = exp.stop.get("training_iteration")
    return None if bound is None else max(1, math.ceil(bound))


def _iteration_bound(exp: Experiment, trials: int, stop: int | None) -> int | None:
    """All trials' iterations at most: each one's stop, or the scheduler's max_t where it is
    counted in iterations, the lower."""
    caps = [] if stop is None else [stop]
    sched = exp.scheduler
    if (
        scheduler_of(sched).bounds_time
        and getattr(sched, "time_attr", None) == "training_iteration"
    ):
        caps.append(int(sched.model_dump()["max_t"]))
    return trials * min(caps) if caps else None
