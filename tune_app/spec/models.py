"""The spec as a file writes it: strict pydantic models of either form, checked key by key.
What a run is given, once resolved, is `tune_app.spec.resolved`.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tune_app.errors import did_you_mean
from tune_app.methods import SCHEDULERS, SEARCHERS
from tune_app.objectives import MetricName, metric_name
from tune_app.ray_internals.buffering import WINDOW_S
from tune_app.resources import finer_than_ray
from tune_app.rundir.allowed import file_name_problem
from tune_app.scoring import SCOPE_PATTERN
from tune_app.seeds import MAX_SEEDS, SEED_LIMIT
from tune_app.trackers.options import TrackersSpec

Mode = Literal["min", "max"]

# A trainable reference: a registered or RLlib name, or `package.module:function`. Checked by
# pattern before anything is imported, so a spec can never smuggle in code to run.
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
RUN_PATTERN = rf"^([A-Za-z_][A-Za-z0-9_-]*|{_IDENT}(\.{_IDENT})*:{_IDENT})$"
# An experiment's name is a folder name: letters and digits of any script and '_', then also '-'
# and '.' (never first), and at most NAME_MAX_BYTES in UTF-8, so the folder and the files named
# after it (its lock, `.<name>.lock`) fit the 255 bytes a file name may hold.
NAME_PATTERN = r"^\w[\w.-]*$"
NAME_MAX_BYTES = 200


class _Strict(BaseModel):
    """A spec model: unknown keys are errors, and values are taken as written. Strict: a number
    is a YAML number, never `true` (pydantic's lax mode reads it as 1) or text ("4" read as 4),
    and a whole number has no fraction; a float key takes an int. YAML gives sequences as lists,
    so a tuple-typed key turns them into tuples first (`_as_tuple`)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, strict=True, allow_inf_nan=False
    )


def _as_tuple(value: Any) -> Any:
    """A YAML sequence (a list) for a tuple-typed key, which strict mode takes only as a tuple."""
    return tuple(value) if isinstance(value, list) else value


# ---- searchers and schedulers: their options models come from the tables in `methods` ------


def _shorthand(value: Any) -> Any:
    """`search: grid` is short for `search: {type: grid}`."""
    return {"type": value} if isinstance(value, str) else value


SEARCHES = tuple(SEARCHERS)
SCHEDULER_NAMES = tuple(SCHEDULERS)
# The unions of the tables' options models (built at import: a type checker sees Any).
_SearchModel: Any = Union[tuple(s.options for s in SEARCHERS.values())]  # noqa: UP007
_SchedulerModel: Any = Union[tuple(s.options for s in SCHEDULERS.values())]  # noqa: UP007
SearchSpec = Annotated[
    _SearchModel,
    Field(discriminator="type"),
    BeforeValidator(_shorthand, json_schema_input_type=Literal[SEARCHES] | _SearchModel),
]
SchedulerSpec = Annotated[
    _SchedulerModel,
    Field(discriminator="type"),
    BeforeValidator(_shorthand, json_schema_input_type=Literal[SCHEDULER_NAMES] | _SchedulerModel),
]


# ---- experiments -----------------------------------------------------------------------------


def _ray_amount(value: float) -> float:
    problem = finer_than_ray(value)
    if problem is not None:
        raise ValueError(problem)
    return value


Amount = Annotated[float, AfterValidator(_ray_amount)]  # of a resource, as Ray takes one


class ResourcesSpec(_Strict):
    """What one trial reserves (its head bundle when the trial runs simulations); Tune's own
    spellings `CPU` and `GPU` are read as `cpu` and `gpu`."""

    cpu: Amount = Field(1, ge=0, description="CPUs per trial (Tune also reads CPU)")
    gpu: Amount = Field(0, ge=0, description="GPUs per trial (Tune also reads GPU)")
    memory: Amount = Field(0, ge=0, description="bytes of memory Ray reserves per trial")

    @model_validator(mode="before")
    @classmethod
    def _tune_spellings(cls, value: Any) -> Any:
        """Tune's own spellings (CPU, GPU) read as cpu and gpu; Ray 1.x's extra bundles
        refused with what replaced them."""
        if not isinstance(value, dict):
            return value
        out = dict(value)
        for upper in ("CPU", "GPU"):
            if upper in out:
                if upper.lower() in out:
                    raise ValueError(f"both {upper} and {upper.lower()} are given: keep one")
                out[upper.lower()] = out.pop(upper)
        for extra in ("extra_cpu", "extra_gpu"):
            if extra in out:
                raise ValueError(
                    f"{extra} (Ray 1.x) has no equivalent in Ray 2: a trial's parallel work gets "
                    "bundles of its own with simulations: N and cpu_per_simulation"
                )
        return out


class CheckpointSpec(_Strict):
    """Tune's CheckpointConfig: how many checkpoints to keep and when to take them."""

    num_to_keep: int | None = Field(None, ge=1, description="checkpoints kept per trial (all)")
    checkpoint_frequency: int = Field(0, ge=0, description="iterations between checkpoints")
    checkpoint_at_end: bool | None = Field(None, description="checkpoint when a trial ends")
    checkpoint_score_attribute: MetricName | None = Field(
        None, description="metric ranking checkpoints"
    )
    checkpoint_score_order: Mode = Field("max", description="keep the highest or lowest")


class Bound(_Strict):
    """An expected range of a metric: `min`, `max` or both, inclusive."""

    min: float | None = Field(None, description="lowest allowed")
    max: float | None = Field(None, description="highest allowed")

    @model_validator(mode="after")
    def _one_bound(self) -> Bound:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min:g} is above max {self.max:g}")
        return self


def _metric_names(keyed: dict[str, Any]) -> dict[str, Any]:
    """A mapping keyed by metric names (a `MetricName` key's error would read as a key of the
    wrong type)."""
    for name in keyed:
        metric_name(name)
    return keyed


# Bounds each on the metric its key names (constraints, expect).
MetricBounds = Annotated[dict[str, Bound], AfterValidator(_metric_names)]


def _split_expect(value: Any) -> Any:
    """`expect: {max_errored_trials: 0, some_metric: {min: 1}}`: metrics beside the one count."""
    if not isinstance(value, dict):
        return value
    metrics = {k: v for k, v in value.items() if k not in ("max_errored_trials", "smoke")}
    out = {"metrics": metrics}
    for key in ("max_errored_trials", "smoke"):
        if key in value:
            out[key] = value[key]
    return out


class ExpectSpec(_Strict):
    """What a run must reach, checked after it ends (CI smoke searches); unmet exits 1."""

    max_errored_trials: int = Field(0, ge=0, description="errored trials allowed")
    metrics: MetricBounds = Field(
        default_factory=dict, description="the best trial's last value of each metric"
    )
    smoke: MetricBounds = Field(
        default_factory=dict,
        description="bounds a --smoke run must meet, in place of the others (which a run of "
        "seconds cannot), so CI gates on a metric",
    )
    smoke_run: bool = Field(
        False,
        exclude=True,
        description="set by --smoke when `smoke` bounds were stated: `metrics` holds them",
    )


class ExpectAsWritten(BaseModel):
    """`expect:` as a file writes it (also its JSON Schema): what a run must reach, checked
    after it ends, unmet exits 1. `max_errored_trials` beside a bound for each metric named."""

    model_config = ConfigDict(extra="allow", title="Expect")
    __pydantic_extra__: dict[str, Bound]  # every other key is a metric
    max_errored_trials: int = Field(0, ge=0, description="errored trials allowed")
    smoke: dict[str, Bound] | None = Field(
        None,
        description="bounds a --smoke run must meet, in place of the others (which a run of "
        "seconds cannot), so CI gates on a metric",
    )


ExpectInput = Annotated[
    ExpectSpec,
    BeforeValidator(_split_expect, json_schema_input_type=ExpectAsWritten),
]


def _one_pattern(value: Any) -> Any:
    """`include: timers` is short for `include: [timers]`."""
    return (value,) if isinstance(value, str) else _as_tuple(value)


KEY_PATTERN = r"^\S+$"  # a result key, a group prefix or a glob: no spaces, as in Tune's keys
KeyPattern = Annotated[str, Field(pattern=KEY_PATTERN)]
KeyPatterns = Annotated[
    tuple[KeyPattern, ...],
    BeforeValidator(_one_pattern, json_schema_input_type=KeyPattern | list[KeyPattern]),
]


class TensorBoardSpec(_Strict):
    """Which result keys TensorBoard shows besides the spec's metric, stop and expect keys
    (always shown, first). A pattern is a key, a group prefix (`timers`) or a glob (`*_timer`)."""

    include: KeyPatterns = Field(
        (), description="keys shown though off by default (Tune's bookkeeping, RLlib's timers)"
    )
    exclude: KeyPatterns = Field((), description="keys not shown (include wins)")


# A duration in seconds: a finite number above 0 (strict: `true` or "60" is not a duration).
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]


class Settings(_Strict):
    """Settings an app-form file sets for all experiments and each experiment may override."""

    metric: str | Annotated[list[str], Field(min_length=1)] | None = Field(
        None,
        description="the metric to optimise (default: the trainable's), or a list of several "
        "objectives, [a, b], searched for their Pareto front",
    )
    mode: Mode | Annotated[list[Mode], Field(min_length=1)] | None = Field(
        None,
        description="min or max (default: the trainable's); with several objectives a list, "
        "one mode for each: [max, min]",
    )
    constraints: MetricBounds | None = Field(
        None,
        description="bounds a trial's last value of each key must keep to be best or on the "
        "front: {gpu_mem_mb: {max: 2000}}; Optuna's samplers are told them",
    )
    scope: str | None = Field(
        None,
        pattern=SCOPE_PATTERN,
        description="which value ranks a trial: last (default), all (best ever), avg, "
        "last-N-avg (mean of the last N, N up to 999999)",
    )
    search: SearchSpec | None = Field(None, description=" | ".join(SEARCHES) + " (default grid)")
    scheduler: SchedulerSpec | None = Field(
        None, description=" | ".join(SCHEDULER_NAMES) + " (default fifo)"
    )
    max_concurrent_trials: int | None = Field(
        None, ge=1, description="trials running at once per experiment (default: all that fit)"
    )
    seed: int | None = Field(
        None,
        ge=0,
        lt=SEED_LIMIT,
        description="seeds the searcher, so runs draw the same configs (0 to 2**32 - 1)",
    )
    layout: Literal["app", "rllib"] | None = Field(
        None,
        description="RLlib trials' sampling layout for keys the config leaves out "
        "(num_env_runners, num_envs_per_env_runner): app (default) chooses per algorithm for "
        "the trials that run at once, rllib keeps RLlib's own defaults",
    )
    seeds: Annotated[int, Field(ge=1)] | Annotated[list[int], Field(min_length=1)] | None = Field(
        None,
        description="run every configuration once per seed, passed as config.seed: N (seeds "
        "0..N-1) or a list",
    )
    aggregate: Literal["mean", "iqm", "median"] | None = Field(
        None, description="how a configuration's seeds are judged: mean (default), iqm, median"
    )
    select: Literal["aggregate", "lcb"] | None = Field(
        None,
        description="what ranks configurations over seeds: aggregate (default), or lcb, the "
        "one-sided 95% bootstrap bound of the aggregate on the pessimistic side (needs seeds)",
    )
    storage_path: str | None = Field(
        None,
        description="results go to storage_path/<experiment>/ (default ./results, relative to "
        "the working directory); a path or an s3:// URI; --storage-path overrides it",
    )
    expect: ExpectInput | None = Field(
        None, description="checked after the run: metric bounds, max_errored_trials"
    )
    tensorboard: TensorBoardSpec | None = Field(
        None, description="result keys TensorBoard shows: include, exclude (timers are off)"
    )
    time_budget_s: Seconds | None = Field(
        None,
        description="Tune's time_budget_s: after this many seconds the experiment's search ends, "
        "its running trials stopped and no new ones started (none)",
    )
    result_timeout_s: Seconds | None = Field(
        None,
        description="a running trial that reports no result for this many seconds fails ('no "
        "result for N s') and is retried under max_failures (none: a hung trial runs forever)",
    )
    result_buffer: int | None = Field(
        None,
        ge=1,
        description="results a trial hands the driver at a time, gathered until the first "
        f"past {WINDOW_S} s (Tune's result buffering), for trials that report many a second; the "
        f"scheduler's decisions then come up to {WINDOW_S} s late (none or 1: one at a time)",
    )
    trackers: TrackersSpec | None = Field(
        None,
        description="experiment trackers every trial is logged to: mlflow, wandb (an "
        "experiment's entry replaces the file's entry of the same tracker; null turns it off)",
    )

    @field_validator("metric", mode="before")
    @classmethod
    def _metric_as_written(cls, value: Any) -> Any:
        """One message for any wrong `metric` (pydantic would name each arm of the union), an
        empty or blank name too."""
        listed = isinstance(value, list) and value and all(isinstance(v, str) for v in value)
        names = value if listed else [value]
        if value is None or ((isinstance(value, str) or listed) and all(n.strip() for n in names)):
            return value
        raise ValueError(
            f"metric is a result key or a list of them ([a, b]: several objectives), got {value!r}"
        )

    @field_validator("mode", mode="before")
    @classmethod
    def _mode_as_written(cls, value: Any) -> Any:
        """One message for any wrong `mode`: the first value that is neither min nor max."""
        given = value if isinstance(value, list) else [value]
        bad = [v for v in given if v not in ("min", "max")]
        if value is None or (given and not bad):
            return value
        shown = bad[0] if bad else value
        hint = did_you_mean(str(shown), ("min", "max"))
        raise ValueError(
            f"'{shown}' is not allowed; allowed: min, max (or a list of them, one for each "
            f"objective){'; ' + hint if hint else ''}"
        )

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds_as_written(cls, value: Any) -> Any:
        """One message for any wrong `seeds` (pydantic would name each arm of the union)."""
        whole = isinstance(value, int) and not isinstance(value, bool)
        listed = isinstance(value, list) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        )
        if (whole and value > MAX_SEEDS) or (listed and len(value) > MAX_SEEDS):
            count = value if whole else len(value)
            raise ValueError(
                f"at most {MAX_SEEDS:,} seeds (each runs every configuration once more), "
                f"got {count:,}"
            )
        if value is None or (whole and value >= 1):
            return value
        if listed and value and 0 <= min(value) and max(value) < SEED_LIMIT:
            return value
        if listed and value:
            raise ValueError(f"seeds are 0 to 2**32 - 1 (numpy's RandomState), got {value}")
        raise ValueError(
            f"seeds is a count (N: seeds 0 to N-1, at least 1) or a list of whole numbers, "
            f"got {value!r}"
        )

    @field_validator("time_budget_s", "result_timeout_s", mode="before")
    @classmethod
    def _seconds_as_written(cls, value: Any, info: ValidationInfo) -> Any:
        """One message for any wrong duration, saying what one is and how to have no limit."""
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if value is None or (number and math.isfinite(value) and value > 0):
            return value
        raise ValueError(
            f"{info.field_name} is a number of seconds above 0 (3600 for an hour), got "
            f"{value!r}; leave it out for no limit"
        )


class EnvGridSpec(_Strict):
    """`env: {grid_search: [...]}`: one set of trials per env, as RLlib's `config.env` grid."""

    grid_search: list[str] = Field(min_length=1, description="env ids or module:Class names")


class ExperimentSpec(Settings):
    """One experiment as written: what to run, what to search, when to stop."""

    run: str = Field(
        pattern=RUN_PATTERN, description="trainable name, RLlib algorithm or module:function"
    )
    env: str | EnvGridSpec | None = Field(
        None, description="gymnasium env id or module:Class, or a grid_search over them"
    )
    config: dict[str, Any] = Field(default_factory=dict, description="constants and search spaces")

    @field_validator("env", mode="before")
    @classmethod
    def _env_shape(cls, value: Any) -> Any:
        """One message for an env of the wrong shape, not one per shape it might have had."""
        names = value.get("grid_search") if isinstance(value, dict) else None
        grid = isinstance(value, dict) and list(value) == ["grid_search"]
        if grid and isinstance(names, list) and names and all(isinstance(n, str) for n in names):
            return value
        if value is None or isinstance(value, str):
            return value
        raise ValueError("should be an env name or {grid_search: [name, ...]}")

    stop: Annotated[dict[str, float], AfterValidator(_metric_names)] = Field(
        default_factory=dict,
        description="stop a trial when any result key reaches (>=) its value; checked only "
        "when a result arrives, so a hung trial needs result_timeout_s",
    )
    num_samples: int = Field(1, ge=1, description="repeats of the grid, or draws of a sampler")
    resources_per_trial: ResourcesSpec | None = Field(
        None, description="alias: resources (default: the trainable's, or 1 CPU)"
    )
    max_failures: int = Field(0, ge=-1, description="retries of a failed trial (-1: forever)")
    fail_fast: bool = Field(
        False, description="end the whole run at its first failed trial (Tune's fail_fast)"
    )
    log_to_file: Annotated[
        bool | str | tuple[str, str],
        BeforeValidator(_as_tuple, json_schema_input_type=bool | str | tuple[str, str]),
    ] = Field(
        True,
        description="each trial's stdout and stderr to files in its folder (Tune's log_to_file): "
        "true (`stdout`, `stderr`), a file name for both, [stdout file, stderr file], or false",
    )
    simulations: int | None = Field(
        None, ge=0, description="parallel simulations inside each trial (the trainable's)"
    )

    @field_validator("log_to_file", mode="after")
    @classmethod
    def _file_names(cls, value: bool | str | tuple[str, str]) -> bool | str | tuple[str, str]:
        """Names of files in each trial's folder, never paths (`rundir.allowed`)."""
        names = () if isinstance(value, bool) else (value,) if isinstance(value, str) else value
        for name in names:
            problem = file_name_problem(name)
            if problem is not None:
                raise ValueError(problem)
        return value

    cpu_per_simulation: Amount = Field(1, gt=0, description="CPUs of each simulation bundle")
    warm_start: Annotated[
        tuple[Annotated[str, Field(min_length=1)], ...],
        BeforeValidator(_as_tuple, json_schema_input_type=list[str]),
    ] = Field(
        (),
        description="earlier runs (a run folder, its experiment's folder: the newest run that "
        "ran trials, or a URI) whose finished trials the search starts from: optuna and "
        "hyperopt are told them as evaluated, grid skips the points they ran, random and bohb "
        "run them first",
    )
    checkpoint_config: CheckpointSpec = Field(
        default_factory=CheckpointSpec,
        description="Tune's CheckpointConfig; checkpoint_frequency and checkpoint_at_end only for "
        "class trainables (RLlib's, and tune.Trainable classes with save_checkpoint)",
    )


class AppSpec(Settings):
    """The app form: file-level settings and the experiments that inherit them."""

    experiments: dict[str, ExperimentSpec] = Field(
        min_length=1, description="experiment name -> its experiment keys"
    )
