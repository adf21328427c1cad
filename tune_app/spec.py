"""Spec loading and validation: a YAML file, in either form, to typed experiments.

The classic form (every top-level key an experiment, as in Tune's `run_experiments` and RLlib's
tuned examples) and the app form (file-level settings plus `experiments:`) both end as a `Spec`
of fully resolved `Experiment`s. No Ray import here, so `validate` and `--help` stay instant.
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from tune_app.errors import Collector, SpecError, SpecErrors, did_you_mean
from tune_app.methods import SCHEDULERS, SEARCHERS, FifoOptions, GridOptions, Options
from tune_app.scoring import DEFAULT_SCOPE, SCOPE_PATTERN, SCOPES
from tune_app.seeds import DEFAULT_AGGREGATE, seed_values
from tune_app.space import KINDS, LIST_KINDS, RULES, parse_space

Mode = Literal["min", "max"]

# A trainable reference: a registered or RLlib name, or `package.module:function`. Checked by
# pattern before anything is imported, so a spec can never smuggle in code to run.
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
RUN_PATTERN = rf"^([A-Za-z_][A-Za-z0-9_-]*|{_IDENT}(\.{_IDENT})*:{_IDENT})$"
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


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


class ResourcesSpec(_Strict):
    """What one trial reserves (its head bundle when the trial runs simulations)."""

    cpu: float = Field(1, ge=0, description="CPUs per trial (Tune also reads CPU)")
    gpu: float = Field(0, ge=0, description="GPUs per trial (Tune also reads GPU)")
    memory: float = Field(0, ge=0, description="bytes of memory Ray reserves per trial")

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
    checkpoint_score_attribute: str | None = Field(None, description="metric ranking checkpoints")
    checkpoint_score_order: Mode = Field("max", description="keep the highest or lowest")


class Bound(_Strict):
    """An expected range of a metric: `min`, `max` or both, inclusive."""

    min: Annotated[float, Field(strict=False)] | None = Field(None, description="lowest allowed")
    max: Annotated[float, Field(strict=False)] | None = Field(None, description="highest allowed")

    @model_validator(mode="after")
    def _one_bound(self) -> Bound:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min:g} is above max {self.max:g}")
        return self


def _split_expect(value: Any) -> Any:
    """`expect: {max_errored_trials: 0, some_metric: {min: 1}}`: metrics beside the one count."""
    if not isinstance(value, dict):
        return value
    metrics = {k: v for k, v in value.items() if k != "max_errored_trials"}
    out = {"metrics": metrics}
    if "max_errored_trials" in value:
        out["max_errored_trials"] = value["max_errored_trials"]
    return out


class ExpectSpec(_Strict):
    """What a run must reach, checked after it ends (CI smoke searches); unmet exits 1."""

    max_errored_trials: int = Field(0, ge=0, description="errored trials allowed")
    metrics: dict[str, Bound] = Field(
        default_factory=dict, description="the best trial's last value of each metric"
    )


class ExpectAsWritten(BaseModel):
    """`expect:` as a file writes it, for the JSON Schema: the count beside metrics' bounds."""

    model_config = ConfigDict(extra="allow", title="Expect")
    __pydantic_extra__: dict[str, Bound]  # every other key is a metric
    max_errored_trials: int = Field(0, ge=0, description="errored trials allowed")


ExpectInput = Annotated[
    ExpectSpec,
    BeforeValidator(_split_expect, json_schema_input_type=ExpectAsWritten),
]


def _one_pattern(value: Any) -> Any:
    """`include: timers` is short for `include: [timers]`."""
    return (value,) if isinstance(value, str) else value


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


class Settings(_Strict):
    """Settings an app-form file sets for all experiments and each experiment may override."""

    metric: str | None = Field(
        None, description="the metric to optimise (default: the trainable's)"
    )
    mode: Mode | None = Field(None, description="min or max (default: the trainable's)")
    scope: str | None = Field(
        None,
        pattern=SCOPE_PATTERN,
        description="which value ranks a trial: last (default), all (best ever), avg, last-N-avg",
    )
    search: SearchSpec | None = Field(None, description=" | ".join(SEARCHES) + " (default grid)")
    scheduler: SchedulerSpec | None = Field(
        None, description=" | ".join(SCHEDULER_NAMES) + " (default fifo)"
    )
    max_concurrent_trials: int | None = Field(
        None, ge=1, description="trials at once (all that fit)"
    )
    seed: int | None = Field(None, description="seeds the searcher, so runs draw the same configs")
    seeds: Annotated[int, Field(ge=1)] | Annotated[list[int], Field(min_length=1)] | None = Field(
        None,
        description="run every configuration once per seed, passed as config.seed: N (seeds "
        "0..N-1) or a list",
    )
    aggregate: Literal["mean", "iqm", "median"] | None = Field(
        None, description="how a configuration's seeds are judged: mean (default), iqm, median"
    )
    storage_path: str | None = Field(None, description="results folder (default ./results)")
    expect: ExpectInput | None = Field(
        None, description="checked after the run: metric bounds, max_errored_trials"
    )
    tensorboard: TensorBoardSpec | None = Field(
        None, description="result keys TensorBoard shows: include, exclude (timers are off)"
    )

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds_as_written(cls, value: Any) -> Any:
        """One message for any wrong `seeds` (pydantic would name each arm of the union)."""
        whole = isinstance(value, int) and not isinstance(value, bool)
        listed = isinstance(value, list) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        )
        if value is None or (whole and value >= 1) or (listed and value and min(value) >= 0):
            return value
        if listed and value:
            raise ValueError(f"seeds are 0 or more (numpy takes no negative seed), got {value}")
        raise ValueError(
            f"seeds is a count (N: seeds 0 to N-1, at least 1) or a list of whole numbers, "
            f"got {value!r}"
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

    stop: dict[str, Annotated[float, Field(strict=False)]] = Field(
        default_factory=dict, description="stop a trial when any result key reaches its value"
    )
    num_samples: int = Field(1, ge=1, description="repeats of the grid, or draws of a sampler")
    resources_per_trial: ResourcesSpec | None = Field(
        None, description="alias: resources (default: the trainable's, or 1 CPU)"
    )
    max_failures: int = Field(0, ge=-1, description="retries of a failed trial (-1: forever)")
    fail_fast: bool = Field(
        False, description="end the whole run at its first failed trial (Tune's fail_fast)"
    )
    log_to_file: bool | str | tuple[str, str] = Field(
        False,
        description="each trial's stdout and stderr to files in its folder (Tune's log_to_file): "
        "true, a file name for both, or [stdout file, stderr file]",
    )
    simulations: int | None = Field(
        None, ge=0, description="parallel simulations inside each trial (the trainable's)"
    )
    cpu_per_simulation: float = Field(1, gt=0, description="CPUs of each simulation bundle")
    checkpoint_config: CheckpointSpec = Field(default_factory=CheckpointSpec)


class AppSpec(Settings):
    """The app form: file-level settings and the experiments that inherit them."""

    experiments: dict[str, ExperimentSpec] = Field(min_length=1)


# Tune's old experiment keys, translated with a warning: key -> (new key path, value mapper).
LEGACY_KEYS: dict[str, tuple[tuple[str, ...], str]] = {
    "local_dir": (("storage_path",), "storage_path"),
    "checkpoint_freq": (
        ("checkpoint_config", "checkpoint_frequency"),
        "checkpoint_config.checkpoint_frequency",
    ),
    "checkpoint_at_end": (
        ("checkpoint_config", "checkpoint_at_end"),
        "checkpoint_config.checkpoint_at_end",
    ),
    "keep_checkpoints_num": (("checkpoint_config", "num_to_keep"), "checkpoint_config.num_to_keep"),
    "upload_dir": (("storage_path",), "storage_path"),  # Ray 1.x: where results were synced to
    "repeat": (("num_samples",), "num_samples"),  # Ray 0.x
    "trial_resources": (("resources_per_trial",), "resources_per_trial"),  # Ray 0.x
    "checkpoint_score_attr": (
        ("checkpoint_config", "checkpoint_score_attribute"),
        "checkpoint_config.checkpoint_score_attribute",
    ),
}
ALIASES = {"resources": "resources_per_trial"}
# Tune's old experiment keys that Ray 2 has nothing for: dropped with a warning saying why.
NO_EFFECT_KEYS = {
    "sync_to_driver": "Ray 2 keeps every trial's results in storage_path; nothing is synced",
    "sync_on_checkpoint": "Ray 2 keeps every trial's results in storage_path; nothing is synced",
    "export_formats": "Ray 2's Tune exports no models; a trial's checkpoints hold what it saves",
}


# ---- the resolved spec -----------------------------------------------------------------------


@dataclass(frozen=True)
class Experiment:
    """One experiment with the file-level settings applied and its config parsed."""

    name: str
    run: str
    env: str | None
    config: Any  # the parsed space: constants and `space.Domain`s
    stop: dict[str, float]
    num_samples: int
    resources: ResourcesSpec | None  # None: the trainable's default
    max_failures: int
    metric: str | None
    mode: Mode | None
    search: Options  # one of methods.SEARCHERS' options models
    scheduler: Options  # one of methods.SCHEDULERS' options models
    max_concurrent_trials: int | None
    seed: int | None
    seeds: tuple[int, ...]  # the seeds axis: each configuration runs once per seed; () none
    aggregate: str  # how a configuration's seeds are judged (tune_app.seeds)
    storage_path: str
    simulations: int | None  # None: the trainable's default
    cpu_per_simulation: float
    checkpoint: CheckpointSpec
    key_path: str  # where the experiment sits in its file, for messages
    expect: ExpectSpec = ExpectSpec()
    fail_fast: bool = False  # Tune's: the run ends at its first failed trial
    log_to_file: bool | str | tuple[str, str] = False  # Tune's: trial output to files
    scope: str = DEFAULT_SCOPE  # which value of its metric ranks a trial (see tune_app.scoring)
    tensorboard: TensorBoardSpec = TensorBoardSpec()  # result keys shown beyond the spec's


@dataclass(frozen=True)
class Spec:
    """A loaded spec file: its experiments, the form it was written in, and legacy warnings."""

    file: Path
    text: str
    form: Literal["classic", "app"]
    experiments: tuple[Experiment, ...]
    warnings: tuple[str, ...] = ()


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a spec file, either form, for editors: it accepts what `load` does.

    Pydantic's schema of the models, plus what the loader reads before the models see a file:
    the form chosen by an `experiments` key, experiment names, the `resources` alias and Tune's
    legacy keys, `type` naming a search or scheduler, and the search spaces in `config`.
    """
    defs = TypeAdapter(AppSpec | dict[str, ExperimentSpec]).json_schema()["$defs"]
    names = {"pattern": NAME_PATTERN, "description": "a plain folder name"}
    defs["AppSpec"]["properties"]["experiments"]["propertyNames"] = names
    options = [s.options for s in SEARCHERS.values()] + [s.options for s in SCHEDULERS.values()]
    for model in options:
        # The model's default `type` does not make it optional: the union is chosen by it.
        defs[model.__name__]["required"] = ["type"]
    _schema_renamed_keys(defs)
    resources = defs["ResourcesSpec"]
    for lower in ("cpu", "gpu"):  # Tune's spellings, read by ResourcesSpec._tune_spellings
        upper = lower.upper()
        resources["properties"][upper] = {**resources["properties"][lower], "title": upper}
        resources.setdefault("allOf", []).append({"not": {"required": [lower, upper]}})
    defs["ConfigValue"] = _schema_config_value()
    config = defs["ExperimentSpec"]["properties"]["config"]
    config["additionalProperties"] = {"$ref": "#/$defs/ConfigValue"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "tune_app spec",
        "anyOf": [
            {"$ref": "#/$defs/AppSpec"},
            {
                "title": "classic form: every top-level key names an experiment",
                "type": "object",
                "not": {"required": ["experiments"]},  # that key makes a file the app form
                "propertyNames": names,
                "additionalProperties": {"$ref": "#/$defs/ExperimentSpec"},
            },
        ],
        "$defs": defs,
    }


def _schema_renamed_keys(defs: dict[str, Any]) -> None:
    """Add ALIASES and LEGACY_KEYS to the experiment with their targets' schemas, each one
    excluding its target, as `_translate_legacy` reads them."""
    experiment = defs["ExperimentSpec"]
    keys = experiment["properties"]
    exclusive = []
    for alias, key in ALIASES.items():
        keys[alias] = {**keys[key], "title": alias, "description": f"alias of {key}"}
        exclusive.append({"not": {"required": [alias, key]}})
    for old, (new, shown) in LEGACY_KEYS.items():
        target: dict[str, Any] = experiment
        for part in new:
            if "$ref" in target:
                target = defs[target["$ref"].rsplit("/", 1)[-1]]
            target = target["properties"][part]
        keys[old] = {
            **target,
            "title": old,
            "description": f"legacy Tune key, read as {shown}",
            "deprecated": True,
        }
        clash: dict[str, Any] = {"required": [old, new[0]]}
        if len(new) > 1:
            clash["properties"] = {new[0]: {"required": [new[-1]]}}
        exclusive.append({"not": clash})
    for old, why in NO_EFFECT_KEYS.items():
        keys[old] = {"title": old, "description": f"legacy Tune key with no effect: {why}"}
        keys[old]["deprecated"] = True
    experiment["allOf"] = exclusive


def _schema_config_value() -> dict[str, Any]:
    """A `config` value: a constant, or a one-key search-space mapping `space.parse_space`
    reads (its arguments checked), with mappings and lists walked as it walks them."""
    kinds: dict[str, dict[str, Any]] = {
        kind: {"type": "array", "minItems": 1, "description": f"{kind}: [a, b, ...]: {doc}"}
        for kind, doc in LIST_KINDS.items()
    }
    for kind, rule in RULES.items():
        number = "integer" if rule.integer else "number"
        kinds[kind] = {
            "type": "array",
            "prefixItems": [{"type": number, "title": param} for param in rule.params],
            "minItems": len(rule.params),
            "maxItems": len(rule.params),
            "description": f"{kind}: [{', '.join(rule.params)}]: {rule.doc}",
        }
    return {
        "description": "a constant, or a search space: a mapping of one key, one of "
        + ", ".join(KINDS),
        "allOf": [
            {
                "if": {"type": "object", "required": [kind], "maxProperties": 1},
                "then": {"properties": {kind: args}},
            }
            for kind, args in kinds.items()
        ],
        "additionalProperties": {"$ref": "#/$defs/ConfigValue"},
        "items": {"$ref": "#/$defs/ConfigValue"},
    }


# ---- loading ---------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader that also refuses duplicate keys (PyYAML keeps the last silently).
    Merge keys (`<<: *defaults`) work as in YAML 1.1: a mapping's own keys override merged ones,
    so only its own keys are checked for duplicates."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # SafeLoader's construct_mapping merges these
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, typing.Hashable):
                continue  # PyYAML's own "unhashable key" error follows, naming the line
            if key in seen:
                mark = key_node.start_mark
                raise SpecError(
                    f"duplicate key '{key}' at line {mark.line + 1}",
                    suggestion="each key may appear once in a mapping",
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


# YAML 1.2 floats that PyYAML (YAML 1.1) reads as strings: an exponent without a dot or without
# a sign (`1e-4`, `1E5`, `2.5e3`), as people write learning rates.
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


# Bounds on what a spec file may make the loader build, so a hostile or broken file is refused
# in milliseconds instead of exhausting memory or the stack. A spec is a few KB (Ray's largest
# published RLlib YAML is under 10 KB), so each bound is far above any real spec:
# - MAX_SPEC_BYTES: the file's size, checked before it is read;
# - MAX_NODES: scalars and collections after aliases are expanded. PyYAML shares an anchored
#   value between its aliases, but everything after loading (validation, copies, Tune's
#   variant generator) walks it expanded: nine nested aliases of ten make 10**9 nodes (the
#   "billion laughs" file, which reached 11.8 GB before this bound);
# - MAX_DEPTH: nested collections; the loader and every walker of the spec recurse, and
#   Python's stack ends near 1,000 frames.
MAX_SPEC_BYTES = 1_000_000
MAX_NODES = 100_000
MAX_DEPTH = 64


def read_yaml(path: Path) -> tuple[str, Any]:
    """Read and safely parse a YAML file, with every failure as a SpecError naming the file."""
    file = str(path)
    if not path.exists():
        raise SpecError(
            "no such file",
            file=file,
            suggestion=f"looked for {path.absolute()} (relative to {Path.cwd()})",
        )
    if path.is_dir():
        raise SpecError(
            "is a directory, not a spec file",
            file=file,
            suggestion="pass a .yaml file, such as search_spaces/grid.yaml",
        )
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_SPEC_BYTES + 1)
    except PermissionError:
        raise SpecError("cannot be read (permission denied)", file=file) from None
    except OSError as err:
        raise SpecError(f"cannot be read ({err.strerror})", file=file) from None
    _check_size(len(raw), file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(
            "is not a text file (not UTF-8)", file=file, suggestion="a spec is a YAML text file"
        ) from None
    return text, read_yaml_text(text, path)


def _check_size(size: int, file: str) -> None:
    if size > MAX_SPEC_BYTES:
        raise SpecError(
            f"is larger than {MAX_SPEC_BYTES:,} bytes, the most a spec file may hold",
            file=file,
            suggestion="a spec names a trainable and its search space; data belongs in files "
            "the trainable reads",
        )


def check_bounds(text: str, file: str) -> None:
    """SpecError if the YAML `text` nests deeper than MAX_DEPTH or expands to more than
    MAX_NODES values; read from PyYAML's event stream, which neither recurses nor expands."""
    sizes: dict[str, int] = {}  # anchor -> expanded size of the value it marks
    open_: list[tuple[str | None, int]] = []  # collections being read: anchor, nodes so far
    total = 0

    def add(n: int, mark: Any) -> None:
        nonlocal total
        total += n
        if open_:
            anchor, count = open_[-1]
            open_[-1] = (anchor, count + n)
        if total > MAX_NODES:
            raise SpecError(
                f"expands to more than {MAX_NODES:,} values{_at(mark)} (YAML aliases "
                "repeat what their anchor holds)",
                file=file,
                suggestion="a spec this large is a mistake or an attack; write the values out",
            )

    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_) >= MAX_DEPTH:
                raise SpecError(
                    f"nests deeper than {MAX_DEPTH} levels{_at(event.start_mark)}",
                    file=file,
                    suggestion="a spec's values nest a few levels deep",
                )
            add(1, event.start_mark)
            open_.append((event.anchor, 1))
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, count = open_.pop()
            if anchor is not None:
                sizes[anchor] = count
            if open_:
                open_[-1] = (open_[-1][0], open_[-1][1] + count - 1)  # add() counted its start
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                sizes[event.anchor] = 1
            add(1, event.start_mark)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in {anchor for anchor, _ in open_}:
                raise SpecError(
                    f"alias *{event.anchor} refers to a value that holds it{_at(event.start_mark)}",
                    file=file,
                    suggestion="a spec's values cannot contain themselves",
                )
            add(sizes.get(event.anchor, 1), event.start_mark)


def read_yaml_text(text: str, path: Path) -> Any:
    """Safely parse YAML text read from `path`; every failure is a SpecError naming the file."""
    file = str(path)
    try:
        _check_size(len(text.encode("utf-8", "surrogatepass")), file)
        check_bounds(text, file)
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except SpecError as err:
        raise err.with_file(file) from None
    except yaml.constructor.ConstructorError as err:
        if "unhashable key" in str(err.problem):
            raise SpecError(
                f"a mapping or a list is used as a key{_at(err.problem_mark)}",
                file=file,
                suggestion="keys are names; `x: {{grid_search: [1]}}` has one pair of braces "
                "too many: `x: {grid_search: [1]}`",
            ) from None
        raise SpecError(
            f"unsupported YAML tag ({_first_line(err.problem)}){_at(err.problem_mark)}",
            file=file,
            suggestion="specs are plain YAML; python tags are never evaluated",
        ) from None
    except yaml.YAMLError as err:
        problem = getattr(err, "problem", None) or str(err)
        raise SpecError(
            f"is not valid YAML: {_first_line(problem)}{_at(getattr(err, 'problem_mark', None))}",
            file=file,
        ) from None
    except ValueError as err:  # a constructor's own: an integer of more than 4,300 digits
        raise SpecError(
            f"holds a value Python cannot read: {_first_line(err)}", file=file
        ) from None
    return data


def load(path: str | Path) -> Spec:
    """Load, validate and resolve a spec file; raises SpecError with file and key path."""
    path = Path(path)
    text, data = read_yaml(path)
    return _parse_in(path, data, text)


def loads(text: str, path: str | Path) -> Spec:
    """Load a spec from YAML text that was read from `path` (which errors name)."""
    path = Path(path)
    return _parse_in(path, read_yaml_text(text, path), text)


def _parse_in(path: Path, data: Any, text: str) -> Spec:
    try:
        return parse(data, path, text)
    except SpecError as err:
        raise err.with_file(str(path)) from None


def _seeds(seeds: int | list[int] | None, path: str) -> tuple[int, ...]:
    if seeds is None:
        return ()
    values = seed_values(seeds)
    if len(set(values)) != len(values):
        raise SpecError(f"seeds must differ, but got {values}", path=f"{path}.seeds")
    return tuple(values)


def parse(data: Any, file: Path, text: str = "") -> Spec:
    """Validate already-parsed YAML `data` as a spec of either form."""
    if data is None:
        raise SpecError(
            "the file is empty", suggestion="see search_spaces/grid.yaml for an example"
        )
    if not isinstance(data, dict):
        raise SpecError(
            f"the top level must be a mapping of experiments, but got {type(data).__name__}",
            suggestion="see search_spaces/grid.yaml for an example",
        )
    warnings: list[str] = []
    if "experiments" in data:
        form: Literal["classic", "app"] = "app"
        exps = data.get("experiments")
        if not isinstance(exps, dict) or not exps:
            raise SpecError(
                "must be a non-empty mapping of experiment names to experiments", path="experiments"
            )
        fixed = _each(exps, lambda k, v: _translate_legacy(v, f"experiments.{k}", warnings))
        top = _validate(AppSpec, {**data, "experiments": fixed})
        assert isinstance(top, AppSpec)
        settings: Settings = top
        written = top.experiments
        prefix = "experiments."
    else:
        form = "classic"
        errors = Collector()
        for key, value in data.items():
            with errors.check():
                _check_classic_entry(key, value)
        errors.raise_any()
        fixed = _each(data, lambda k, v: _translate_legacy(v, str(k), warnings))
        written = _validate(dict[str, ExperimentSpec], fixed)
        settings = Settings()
        prefix = ""
    resolved = _each(
        written, lambda name, exp: _resolve(str(name), exp, settings, f"{prefix}{name}")
    )
    experiments = tuple(resolved.values())
    return Spec(file=file, text=text, form=form, experiments=experiments, warnings=tuple(warnings))


def _each(items: dict[Any, Any], fn: Any) -> dict[Any, Any]:
    """`fn(key, value)` for every item, every item's SpecError reported together."""
    errors = Collector()
    out = {}
    for key, value in items.items():
        with errors.check():
            out[key] = fn(key, value)
    errors.raise_any()
    return out


def _check_classic_entry(key: Any, value: Any) -> None:
    if isinstance(value, dict):
        return
    hint = None
    if key in Settings.model_fields:
        hint = (
            f"'{key}' is a file-level setting of the app form: put experiments under `experiments:`"
        )
    raise SpecError(
        f"an experiment must be a mapping with a `run` key, but got {value!r}",
        path=str(key),
        suggestion=hint or "each top-level key of a classic spec names an experiment",
    )


def _translate_legacy(raw: Any, path: str, warnings: list[str]) -> Any:
    """Rename aliases and Tune's old experiment keys, warning once for each legacy key."""
    if not isinstance(raw, dict):
        return raw
    out = dict(raw)
    for alias, key in ALIASES.items():
        if alias in out:
            if key in out:
                raise SpecError(
                    f"both '{alias}' and '{key}' are given",
                    path=f"{path}.{alias}",
                    suggestion=f"'{alias}' is an alias of '{key}': keep one",
                )
            out[key] = out.pop(alias)
    for old, why in NO_EFFECT_KEYS.items():
        if old in out:
            out.pop(old)
            warnings.append(f"{path}.{old}: legacy Tune key with no effect: {why}")
    if "upload_dir" in out and "local_dir" in out:  # Ray 1.x: a local copy, synced to upload_dir
        out.pop("local_dir")
        warnings.append(
            f"{path}.local_dir: legacy Tune key with no effect beside upload_dir: Ray 2 keeps "
            "results in one place, storage_path (read from upload_dir)"
        )
    for old, (new, shown) in LEGACY_KEYS.items():
        if old not in out:
            continue
        value = out.pop(old)
        target = out
        for part in new[:-1]:
            inner = target.get(part, {})
            if not isinstance(inner, dict):
                raise SpecError("must be a mapping", path=f"{path}.{part}")
            target[part] = inner = dict(inner)
            target = inner
        if new[-1] in target:
            raise SpecError(
                f"both the legacy '{old}' and '{shown}' are given",
                path=f"{path}.{old}",
                suggestion=f"keep only '{shown}'",
            )
        if old == "checkpoint_score_attr" and isinstance(value, str) and value.startswith("min-"):
            value = value[len("min-") :]
            target["checkpoint_score_order"] = "min"
        target[new[-1]] = value
        warnings.append(f"{path}.{old}: legacy Tune key, read as {shown}")
    return out


def _resolve(name: str, exp: ExperimentSpec, top: Settings, path: str) -> Experiment:
    if not re.match(NAME_PATTERN, name):
        raise SpecError(
            f"experiment name '{name}' is not a plain folder name",
            path=path,
            allowed="letters, digits, '_', '-', '.' (not first)",
        )

    def pick(key: str, default: Any = None) -> Any:
        own = getattr(exp, key)
        if own is not None:
            return own
        inherited = getattr(top, key)
        return default if inherited is None else inherited

    if not isinstance(exp.config, dict):
        raise SpecError("must be a mapping", path=f"{path}.config")
    search = pick("search", GridOptions())
    scheduler = pick("scheduler")
    pairs_with = SEARCHERS[search.type].pairs_with
    if pairs_with is not None and scheduler is None:
        scheduler = SCHEDULERS[pairs_with].options.model_validate({"type": pairs_with})
    elif pairs_with is not None and scheduler.type != pairs_with:
        raise SpecError(
            f"search {search.type} works only with scheduler {pairs_with}, not {scheduler.type}",
            path=f"{path}.scheduler" if exp.scheduler is not None else "scheduler",
            allowed=[pairs_with],
            suggestion=f"write scheduler: {{type: {pairs_with}}} or leave scheduler out",
        )
    if exp.fail_fast and exp.max_failures != 0:
        raise SpecError(
            "fail_fast ends the run at its first failed trial, so no trial is retried",
            path=f"{path}.fail_fast",
            suggestion="set max_failures: 0, or leave fail_fast out",
        )
    config = dict(exp.config)
    if isinstance(exp.env, EnvGridSpec):  # a grid is a config axis, where RLlib's examples put it
        if "env" in config:
            raise SpecError(
                "env is given twice, here and as config.env",
                path=f"{path}.env",
                suggestion="keep one",
            )
        config["env"] = {"grid_search": exp.env.grid_search}
    return Experiment(
        name=name,
        run=exp.run,
        env=exp.env if isinstance(exp.env, str) else None,
        config=parse_space(config, f"{path}.config"),
        stop=dict(exp.stop),
        num_samples=exp.num_samples,
        resources=exp.resources_per_trial,
        max_failures=exp.max_failures,
        fail_fast=exp.fail_fast,
        log_to_file=exp.log_to_file,
        metric=pick("metric"),
        mode=pick("mode"),
        search=search,
        scheduler=scheduler or FifoOptions(),
        max_concurrent_trials=pick("max_concurrent_trials"),
        seed=pick("seed"),
        seeds=_seeds(pick("seeds"), path),
        aggregate=pick("aggregate", DEFAULT_AGGREGATE),
        storage_path=pick("storage_path", "results"),
        simulations=exp.simulations,
        cpu_per_simulation=exp.cpu_per_simulation,
        checkpoint=exp.checkpoint_config,
        key_path=path,
        expect=pick("expect", ExpectSpec()),
        scope=pick("scope", DEFAULT_SCOPE),
        tensorboard=pick("tensorboard", TensorBoardSpec()),
    )


# ---- pydantic errors to SpecError ------------------------------------------------------------


def _validate(target: Any, data: Any) -> Any:
    try:
        return TypeAdapter(target).validate_python(data)
    except ValidationError as exc:
        found: dict[str, SpecError] = {}
        for err in exc.errors():
            one = _to_spec_error(target, err)
            found.setdefault(one.message(), one)  # a union reports a key once per member
        errors = list(found.values())
        raise (errors[0] if len(errors) == 1 else SpecErrors(errors)) from None


def _to_spec_error(target: Any, err: Any) -> SpecError:
    """One pydantic error as a SpecError: dotted path without union tags, allowed keys, hints."""
    loc = tuple(str(p) for p in err["loc"])
    kind = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        shown, parent = _walk(target, loc[:-1])
        keys = _keys_of(parent)
        known = keys + (list(ALIASES) + list(LEGACY_KEYS) if parent is ExperimentSpec else [])
        return SpecError(
            f"unknown key '{loc[-1]}'",
            path=_join(shown + [loc[-1]]),
            allowed=keys,
            suggestion=did_you_mean(loc[-1], known),
        )
    shown, _ = _walk(target, loc)
    path = _join(shown)
    if kind == "missing":
        return SpecError(
            f"the required key '{loc[-1]}' is missing",
            path=_join(shown[:-1]) or None,
            suggestion=f"add '{loc[-1]}:'",
        )
    if kind in ("union_tag_invalid", "literal_error"):
        allowed = _expected(ctx)
        bad = ctx.get("tag", value)
        return SpecError(
            f"'{bad}' is not allowed",
            path=path,
            allowed=allowed,
            suggestion=did_you_mean(str(bad), allowed),
        )
    if kind == "union_tag_not_found":
        return SpecError("needs a 'type' key", path=path, suggestion="write type: <name>")
    if shown and shown[-1] in ("search", "scheduler") and kind.endswith("_type"):
        choices = SEARCHES if shown[-1] == "search" else SCHEDULER_NAMES
        return SpecError(
            f"must be a name or a mapping with a 'type' key, but got {value!r}",
            path=path,
            allowed=choices,
        )
    if kind == "string_pattern_mismatch" and loc[-1] == "scope":
        return SpecError(
            f"'{value}' is not a scope",
            path=path,
            allowed=SCOPES,
            suggestion="last ranks trials by where their curves ended, all by their best value",
        )
    if _walk(target, loc)[1] is TensorBoardSpec and kind.endswith("_type"):
        return SpecError(
            f"must be a mapping, but got {value!r}",
            path=path,
            allowed=list(TensorBoardSpec.model_fields),
            suggestion="write tensorboard: {include: [timers]}",
        )
    # An `include` or `exclude` list, or one of its patterns.
    if any(_walk(target, loc[:-i])[1] is TensorBoardSpec for i in (1, 2) if len(loc) > i):
        what = "a result key, a group prefix or a glob"
        what += "" if loc[-1].isdigit() else ", or a list of them"
        return SpecError(
            f"must be {what}, but got {value!r}",
            path=path,
            allowed="keys as Tune names them (env_runners/episode_return_mean), group prefixes "
            "(timers), globs (*_timer); no spaces",
        )
    if kind == "string_pattern_mismatch" and loc[-1] == "run":
        return SpecError(
            f"'{value}' is not a trainable name or a module:function reference",
            path=path,
            suggestion="write a registered name (tune_app list), an RLlib "
            "algorithm such as PPO, or package.module:function",
        )
    msg = err["msg"][0].lower() + err["msg"][1:]
    if kind == "value_error":  # the app's own validators: their message says it all
        return SpecError(msg.removeprefix("value error, "), path=path)
    return SpecError(f"{msg}, but got {value!r}", path=path)


def _expected(ctx: dict[str, Any]) -> list[str]:
    raw = ctx.get("expected_tags") or ctx.get("expected") or ""
    return [t.strip().strip("'\"") for t in re.split(r",| or ", raw) if t.strip()]


def _join(parts: list[str]) -> str:
    # `expect`'s metrics sit beside max_errored_trials in the file, one level up from the model.
    parts = [
        p for i, p in enumerate(parts) if not (p == "metrics" and i and parts[i - 1] == "expect")
    ]
    return ".".join(parts)


def _walk(target: Any, loc: tuple[str, ...]) -> tuple[list[str], Any]:
    """Follow a pydantic `loc` through the model types; return the path to show and the type."""
    shown: list[str] = []
    t = target
    for part in loc:
        t = _unwrap(t)
        options = _union_members(t)
        if options is not None:
            tagged = [m for m in options if _tag_of(m) == part]
            if tagged:  # a discriminated union's tag: part of pydantic's loc, not of the YAML
                t = tagged[0]
                continue
            t = next((m for m in options if isinstance(m, type) and issubclass(m, BaseModel)), t)
            t = _unwrap(t)
        if isinstance(t, type) and issubclass(t, BaseModel):
            f = t.model_fields.get(part)
            t = f.annotation if f is not None else None
        elif typing.get_origin(t) is dict:
            t = typing.get_args(t)[1]
        else:
            t = None
        shown.append(part)
    t = _unwrap(t)
    return shown, t


def _unwrap(t: Any) -> Any:
    while typing.get_origin(t) is Annotated:
        t = typing.get_args(t)[0]
    members = _union_members(t)
    if members is not None:
        real = [m for m in members if m is not type(None)]
        if len(real) == 1:
            return _unwrap(real[0])
    return t


def _union_members(t: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(t) in (Union, types.UnionType):
        return tuple(_unwrap(m) for m in typing.get_args(t))
    return None


def _tag_of(t: Any) -> str | None:
    if isinstance(t, type) and issubclass(t, BaseModel) and "type" in t.model_fields:
        default = t.model_fields["type"].default
        return default if isinstance(default, str) else None
    return None


def _keys_of(t: Any) -> list[str]:
    t = _unwrap(t)
    return list(t.model_fields) if isinstance(t, type) and issubclass(t, BaseModel) else []


def _at(mark: Any) -> str:
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def _first_line(text: Any) -> str:
    return str(text).strip().splitlines()[0] if str(text).strip() else ""
