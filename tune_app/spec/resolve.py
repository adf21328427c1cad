"""The entry points `load`, `loads` and `parse`: a spec's YAML data, in either form, to a `Spec`
of fully resolved `Experiment`s (file-level settings applied, legacy keys read, `config` parsed).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from tune_app.errors import Collector, SpecError
from tune_app.methods import SCHEDULERS, SEARCHERS, FifoOptions, GridOptions
from tune_app.objectives import Limit, objectives_of
from tune_app.rundir.noise import DEFAULT_SELECT, MIN_SEEDS
from tune_app.scoring import DEFAULT_SCOPE
from tune_app.seeds import DEFAULT_AGGREGATE, seed_values
from tune_app.space import code_warnings, parse_space
from tune_app.spec.legacy import translate_legacy
from tune_app.spec.loading import read_yaml, read_yaml_text
from tune_app.spec.messages import validate
from tune_app.spec.models import (
    NAME_MAX_BYTES,
    NAME_PATTERN,
    AppSpec,
    EnvGridSpec,
    ExpectSpec,
    ExperimentSpec,
    Settings,
    TensorBoardSpec,
)
from tune_app.spec.resolved import Experiment, Spec
from tune_app.trackers import chosen


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


def _select(
    select: str, seeds: tuple[int, ...], exp: ExperimentSpec, path: str, exp_name: str
) -> str:
    """`select: lcb` ranks a configuration by a bound over its seeds' scores: without seeds
    there is none, and over one seed it is that seed's score (`noise.MIN_SEEDS`)."""
    if select != "lcb" or len(seeds) >= MIN_SEEDS:
        return select
    had = f"one seed ({seeds[0]}), and a bound over one seed is no bound" if seeds else "no seeds"
    raise SpecError(
        f"lcb ranks configurations by a bound over their seeds' scores, but experiment "
        f"'{exp_name}' has {had}",
        path=f"{path}.select" if exp.select is not None else "select",
        allowed=["aggregate", f"lcb (with {MIN_SEEDS} or more seeds)"],
        suggestion="write seeds: 5 (or a list of 2 or more seeds), or select: aggregate, or "
        "leave select out",
    )


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
        fixed = _each(exps, lambda k, v: translate_legacy(v, f"experiments.{k}", warnings))
        top: AppSpec = validate(AppSpec, {**data, "experiments": fixed})
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
        fixed = _each(data, lambda k, v: translate_legacy(v, str(k), warnings))
        written = validate(dict[str, ExperimentSpec], fixed)
        settings = Settings()
        prefix = ""
    resolved = _each(
        written, lambda name, exp: _resolve(str(name), exp, settings, f"{prefix}{name}")
    )
    experiments = tuple(resolved.values())
    for exp in experiments:
        warnings += code_warnings(exp.config, f"{exp.key_path}.config")
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


# The folder --smoke runs go to (rundir.location.SMOKE_FOLDER): no experiment may be named so.
RESERVED_NAME = "smoke"


def _check_name(name: str, path: str) -> None:
    """An experiment's name is its folder's: refused where a filesystem could not hold it."""
    if not re.fullmatch(NAME_PATTERN, name):  # fullmatch: `$` would let a last newline pass
        raise SpecError(
            f"experiment name {name!r} is not a plain folder name",
            path=path,
            allowed="letters and digits of any script and '_', then also '-' and '.' (never first)",
        )
    if name == RESERVED_NAME:
        raise SpecError(
            f"experiment name '{name}' is the folder --smoke runs write to, under the storage "
            "path: a smoke run of any experiment would write inside this one's folder",
            path=path,
            suggestion=f"name it otherwise ({name}_test, say)",
        )
    if len(name.encode()) > NAME_MAX_BYTES:
        raise SpecError(
            f"experiment name is {len(name.encode())} bytes long; its folder and lock file "
            "would not fit a file name",
            path=path,
            allowed=f"at most {NAME_MAX_BYTES} bytes (UTF-8)",
        )


def _resolve(name: str, exp: ExperimentSpec, top: Settings, path: str) -> Experiment:
    _check_name(name, path)

    def pick(key: str, default: Any = None) -> Any:
        own = getattr(exp, key)
        if own is not None:
            return own
        inherited = getattr(top, key)
        return default if inherited is None else inherited

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
    own = exp.metric is not None or exp.mode is not None
    objectives = objectives_of(pick("metric"), pick("mode"), path if own else "")
    seeds = _seeds(pick("seeds"), path)
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
        metric=None if objectives else pick("metric"),
        mode=None if objectives else pick("mode"),
        objectives=objectives,
        constraints=tuple(Limit(k, b.min, b.max) for k, b in (pick("constraints") or {}).items()),
        search=search,
        scheduler=scheduler or FifoOptions(),
        max_concurrent_trials=pick("max_concurrent_trials"),
        seed=pick("seed"),
        seeds=seeds,
        aggregate=pick("aggregate", DEFAULT_AGGREGATE),
        select=_select(pick("select", DEFAULT_SELECT), seeds, exp, path, name),
        storage_path=pick("storage_path", "results"),
        simulations=exp.simulations,
        cpu_per_simulation=exp.cpu_per_simulation,
        checkpoint=exp.checkpoint_config,
        key_path=path,
        expect=pick("expect", ExpectSpec()),
        scope=pick("scope", DEFAULT_SCOPE),
        tensorboard=pick("tensorboard", TensorBoardSpec()),
        time_budget_s=pick("time_budget_s"),
        result_timeout_s=pick("result_timeout_s"),
        result_buffer=pick("result_buffer"),
        layout=pick("layout", "app"),
        trackers=chosen(exp.trackers, top.trackers, path),
        warm_start=exp.warm_start,
    )
