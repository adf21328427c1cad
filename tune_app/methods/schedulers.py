"""The scheduler table: each entry's options (what `scheduler:` may say), its traits, and the
classes it runs as (plain, for BOHB; with seeds, `tune_app.seeds.wrappers` chooses), imported
only when built."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from tune_app import eta
from tune_app.methods.common import Context, Options
from tune_app.methods.searchers import BRACKET_SEARCHERS
from tune_app.objectives import MetricName
from tune_app.seeds import wrappers as seeded


class FifoOptions(Options):
    """Every trial runs until its `stop` criteria."""

    type: Literal["fifo"] = "fifo"


class HyperBandOptions(Options):
    """Tune's synchronous HyperBand: brackets of successive halving, paused trials resumed."""

    type: Literal["hyperband"] = "hyperband"
    time_attr: MetricName = Field(
        "training_iteration", description="the result key that measures time"
    )
    max_t: int = Field(81, gt=0, description="most time units one trial may run")
    reduction_factor: float = Field(3, gt=1, description="keep 1/reduction_factor at each rung")
    stop_last_trials: bool = Field(True, description="stop trials that reach max_t")


class AshaOptions(Options):
    """Asynchronous successive halving: stops laggards at each rung without pausing anyone."""

    type: Literal["asha"] = "asha"
    time_attr: MetricName = Field(
        "training_iteration", description="the result key that measures time"
    )
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
    time_attr: MetricName = Field("time_total_s", description="the result key that measures time")
    grace_period: float = Field(60.0, ge=0, description="time units before a trial can be stopped")
    min_samples_required: int = Field(3, ge=1, description="trials needed to compute a median")
    min_time_slice: int = Field(0, ge=0, description="time units a trial runs before it can pause")
    hard_stop: bool = Field(True, description="stop (not pause) trials below the median")

    @property
    def pauses(self) -> str | None:
        return None if self.hard_stop else "hard_stop: false"


class PbtOptions(Options):
    """Population-based training: every `perturbation_interval`, trials in the bottom quantile
    copy a top trial's checkpoint and config, then perturb the mutated keys. Needs a trainable
    that checkpoints (RLlib's algorithms do; a function trainable reports a checkpoint)."""

    type: Literal["pbt"] = "pbt"
    time_attr: MetricName = Field(
        "training_iteration", description="the result key that measures time"
    )
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
        """PBT's mutations as `space` parses them; grid axes make no sense there, and each key
        needs values to pick from (Tune fails mid-run on an empty list or a constant)."""
        from tune_app.errors import SpecError
        from tune_app.space import iter_domains, parse_space

        # The error's path names the option; these name the key under it.
        for where, v in _mutations(value):
            if isinstance(v, list) and not v:
                raise ValueError(f"{where}: an empty list leaves nothing to pick; list values")
            if not isinstance(v, dict | list):
                raise ValueError(
                    f"{where}: {v!r} is one value, nothing to mutate to; write a list of "
                    "values, or a search-space mapping such as {uniform: [low, high]}"
                )
        try:
            parsed = parse_space(value, "hyperparam_mutations")
        except SpecError as err:
            raise ValueError(f"{err.path}: {err.what}") from None
        for where, domain in iter_domains(parsed, "hyperparam_mutations"):
            if domain.is_grid:
                raise ValueError(f"{where}: a mutation is redrawn, not a grid; write choice: [...]")
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
        return tuple(value)  # strict: a tuple-typed key takes no list, YAML gives one

    def options(self) -> dict[str, Any]:
        from tune_app.space import parse_space, to_tune

        mutations = to_tune(parse_space(self.hyperparam_mutations, ""))
        return {**super().options(), "hyperparam_mutations": mutations}


class Pb2Options(Options):
    """Population-based bandits: PBT whose explore step picks new values with a Gaussian-process
    bandit within `hyperparam_bounds` (continuous keys only)."""

    type: Literal["pb2"] = "pb2"
    time_attr: MetricName = Field(
        "training_iteration", description="the result key that measures time"
    )
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


@dataclass(frozen=True)
class Variants:
    """The classes a scheduler runs as, as "module:Class" imported only when built, by what the
    experiment asks of it. A variant left None is not offered: the compatibility rules read
    these, so a spec asking for one is refused at validate, naming the entries that have it."""

    plain: str
    for_bohb: str | None = None  # the brackets BOHB's searcher fills


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
    packages: tuple[str, ...] = ()  # what it imports beyond the default install (import names)
    # How long a trial is expected to run under it (for the progress line's ETA), from its
    # options and the spec's stop on training_iteration; None: it stops no trial early, so a
    # trial runs to its stop.
    plan: Callable[[Any, int | None], eta.Plan] | None = None

    @property
    def takes_seeds(self) -> bool:
        """Whether a configuration's seeds stay one configuration under it: it judges by their
        aggregate, or judges nothing."""
        return seeded.takes_seeds(self.name, judges=self.needs_metric)

    def build(self, options: Options, ctx: Context) -> Any:
        """The Tune scheduler for an experiment (with seeds: the seeds package's choice)."""
        extra = self.context_options(ctx) if self.context_options else {}
        kwargs = {**options.options(), **extra}
        bohb = self.variants.for_bohb if ctx.searcher in BRACKET_SEARCHERS else None
        if ctx.seeds_aggregate and not bohb and self.name in seeded.SEEDED_SCHEDULERS:
            return seeded.seeded_scheduler(self.name, ctx.seeds_aggregate, **kwargs)
        return _import(bohb or self.variants.plain)(**kwargs)

    def trial_lengths(self, options: Options, bound: int | None) -> eta.Plan | None:
        """How long its trials are expected to run (`plan`); None where no trial is stopped
        early. `bound`: the spec's stop on training_iteration."""
        return self.plan(options, bound) if self.plan else None


def _asha_plan(options: AshaOptions, bound: int | None) -> eta.Plan:
    o = options
    return eta.asha(o.grace_period, o.max_t, o.reduction_factor, o.brackets, o.time_attr, bound)


def _hyperband_plan(options: HyperBandOptions, bound: int | None) -> eta.Plan:
    return eta.hyperband(options.max_t, options.reduction_factor, options.time_attr, bound)


def _no_plan(options: Options, bound: int | None) -> eta.Plan:
    return eta.Plan()  # it stops a trial by comparing it with the others' median: no plan


def _clones_logged(ctx: Context) -> dict[str, Any]:
    # Each clone (who copied whom, when, what changed) goes to the run folder's clones.jsonl.
    # require_attrs=False: a result without the metric (an RLlib iteration in which no episode
    # finished, a metric reported every other iteration) is skipped instead of failing the
    # trial; a metric never reported is caught by the stopper.
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
                for_bohb=f"{_INTERNALS}.hyperband:ResumableHyperBandForBOHB",
            ),
            bounds_time=True,
            pauses=True,
            synchronous=True,
            plan=_hyperband_plan,
            resume_note="Tune does not save HyperBand's brackets: the unfinished trials "
            "continue from their checkpoints in new brackets, finished trials stay as they are",
        ),
        Scheduler(
            "asha",
            AshaOptions,
            Variants(f"{_INTERNALS}.sparse:SparseASHA"),
            bounds_time=True,
            plan=_asha_plan,
        ),
        Scheduler(
            "median",
            MedianOptions,
            Variants(f"{_INTERNALS}.sparse:SparseMedian"),
            plan=_no_plan,
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
            packages=("sklearn",),  # Tune's PB2 fits scikit-learn's Gaussian process
        ),
    )
}
# Searchers that fill a scheduler's brackets themselves (BOHB): the scheduler's for_bohb variant.
