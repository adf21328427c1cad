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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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


def _variants(options: Options, ctx: Context) -> Any:
    from ray.tune.search import BasicVariantGenerator

    # Tune ignores TuneConfig.max_concurrent_trials for a search algorithm passed in (with only
    # a warning); the variant generator takes the limit itself.
    return BasicVariantGenerator(
        max_concurrent=ctx.max_concurrent_trials or 0, random_state=ctx.seed
    )


def _hyperopt(options: Options, ctx: Context) -> Any:
    from ray.tune.search.hyperopt import HyperOptSearch

    return HyperOptSearch(**options.options(), random_state_seed=ctx.seed)


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


SEARCHERS: dict[str, Searcher] = {
    s.name: s
    for s in (
        Searcher("grid", GridOptions, _variants),
        Searcher("random", RandomOptions, _variants),
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


class MedianOptions(Options):
    """Median stopping: stop a trial whose best result is below the median of others' so far."""

    type: Literal["median"] = "median"
    time_attr: str = Field("time_total_s", description="the result key that measures time")
    grace_period: float = Field(60.0, ge=0, description="time units before a trial can be stopped")
    min_samples_required: int = Field(3, ge=1, description="trials needed to compute a median")
    min_time_slice: int = Field(0, ge=0, description="time units a trial runs before it can pause")
    hard_stop: bool = Field(True, description="stop (not pause) trials below the median")


def _fifo(options: Options, ctx: Context) -> Any:
    from ray.tune.schedulers import FIFOScheduler

    return FIFOScheduler()


def _hyperband(options: Options, ctx: Context) -> Any:
    from tune_app.hyperband import ResumableHyperBand

    return ResumableHyperBand(**options.options())


def _asha(options: Options, ctx: Context) -> Any:
    from ray.tune.schedulers import ASHAScheduler

    return ASHAScheduler(**options.options())


def _median(options: Options, ctx: Context) -> Any:
    from ray.tune.schedulers import MedianStoppingRule

    return MedianStoppingRule(**options.options())


@dataclass(frozen=True)
class Scheduler:
    """One entry of the scheduler table."""

    name: str
    options: type[Options]
    build: Callable[[Any, Context], Any]
    needs_metric: bool = True  # it compares trials by the metric
    bounds_time: bool = False  # `max_t` of `time_attr` bounds every trial


SCHEDULERS: dict[str, Scheduler] = {
    s.name: s
    for s in (
        Scheduler("fifo", FifoOptions, _fifo, needs_metric=False),
        Scheduler("hyperband", HyperBandOptions, _hyperband, bounds_time=True),
        Scheduler("asha", AshaOptions, _asha, bounds_time=True),
        Scheduler("median", MedianOptions, _median),
    )
}


def searcher_of(options: Options) -> Searcher:
    """The table entry of a spec's parsed `search:`."""
    return SEARCHERS[options.type]


def scheduler_of(options: Options) -> Scheduler:
    """The table entry of a spec's parsed `scheduler:`."""
    return SCHEDULERS[options.type]
