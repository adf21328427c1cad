"""The searcher table: each entry's options (what `search:` may say), what it needs from the
experiment, and how it builds Tune's search algorithm (Ray imported only then)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from tune_app.methods.common import Context, Options


class GridOptions(Options):
    """Tune's variant generator: grid axes crossed, sampled values drawn, all times num_samples."""

    type: Literal["grid"] = "grid"


class RandomOptions(Options):
    """Tune's variant generator seeded by `seed`: `num_samples` draws (times any grid axes)."""

    type: Literal["random"] = "random"


class HyperOptOptions(Options):
    """Tree-structured Parzen estimators through Tune's HyperOptSearch; no grid_search axes."""

    type: Literal["hyperopt"] = "hyperopt"
    n_initial_points: int = Field(20, ge=1, description="random draws before TPE takes over")
    gamma: float = Field(0.25, gt=0, lt=1, description="TPE's quantile separating good from bad")


class OptunaOptions(Options):
    """Optuna's samplers through Tune's OptunaSearch; the study is kept in the run folder's
    optuna_journal.log (`methods.optuna_study`), which `optuna-dashboard DIR/optuna_journal.log`
    opens."""

    type: Literal["optuna"] = "optuna"
    sampler: Literal["tpe", "nsga2", "cmaes", "random", "qmc"] = Field(
        "tpe",
        description="tpe (default), nsga2 (NSGA-II, for several objectives), cmaes (CMA-ES, "
        "one objective), random or qmc (quasi-Monte Carlo)",
    )
    n_startup_trials: int = Field(
        10, ge=0, description="random draws before tpe or cmaes takes over"
    )


class BohbOptions(Options):
    """BOHB: a TPE-like model proposing configurations for HyperBand's brackets (hpbandster).
    Pairs with `scheduler: hyperband`, which is chosen for it when the spec names none."""

    type: Literal["bohb"] = "bohb"
    min_points_in_model: int | None = Field(
        None, ge=1, description="results before the model is used (default: parameters + 1)"
    )
    top_n_percent: int = Field(15, gt=0, lt=100, description="percent of results called good")
    num_samples: int = Field(64, ge=1, description="candidates drawn to optimise the model")
    random_fraction: float = Field(1 / 3, ge=0, le=1, description="share of random proposals")
    bandwidth_factor: float = Field(3, gt=0, description="widens the model's kernels to sample")
    min_bandwidth: float = Field(1e-3, gt=0, description="narrowest kernel bandwidth")


def _variants(options: Options, ctx: Context) -> Any:
    from ray.tune.search import BasicVariantGenerator

    from tune_app.space import nested

    # Tune ignores TuneConfig.max_concurrent_trials for a search algorithm passed in (with only
    # a warning); the variant generator takes the limit itself.
    limit, seed = ctx.max_concurrent_trials or 0, ctx.seed
    # Warm start: the grid points left, or earlier configurations, made first, each in place of
    # one sample (Tune's points_to_evaluate; the runner counts num_samples so).
    points = [nested(values) for values in ctx.earlier] or None
    if ctx.seeds:  # every variant once per seed, its seeds made one after another
        from tune_app.seeds.wrappers import seeded_variants

        return seeded_variants(
            ctx.seeds, max_concurrent=limit, random_state=seed, points_to_evaluate=points
        )
    return BasicVariantGenerator(max_concurrent=limit, random_state=seed, points_to_evaluate=points)


def _hyperopt(options: Options, ctx: Context) -> Any:
    from ray.tune.search.hyperopt import HyperOptSearch

    from tune_app.methods.by_index import SearchesByIndex, handed_points
    from tune_app.methods.told import Replayed

    # HyperOpt hands lists (a choice's and constants) back as tuples: choices by index. Quantized
    # ranges it rounds as written (`Domain.tune_form`).
    points = handed_points(ctx.space, ctx.earlier) if ctx.earlier else None
    searcher: Any = HyperOptSearch(
        **options.options(), random_state_seed=ctx.seed, points_to_evaluate=points
    )
    if ctx.told:  # Tune's HyperOptSearch takes no evaluated_rewards: told as a run tells it
        searcher = Replayed(searcher, ctx.told)
    return SearchesByIndex(searcher)


def _optuna(options: Options, ctx: Context) -> Any:
    import optuna
    from ray.tune.search.optuna import OptunaSearch

    from tune_app.methods.by_index import SearchesByIndex, handed_points

    assert isinstance(options, OptunaOptions)
    seed, startup = ctx.seed, options.n_startup_trials
    samplers: dict[str, Callable[[], Any]] = {
        "tpe": lambda: optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup),
        "nsga2": lambda: optuna.samplers.NSGAIISampler(seed=seed),
        "cmaes": lambda: optuna.samplers.CmaEsSampler(seed=seed, n_startup_trials=startup),
        "random": lambda: optuna.samplers.RandomSampler(seed=seed),
        "qmc": lambda: optuna.samplers.QMCSampler(seed=seed),
    }
    from tune_app.methods.optuna_study import study_storage

    storage = study_storage(ctx.folder) if ctx.folder is not None else None
    quiet_optuna()
    # Tune's OptunaSearch names a value by its path joined with "/" (failing on a domain inside
    # a list) and takes as choices only None, bool, int, float and str: choices by index.
    # Several objectives: the searcher holds them (Tune's TuneConfig then names no metric).
    several: dict[str, Any] = {}
    if ctx.objectives:
        several = {"metric": list(ctx.objectives), "mode": list(ctx.modes)}
    # Warm start: earlier trials added to the study as complete ones; to a stored study once
    # (`ToldOnce`: Tune's evaluated_rewards added them again on every resume).
    points = handed_points(ctx.space, ctx.earlier, flat=True) if ctx.earlier else None
    once = storage is not None and ctx.folder is not None and bool(points and ctx.told)
    searcher: Any = OptunaSearch(
        sampler=samplers[options.sampler](),
        seed=seed,
        storage=storage,
        study_name=ctx.folder.name if ctx.folder is not None else None,
        points_to_evaluate=None if once else points,
        evaluated_rewards=None if once else list(ctx.told) or None,
        **several,
    )
    if ctx.constraints:  # set on each Optuna trial, which TPE and NSGA-II read
        from tune_app.ray_internals.constraints import ToldConstraints

        searcher = ToldConstraints(searcher, ctx.constraints)
    if once:  # outermost: ToldConstraints reads the OptunaSearch it wraps
        from tune_app.methods.told import ToldOnce

        assert points is not None and ctx.folder is not None
        searcher = ToldOnce(searcher, points, ctx.told, storage, ctx.folder.name)
    return SearchesByIndex(searcher)


def quiet_optuna() -> None:
    """Optuna's INFO lines off in this process: "A new study created", "Using an existing
    study" (as a resume sets the restored searcher up again, loading the study), one per trial;
    none has anything to act on. Its warnings stay."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)


# Optuna's samplers that search several objectives (CMA-ES models one).
OPTUNA_SEVERAL = ("tpe", "nsga2", "random", "qmc")


# Optuna's samplers that read a trial's constraints (`Trial.set_constraint`) as they sample.
OPTUNA_CONSTRAINED = ("tpe", "nsga2")


def reads_constraints(options: Options) -> bool:
    """Whether a search told its trials' constraint values samples by them (Optuna's TPE and
    NSGA-II); the others draw as if there were none."""
    return isinstance(options, OptunaOptions) and options.sampler in OPTUNA_CONSTRAINED


def _optuna_objectives(options: Options) -> str | None:
    """Why Optuna with these options cannot search several objectives; None: it can."""
    assert isinstance(options, OptunaOptions)
    if options.sampler in OPTUNA_SEVERAL:
        return None
    return (
        f"Optuna's {options.sampler} sampler models one objective "
        f"(samplers for several: {', '.join(OPTUNA_SEVERAL)})"
    )


def _any_objectives(options: Options) -> str | None:
    return None  # draws configurations without reading any metric


def _bohb(options: Options, ctx: Context) -> Any:
    import logging

    from ray.tune.search.bohb import TuneBOHB  # imports hpbandster (0.9 s): only when chosen

    from tune_app.methods.by_index import SearchesByIndex, handed_points

    # hpbandster logs a warning with its KDEs' raw data whenever a sampled point's expected
    # improvement is not finite (its KDE bandwidth collapses on a choice axis, say) and then
    # goes on sampling: dozens of lines a run that a user can do nothing about.
    logging.getLogger("hpbandster").setLevel(logging.ERROR)
    if ctx.seed is not None:
        import numpy as np

        # hpbandster draws from its models with numpy's global generator; TuneBOHB seeds only
        # the random configurations, so seeded runs parted once the model took over.
        np.random.seed(ctx.seed)
    # TuneBOHB would drop q and return numpy scalars: choices and quantized ranges by index.
    # Warm start: earlier configurations run first (TuneBOHB takes no scores with them).
    points = (
        handed_points(ctx.space, ctx.earlier, quantized=True, flat=True) if ctx.earlier else None
    )
    bohb = TuneBOHB(
        bohb_config=options.options(),
        seed=ctx.seed,
        max_concurrent=ctx.max_concurrent_trials or 0,
        points_to_evaluate=points,
    )
    return SearchesByIndex(bohb, quantized=True)


def _optuna_refuses(domain: Any) -> tuple[str, str] | None:
    """What Tune's OptunaSearch cannot sample as written: (why, suggestion), or None."""
    kind = domain.tune_form()[0]  # qlograndint with q = 1 is lograndint
    if kind in ("randn", "qrandn"):
        return "Optuna has no normal distribution", "use uniform, or search: hyperopt"
    if kind in ("qloguniform", "qlograndint"):
        plain = kind[1:]
        return (
            f"Optuna cannot round a log-scaled range to q: it would sample {plain} and ignore q",
            f"use {plain}, or {'quniform' if kind == 'qloguniform' else 'qrandint'}",
        )
    return None


def _bohb_refuses(domain: Any) -> tuple[str, str] | None:
    """What Tune's TuneBOHB cannot sample as written: (why, suggestion), or None."""
    if domain.kind in ("randn", "qrandn"):  # TuneBOHB: "does not support unbounded normal ..."
        return (
            "BOHB samples bounded ranges only, and a normal distribution has no bounds",
            "use uniform, or search: hyperopt",
        )
    from tune_app.ray_internals.versions import bohb_takes_ranges, installed

    if domain.kind != "choice" and not domain.is_grid and not bohb_takes_ranges():
        return (
            f"Ray {installed()}'s BOHB cannot search a numeric range with ConfigSpace 1.x "
            "(it hands ConfigSpace a q it no longer takes; Ray 2.56 fixed it)",
            'write choice: [...] of values, or pip install "ray[tune,rllib]>=2.56,<2.61"',
        )
    return None


@dataclass(frozen=True)
class Searcher:
    """One entry of the searcher table."""

    name: str
    options: type[Options]
    build: Callable[[Any, Context], Any]
    needs_metric: bool = False  # model-based: it learns from the metric
    takes_grid: bool = True  # grid_search axes allowed
    needs_sampled: bool = False  # at least one sampled (non-grid) value to search
    exact_trials: bool = True  # the trial count is known before the run
    limits_concurrency: bool = False  # TuneConfig.max_concurrent_trials applies (not its own)
    pairs_with: str | None = None  # the one scheduler it works with, chosen when none is named
    # Tune's variant generator: trials are independent draws, which a population scheduler's
    # exploits and explores may replace (a model-based searcher's would be lost on it).
    generates_variants: bool = False
    refuses: Callable[[Any], tuple[str, str] | None] | None = None  # a Domain it cannot sample
    # What it imports beyond the default install (import names; `extras.EXTRAS` says how to get
    # each), or a function of its options giving them (a variant that needs more).
    packages: tuple[str, ...] | Callable[[Any], tuple[str, ...]] = ()
    # Several objectives (`metric: [a, b]`): None, it needs one metric; else why these options
    # cannot search several (None: they can).
    objectives: Callable[[Options], str | None] | None = None
    # What `warm_start` gives it (`tune_app.warmstart`): "evaluated", earlier trials told as
    # scored (never run again); "first", earlier configurations run first, in place of samples;
    # "grid", the grid points the earlier runs ran skipped.
    warm: Literal["evaluated", "first", "grid"] = "first"
    # Called where a run is resumed, before Tune sets the searcher restored from its saved state
    # up again (which never calls `build`): Optuna loads its study there.
    on_restore: Callable[[], None] | None = None


SEARCHERS: dict[str, Searcher] = {
    s.name: s
    for s in (
        Searcher(
            "grid",
            GridOptions,
            _variants,
            generates_variants=True,
            objectives=_any_objectives,
            warm="grid",
        ),
        Searcher(
            "random", RandomOptions, _variants, generates_variants=True, objectives=_any_objectives
        ),
        Searcher(
            "hyperopt",
            HyperOptOptions,
            _hyperopt,
            needs_metric=True,
            takes_grid=False,
            needs_sampled=True,
            exact_trials=False,
            limits_concurrency=True,
            warm="evaluated",
        ),
        Searcher(
            "optuna",
            OptunaOptions,
            _optuna,
            needs_metric=True,
            takes_grid=False,
            needs_sampled=True,
            limits_concurrency=True,
            refuses=_optuna_refuses,
            packages=lambda o: ("optuna", "cmaes") if o.sampler == "cmaes" else ("optuna",),
            objectives=_optuna_objectives,
            warm="evaluated",
            on_restore=quiet_optuna,
        ),
        Searcher(
            "bohb",
            BohbOptions,
            _bohb,
            needs_metric=True,
            takes_grid=False,
            needs_sampled=True,
            pairs_with="hyperband",
            refuses=_bohb_refuses,
            packages=("hpbandster", "ConfigSpace"),
        ),
    )
}
# Searchers that fill a scheduler's brackets themselves (BOHB): the scheduler's for_bohb variant.
BRACKET_SEARCHERS = frozenset(s.name for s in SEARCHERS.values() if s.pairs_with is not None)
