"""The searchers and schedulers a spec can name, as two tables.

Each entry holds its options model (what `search:` / `scheduler:` may say), what it needs from
the experiment (a metric, no grid axes, at least one sampled value) and how it builds the Tune
object. The spec's unions and name lists come from these tables, so adding a searcher or a
scheduler is one entry plus its test. Ray is imported only when a Tune object is built, so
`validate` stays Ray-free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

if TYPE_CHECKING:
    from tune_app.rundir.location import RunLocation


class Options(BaseModel):
    """A searcher's or scheduler's options as written in a spec: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    type: str

    def options(self) -> dict[str, Any]:
        """The options without `type`, as Tune's constructor takes them."""
        return self.model_dump(exclude={"type"})


@dataclass(frozen=True)
class Context:
    """What building a Tune object needs from the experiment besides its options."""

    seed: int | None = None
    max_concurrent_trials: int | None = None
    folder: RunLocation | None = None  # the experiment's run folder (a searcher's own files)
    searcher: str = "grid"  # the experiment's searcher (BOHB pairs with its own HyperBand)
    seeds_aggregate: str | None = None  # with seeds: how a configuration's seeds are judged
    seeds: tuple[int, ...] = ()  # the seeds axis (grid and random searches make its trials)


# ---- searchers -------------------------------------------------------------------------------


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
    optuna.db, which `optuna-dashboard sqlite:///DIR/optuna.db` opens."""

    type: Literal["optuna"] = "optuna"
    sampler: Literal["tpe", "cmaes", "random", "qmc"] = Field(
        "tpe", description="tpe (default), cmaes (CMA-ES), random or qmc (quasi-Monte Carlo)"
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

    # Tune ignores TuneConfig.max_concurrent_trials for a search algorithm passed in (with only
    # a warning); the variant generator takes the limit itself.
    limit, seed = ctx.max_concurrent_trials or 0, ctx.seed
    if ctx.seeds:  # every variant once per seed, its seeds made one after another
        from tune_app.ray_internals.seeded import SeededVariants

        return SeededVariants(ctx.seeds, max_concurrent=limit, random_state=seed)
    return BasicVariantGenerator(max_concurrent=limit, random_state=seed)


def _hyperopt(options: Options, ctx: Context) -> Any:
    from ray.tune.search.hyperopt import HyperOptSearch

    return HyperOptSearch(**options.options(), random_state_seed=ctx.seed)


def _optuna(options: Options, ctx: Context) -> Any:
    import optuna
    from ray.tune.search.optuna import OptunaSearch

    assert isinstance(options, OptunaOptions)
    seed, startup = ctx.seed, options.n_startup_trials
    samplers: dict[str, Callable[[], Any]] = {
        "tpe": lambda: optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup),
        "cmaes": lambda: optuna.samplers.CmaEsSampler(seed=seed, n_startup_trials=startup),
        "random": lambda: optuna.samplers.RandomSampler(seed=seed),
        "qmc": lambda: optuna.samplers.QMCSampler(seed=seed),
    }
    storage = None
    if ctx.folder is not None:
        storage = optuna.storages.RDBStorage(f"sqlite:///{ctx.folder.optuna_db.resolve()}")
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # one line per trial otherwise
    return OptunaSearch(
        sampler=samplers[options.sampler](),
        seed=seed,
        storage=storage,
        study_name=ctx.folder.name if ctx.folder is not None else None,
    )


def _bohb(options: Options, ctx: Context) -> Any:
    import logging

    from ray.tune.search.bohb import TuneBOHB

    # hpbandster logs a warning with its KDEs' raw data whenever a sampled point's expected
    # improvement is not finite (its KDE bandwidth collapses on a choice axis, say) and then
    # goes on sampling: dozens of lines a run that a user can do nothing about.
    logging.getLogger("hpbandster").setLevel(logging.ERROR)
    if ctx.seed is not None:
        import numpy as np

        # hpbandster draws from its models with numpy's global generator; TuneBOHB seeds only
        # the random configurations, so seeded runs parted once the model took over.
        np.random.seed(ctx.seed)
    return TuneBOHB(
        bohb_config=options.options(), seed=ctx.seed, max_concurrent=ctx.max_concurrent_trials or 0
    )


def _optuna_refuses(domain: Any) -> tuple[str, str] | None:
    """What Tune's OptunaSearch cannot sample as written: (why, suggestion), or None."""
    kind, args = domain.kind, domain.args
    if kind in ("randn", "qrandn"):
        return "Optuna has no normal distribution", "use uniform, or search: hyperopt"
    if kind in ("qloguniform", "qlograndint"):
        plain = kind[1:]
        return (
            f"Optuna cannot round a log-scaled range to q: it would sample {plain} and ignore q",
            f"use {plain}, or {'quniform' if kind == 'qloguniform' else 'qrandint'}",
        )
    if kind == "qrandint" and args[0] % args[2]:
        lower = (args[0] // args[2] + 1) * args[2]
        return (
            f"Optuna steps from the lower bound: qrandint {list(args)} would draw "
            f"{args[0]}, {args[0] + args[2]}, ..., not multiples of {args[2]}",
            f"start at a multiple of q, e.g. qrandint: [{lower}, {args[1]}, {args[2]}]",
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


SEARCHERS: dict[str, Searcher] = {
    s.name: s
    for s in (
        Searcher("grid", GridOptions, _variants, generates_variants=True),
        Searcher("random", RandomOptions, _variants, generates_variants=True),
        Searcher(
            "hyperopt",
            HyperOptOptions,
            _hyperopt,
            needs_metric=True,
            takes_grid=False,
            needs_sampled=True,
            exact_trials=False,
            limits_concurrency=True,
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
        ),
        Searcher(
            "bohb",
            BohbOptions,
            _bohb,
            needs_metric=True,
            takes_grid=False,
            needs_sampled=True,
            pairs_with="hyperband",
        ),
    )
}


# ---- schedulers ------------------------------------------------------------------------------


class FifoOptions(Options):
    """Every trial runs until its `stop` criteria."""

    type: Literal["fifo"] = "fifo"


class HyperBandOptions(Options):
    """Tune's synchronous HyperBand: brackets of successive halving, paused trials resumed."""

    type: Literal["hyperband"] = "hyperband"
    time_attr: str = Field("training_iteration", description="the result key that measures time")
    max_t: int = Field(81, gt=0, description="most time units one trial may run")
    reduction_factor: float = Field(3, gt=1, description="keep 1/reduction_factor at each rung")
    stop_last_trials: bool = Field(True, description="stop trials that reach max_t")


class AshaOptions(Options):
    """Asynchronous successive halving: stops laggards at each rung without pausing anyone."""

    type: Literal["asha"] = "asha"
    time_attr: str = Field("training_iteration", description="the result key that measures time")
    max_t: int = Field(100, gt=0, description="most time units one trial may run")
    grace_period: int = Field(1, gt=0, description="time units before a trial can be stopped")
    reduction_factor: float = Field(4, gt=1, description="keep 1/reduction_factor at each rung")
    brackets: int = Field(1, ge=1, description="number of brackets")
    stop_last_trials: bool = Field(True, description="stop trials that reach max_t")

    @model_validator(mode="after")
    def _grace_within_max_t(self) -> AshaOptions:
        if self.grace_period > self.max_t:
            raise ValueError(
                f"grace_period {self.grace_period} is beyond max_t {self.max_t}: ASHA could "
                "never stop a trial early"
            )
        return self


class MedianOptions(Options):
    """Median stopping: stop a trial whose best result is below the median of others' so far."""

    type: Literal["median"] = "median"
    time_attr: str = Field("time_total_s", description="the result key that measures time")
    grace_period: float = Field(60.0, ge=0, description="time units before a trial can be stopped")
    min_samples_required: int = Field(3, ge=1, description="trials needed to compute a median")
    min_time_slice: int = Field(0, ge=0, description="time units a trial runs before it can pause")
    hard_stop: bool = Field(True, description="stop (not pause) trials below the median")


class PbtOptions(Options):
    """Population-based training: every `perturbation_interval`, trials in the bottom quantile
    copy a top trial's checkpoint and config, then perturb the mutated keys. Needs a trainable
    that checkpoints (RLlib's algorithms do; a function trainable reports a checkpoint)."""

    type: Literal["pbt"] = "pbt"
    time_attr: str = Field("training_iteration", description="the result key that measures time")
    perturbation_interval: float = Field(4, gt=0, description="time units between perturbations")
    burn_in_period: float = Field(0, ge=0, description="time units before the first perturbation")
    hyperparam_mutations: dict[str, Any] = Field(
        min_length=1,
        description="config key -> a search-space mapping (resampled), a list (picked from), or "
        "a mapping of those for nested keys",
    )
    quantile_fraction: float = Field(
        0.25, ge=0, le=0.5, description="share of trials copied from, and copying"
    )
    resample_probability: float = Field(
        0.25, ge=0, le=1, description="chance a mutated key is redrawn, not perturbed"
    )
    perturbation_factors: tuple[float, float] = Field(
        (1.2, 0.8), description="a continuous value is multiplied by one of these"
    )
    synch: bool = Field(False, description="perturb all trials at once at each interval")

    @field_validator("hyperparam_mutations")
    @classmethod
    def _spaces(cls, value: dict[str, Any]) -> dict[str, Any]:
        _check_mutations(value, "hyperparam_mutations")
        return value

    @field_validator("perturbation_factors", mode="before")
    @classmethod
    def _two_factors(cls, value: Any) -> Any:
        numbers = isinstance(value, list | tuple) and all(
            isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in value
        )
        if not numbers or len(value) != 2:
            raise ValueError(
                f"perturbation_factors: write two positive factors [up, down] (a perturbed "
                f"value is multiplied by one of them), got {value!r}"
            )
        return value

    def options(self) -> dict[str, Any]:
        from tune_app.space import parse_space, to_tune

        found = super().options()
        found["hyperparam_mutations"] = to_tune(parse_space(self.hyperparam_mutations, ""))
        found["perturbation_factors"] = tuple(self.perturbation_factors)
        return found


class Pb2Options(Options):
    """Population-based bandits: PBT whose explore step picks new values with a Gaussian-process
    bandit within `hyperparam_bounds` (continuous keys only)."""

    type: Literal["pb2"] = "pb2"
    time_attr: str = Field("training_iteration", description="the result key that measures time")
    perturbation_interval: float = Field(4, gt=0, description="time units between perturbations")
    hyperparam_bounds: dict[str, list[float]] = Field(
        min_length=1, description="config key -> [low, high]"
    )
    quantile_fraction: float = Field(
        0.25, ge=0, le=0.5, description="share of trials copied from, and copying"
    )
    synch: bool = Field(False, description="perturb all trials at once at each interval")

    @field_validator("hyperparam_bounds")
    @classmethod
    def _ordered(cls, value: dict[str, list[float]]) -> dict[str, list[float]]:
        for key, bounds in value.items():
            if len(bounds) != 2 or not bounds[0] < bounds[1]:
                raise ValueError(f"{key}: write [low, high] with low below high, got {bounds}")
        return value


def _mutations(tree: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """PBT's mutations as (dotted config path, what it is mutated to): a nested mapping is
    walked, a search-space mapping (`{uniform: [...]}`) or anything else is one mutation."""
    from tune_app.space import KINDS

    found = []
    for key, value in tree.items():
        nested = isinstance(value, dict) and not (len(value) == 1 and next(iter(value)) in KINDS)
        found += _mutations(value, f"{prefix}{key}.") if nested else [(f"{prefix}{key}", value)]
    return found


def mutated_paths(options: Options) -> list[str]:
    """Dotted config paths a population-based scheduler changes (its mutations' or bounds'
    keys); none for other schedulers. They are searched values: a trial ends with its own."""
    if isinstance(options, Pb2Options):
        return list(options.hyperparam_bounds)
    if not isinstance(options, PbtOptions):
        return []
    return [path for path, _ in _mutations(options.hyperparam_mutations)]


def _check_mutations(value: Any, path: str) -> None:
    """PBT's mutations as `space` parses them; grid axes make no sense there, and each key needs
    values to pick from (Tune fails mid-run on an empty list or a constant)."""
    from tune_app.errors import SpecError
    from tune_app.space import iter_domains, parse_space

    # The error's path names the option; these name the key under it.
    for where, v in _mutations(value) if isinstance(value, dict) else []:
        if isinstance(v, list) and not v:
            raise ValueError(f"{where}: an empty list leaves nothing to pick; list values")
        if not isinstance(v, dict | list):
            raise ValueError(
                f"{where}: {v!r} is one value, nothing to mutate to; write a list of "
                "values, or a search-space mapping such as {uniform: [low, high]}"
            )

    try:
        parsed = parse_space(value, path)
    except SpecError as err:
        raise ValueError(f"{err.path}: {err.what}") from None
    for where, domain in iter_domains(parsed, path):
        if domain.is_grid:
            raise ValueError(f"{where}: a mutation is redrawn, not a grid; write choice: [...]")


@dataclass(frozen=True)
class Variants:
    """The classes a scheduler runs as, as "module:Class" imported only when built, by what the
    experiment asks of it. A variant left None is not offered: the compatibility rules read
    these, so a spec asking for one is refused at validate, naming the entries that have it."""

    plain: str
    seeded: str | None = None  # judges each configuration by its seeds' aggregate
    for_bohb: str | None = None  # the brackets BOHB's searcher fills

    def choose(self, ctx: Context) -> str:
        """The variant for an experiment: BOHB's brackets, seeded, or plain."""
        if ctx.searcher in BRACKET_SEARCHERS and self.for_bohb:
            return self.for_bohb
        if ctx.seeds_aggregate and self.seeded:
            return self.seeded
        return self.plain


def _import(path: str) -> Any:
    import importlib

    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Scheduler:
    """One entry of the scheduler table: its options, the classes it runs as, and its traits."""

    name: str
    options: type[Options]
    variants: Variants
    needs_metric: bool = True  # it compares trials by the metric
    bounds_time: bool = False  # `max_t` of `time_attr` bounds every trial
    population: bool = False  # trials copy each other's checkpoints (needs checkpoints)
    pauses: bool = False  # pauses trials and resumes them from checkpoints
    # Halves a rung when every trial of its bracket got there: a concurrency limit below the
    # trial count keeps later trials out of the bracket, so nothing is ever stopped early.
    synchronous: bool = False
    resume_note: str | None = None  # what a resumed run of it does differently
    # Constructor options taken from the experiment, not the spec's options.
    context_options: Callable[[Context], dict[str, Any]] | None = None

    @property
    def takes_seeds(self) -> bool:
        """Whether a configuration's seeds stay one configuration under it: it judges by their
        aggregate, or judges nothing."""
        return self.variants.seeded is not None or not self.needs_metric

    def build(self, options: Options, ctx: Context) -> Any:
        """The Tune scheduler for an experiment."""
        cls = _import(self.variants.choose(ctx))
        extra = self.context_options(ctx) if self.context_options else {}
        scheduler = cls(**options.options(), **extra)
        if ctx.seeds_aggregate and self.variants.seeded:
            scheduler.how = ctx.seeds_aggregate
        return scheduler


def _clones_logged(ctx: Context) -> dict[str, Any]:
    # Each clone (who copied whom, when, what changed) goes to the run folder's clones.jsonl.
    # require_attrs=False: an RLlib iteration in which no episode finished has no return; PBT
    # skips it instead of failing the trial (a metric never reported is caught by the stopper).
    return {"folder": ctx.folder, "log_config": True, "require_attrs": False}


_INTERNALS = "tune_app.ray_internals"
SCHEDULERS: dict[str, Scheduler] = {
    s.name: s
    for s in (
        Scheduler(
            "fifo", FifoOptions, Variants("ray.tune.schedulers:FIFOScheduler"), needs_metric=False
        ),
        Scheduler(
            "hyperband",
            HyperBandOptions,
            Variants(
                f"{_INTERNALS}.hyperband:ResumableHyperBand",
                seeded=f"{_INTERNALS}.seeded:SeededHyperBand",
                for_bohb=f"{_INTERNALS}.hyperband:ResumableHyperBandForBOHB",
            ),
            bounds_time=True,
            pauses=True,
            synchronous=True,
            resume_note="Tune does not save HyperBand's brackets: the unfinished trials "
            "continue from their checkpoints in new brackets, finished trials stay as they are",
        ),
        Scheduler(
            "asha",
            AshaOptions,
            Variants("ray.tune.schedulers:ASHAScheduler", seeded=f"{_INTERNALS}.seeded:SeededASHA"),
            bounds_time=True,
        ),
        Scheduler(
            "median",
            MedianOptions,
            Variants(
                "ray.tune.schedulers:MedianStoppingRule", seeded=f"{_INTERNALS}.seeded:SeededMedian"
            ),
        ),
        Scheduler(
            "pbt",
            PbtOptions,
            Variants(f"{_INTERNALS}.population:AppPBT"),
            population=True,
            context_options=_clones_logged,
        ),
        Scheduler(
            "pb2",
            Pb2Options,
            Variants(f"{_INTERNALS}.population:AppPB2"),
            population=True,
            context_options=_clones_logged,
        ),
    )
}
# Searchers that fill a scheduler's brackets themselves (BOHB): the scheduler's for_bohb variant.
BRACKET_SEARCHERS = frozenset(s.name for s in SEARCHERS.values() if s.pairs_with is not None)


def names_where(table: dict[str, Any], trait: Callable[[Any], bool]) -> list[str]:
    """The names of a table's entries that have a trait, for messages that list what is allowed."""
    return [name for name, entry in table.items() if trait(entry)]


def searcher_of(options: Options) -> Searcher:
    """The table entry of a spec's parsed `search:`."""
    return SEARCHERS[options.type]


def scheduler_of(options: Options) -> Scheduler:
    """The table entry of a spec's parsed `scheduler:`."""
    return SCHEDULERS[options.type]
