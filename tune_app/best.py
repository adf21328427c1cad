"""`tune_app best`: a finished run's best configuration as a ready spec, constants only.

The spec as run (the run folder's copy) is taken as written, every searched parameter replaced by
the best trial's value, the searcher and scheduler dropped (one configuration: FIFO), and the
experiment renamed `<name>-best` so its results do not land in the tuning run's folder. With
`seeds`, each experiment becomes a grid over evaluation seeds, apart from the seeds of tuning.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from tune_app import scoring, spec
from tune_app.errors import SpecError
from tune_app.rundir.layout import SPEC_FILE
from tune_app.rundir.read import ExperimentResults, read_experiment
from tune_app.rundir.records import TrialOutcome
from tune_app.rundir.storage import open_runs

Format = Literal["yaml", "json", "overrides"]
FORMATS = ("yaml", "json", "overrides")
EVAL_SEED_BASE = 10_000  # evaluation seeds start here, away from the seeds a search tried
SUFFIX = "-best"
# Keys that only matter when several configurations are tried.
SEARCH_KEYS = ("search", "scheduler", "num_samples", "seed", "max_concurrent_trials")


@dataclass(frozen=True)
class Best:
    """One experiment's best trial and where it came from."""

    experiment: str
    trial: TrialOutcome
    params: dict[str, Any]  # searched dotted config path -> the best trial's value
    metric: str
    scope: str


def best_spec(folder: str | Path, seeds: int | None = None) -> tuple[dict[str, Any], list[Best]]:
    """The spec (as plain data) running the best configuration of every experiment in `folder`,
    and the best trials it came from. Raises SpecError when a run has no best trial."""
    runs = open_runs(folder)
    texts = {(r.local / SPEC_FILE).read_text(encoding="utf-8") for r in runs}
    if len(texts) != 1:
        raise SpecError(
            f"{folder} holds runs of {len(texts)} different spec files",
            suggestion="pass one experiment folder at a time",
        )
    spec_path = runs[0].local / SPEC_FILE
    raw = spec.read_yaml_text(texts.pop(), spec_path)
    parsed = spec.parse(copy.deepcopy(raw), spec_path)
    found = [_best(read_experiment(r.local, r.location)) for r in runs]
    wanted = {b.experiment: b for b in found}
    if parsed.form == "app":
        out = {k: v for k, v in raw.items() if k not in (*SEARCH_KEYS, "experiments")}
        out["experiments"] = _experiments(raw["experiments"], wanted, seeds)
    else:
        out = _experiments(raw, wanted, seeds)
    spec.parse(copy.deepcopy(out), Path("<best>"))  # a bug here must not reach the user's run
    return out, found


def render(data: dict[str, Any], found: list[Best], fmt: Format, source: str) -> str:
    """The spec as YAML or JSON, or the best values as `experiment.config.path=value` lines."""
    if fmt == "overrides":
        return "\n".join(
            f"{b.experiment}.config.{path}={json.dumps(value)}"
            for b in found
            for path, value in b.params.items()
        )
    if fmt == "json":
        return json.dumps(data, indent=2)
    head = [f"# The best configuration of {source}, as found by `tune_app best`:"]
    head += [
        f"#   {b.experiment}: trial {b.trial.trial_id}, {b.metric} = {b.trial.score:.6g} "
        f"({scoring.describe(b.scope)})"
        for b in found
    ]
    return "\n".join(head) + "\n" + yaml.safe_dump(data, sort_keys=False).rstrip("\n")


def _best(exp: ExperimentResults) -> Best:
    trial = exp.best_trial
    if trial is None or exp.metric is None:
        raise SpecError(
            f"{exp.where}: no trial of experiment '{exp.name}' has a score"
            + ("" if exp.metric else " (the run has no metric)"),
            suggestion="see `tune_app analyze` for what each trial reported",
        )
    missing = [k for k in exp.searched if k not in trial.params]
    if missing:
        raise SpecError(
            f"{exp.where}: the best trial's values of {', '.join(missing)} were not recorded"
        )
    return Best(exp.name, trial, {k: trial.params[k] for k in exp.searched}, exp.metric, exp.scope)


def _experiments(
    written: dict[str, Any], wanted: dict[str, Best], seeds: int | None
) -> dict[str, Any]:
    """The experiments of `wanted`, as written, with their best values and no searcher."""
    out: dict[str, Any] = {}
    for name, exp in written.items():
        if name not in wanted:
            continue
        exp = {k: copy.deepcopy(v) for k, v in exp.items() if k not in SEARCH_KEYS}
        config = exp.setdefault("config", {})
        for path, value in wanted[name].params.items():
            _set(config, path.split("."), value, f"{name}.config.{path}")
        if seeds:
            _check_takes_seed(name, exp.get("run"))
            config["seed"] = {"grid_search": [EVAL_SEED_BASE + i for i in range(seeds)]}
        out[name + SUFFIX] = exp
    return out


def _check_takes_seed(name: str, run: Any) -> None:
    """A registered trainable without a `seed` knob would refuse the seeds' config key."""
    from tune_app.registry import registered

    info = registered().get(str(run))
    if info is not None and "seed" not in {k.name for k in info.knobs}:
        raise SpecError(
            f"--seeds: trainable '{run}' of experiment '{name}' takes no 'seed' config key, so "
            "it cannot be run on evaluation seeds",
            allowed=[k.name for k in info.knobs],
            suggestion="use a trainable that reads config['seed'] (RLlib's algorithms do)",
        )


def _set(tree: dict[str, Any], keys: list[str], value: Any, where: str) -> None:
    """Replace the search space at `keys` with `value`."""
    for key in keys[:-1]:
        tree = tree.get(key) if isinstance(tree, dict) else None  # type: ignore[assignment]
        if not isinstance(tree, dict):
            raise SpecError(f"{where} is not in the spec as run; cannot place its best value")
    if keys[-1] not in tree:
        raise SpecError(f"{where} is not in the spec as run; cannot place its best value")
    tree[keys[-1]] = value
