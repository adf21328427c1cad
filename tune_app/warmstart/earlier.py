"""The earlier runs of a warm start, read and checked before Ray starts, and what the searcher
is handed from them (`WarmStart`): configurations by searched path with their scores, or the
grid points left to run.

A trial handed over is a finished one (not failed, not unfinished); its score is its metric's
last value, what a searcher is told of a trial in a run (`ray_internals.sparse.LatestMetric`).
With seeds (this run's or an earlier run's), a configuration's trials are one configuration,
scored by the `aggregate` of their scores (this experiment's, else the earlier run's), as
`SeedRepeater` tells a searcher its seeds. A run is recorded as the run read (`results/e_2`
where `results/e` was named and a later run stood beside it), not as the name given.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from tune_app.errors import Collector, SpecError
from tune_app.methods import searcher_of
from tune_app.objectives import describe
from tune_app.rundir.location import RunLocation
from tune_app.rundir.read import FINISHED, ExperimentResults, read_experiment
from tune_app.rundir.records import TrialOutcome, WarmStartRecord, warm_start_line
from tune_app.seeds import SEED_KEY, aggregate
from tune_app.space import Domain, grid_size, outer_domains, same_value, value_at
from tune_app.spec.resolved import Experiment

SHOWN = 10  # trials outside the space named one a line, per run; the rest counted in one
_MISSING = object()


@dataclass(frozen=True)
class WarmStart:
    """What a warm-started experiment hands its searcher (see `methods.Searcher.warm`)."""

    how: str  # evaluated, first or grid
    runs: tuple[WarmStartRecord, ...]  # each earlier run and the trials handed over from it
    # evaluated and first: configurations (searched path -> value), best first where ranked;
    # grid: the grid points left to run (grid path -> value), each once per sample.
    points: tuple[dict[str, Any], ...]
    told: tuple[float, ...] = ()  # evaluated: each configuration's score
    grid_points: int = 0  # grid: the points of the whole grid

    def samples(self, num_samples: int) -> int:
        """Tune's num_samples: each point left of a grid is one sample (`points_to_evaluate`)."""
        return len(self.points) if self.how == "grid" else num_samples

    def trials(self, exp: Experiment, envs: int = 1) -> int:
        """The trials the run makes: a grid's points left; configurations run first, each one
        trial in place of a sample (of a whole grid of trials, where grid axes are sampled
        too); evaluated ones are no trials."""
        seeds = max(1, len(exp.seeds))
        if self.how == "grid":
            return len(self.points) * seeds * envs
        if self.how == "first":
            first = len(self.points)
            return (first + (exp.num_samples - first) * grid_size(exp.config)) * seeds * envs
        return exp.trials(envs)

    @property
    def handed(self) -> int:
        return sum(r.trials for r in self.runs)

    def line(self) -> str:
        return warm_start_line(self.runs) or ""


def read_warm_start(
    exp: Experiment, metric: str | None, mode: str | None, envs: int = 1
) -> WarmStart | None:
    """The hand-over of `exp.warm_start`'s runs; None without one. Every problem of every run
    is raised at once (SpecErrors), each at its `warm_start[i]` key path."""
    if not exp.warm_start:
        return None
    how = searcher_of(exp.search).warm
    where = f"{exp.key_path}.warm_start"
    errors = Collector()
    with errors.check():
        _check_search(exp, how, envs, where)
    domains = dict(outer_domains(exp.config))
    read: list[tuple[str, ExperimentResults]] = []
    for i, named in enumerate(exp.warm_start):
        with errors.check():
            results = _read_run(named, exp, f"{where}[{i}]")
            _check_objective(results, exp, metric, mode, how, f"{where}[{i}]")
            errors.errors += _outside(results, exp.config, domains, f"{where}[{i}]")
            read.append((named, results))
    errors.raise_any()
    finished = [(r, [t for t in r.trials if t.status == FINISHED]) for _, r in read]
    if how == "grid":
        return _grid(exp, finished, where)
    return _configurations(exp, how, finished, mode, list(domains))


def _check_search(exp: Experiment, how: str, envs: int, where: str) -> None:
    """What a warm start cannot continue: several objectives told as one score, a grid without
    axes or of values that are not single values, an env grid outside the config."""
    if how == "evaluated" and exp.objectives:
        raise SpecError(
            f"search {exp.search.type} is told each earlier trial's score, one number, but "
            f"metric lists {len(exp.objectives)} objectives",
            path=where,
            suggestion="use search: random (earlier configurations run first), or one metric",
        )
    if how != "grid":
        return
    axes = [(p, d) for p, d in outer_domains(exp.config) if d.is_grid]
    if not axes:
        raise SpecError(
            "search grid continues a grid by skipping the grid points the earlier runs ran, "
            "but config has no grid_search axis",
            path=where,
            suggestion="use search: random to run the earlier configurations first, or optuna "
            "or hyperopt to be told them as evaluated",
        )
    for path, domain in axes:
        if not all(_single(v) for v in domain.args):
            raise SpecError(
                "a warm start compares grid points by their values, and this axis holds lists, "
                "mappings or search spaces",
                path=f"{exp.key_path}.config.{path}",
                suggestion="write its values as numbers, text or booleans, or leave warm_start out",
            )
    if envs > 1:
        raise SpecError(
            "a warm start compares grid points on the config's grid axes, and the env grid is "
            "not one of them",
            path=where,
            suggestion="give each env an experiment of its own",
        )


def _single(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _read_run(named: str, exp: Experiment, at: str) -> ExperimentResults:
    """The run `named` names, as the readers find it: a folder of several experiments' runs
    gives the one of this experiment's name."""
    try:
        found = RunLocation.open(named)
    except SpecError as err:
        raise SpecError(
            err.what,
            path=at,
            suggestion=err.suggestion or "give the folder of an earlier run, or its run.json",
        ) from None
    runs = [read_experiment(loc.local, loc.where) for loc in found]
    if len(runs) > 1:
        runs = [r for r in runs if r.name == exp.name] or runs
    if len(runs) != 1:
        raise SpecError(
            f"{named} holds the runs of {len(runs)} experiments "
            f"({', '.join(r.name for r in runs)}), none named {exp.name}",
            path=at,
            suggestion="give one experiment's folder",
        )
    return runs[0]


def _check_objective(
    results: ExperimentResults,
    exp: Experiment,
    metric: str | None,
    mode: str | None,
    how: str,
    at: str,
) -> None:
    """An earlier run ranked by another metric or mode scored its trials otherwise: refused,
    except for a grid searched without a metric (it compares configurations only)."""
    if exp.objectives:
        theirs = results.summary.objectives
        if list(exp.objectives) != theirs:
            raise SpecError(
                f"{results.where} is a run of {describe(theirs) or 'one metric'}, this experiment "
                f"searches {describe(exp.objectives)}: its trials were scored otherwise",
                path=at,
                suggestion="warm-start from runs of the same objectives",
            )
        return
    if metric is None and how == "grid":
        return
    if (results.metric, results.mode) != (metric, mode):
        named = f"metric {results.metric} ({results.mode})" if results.metric else "no metric"
        raise SpecError(
            f"{results.where} is a run of {named}, this experiment's is {metric} ({mode}): "
            "its trials were scored otherwise",
            path=at,
            suggestion=f"warm-start from runs of metric {metric}, mode {mode}",
        )


def _outside(
    results: ExperimentResults, config: Any, domains: dict[str, Domain], at: str
) -> list[SpecError]:
    """One error for each finished trial with a value this space could not have drawn (its
    searched values, and values the earlier run searched that are constants here), up to
    SHOWN; the rest counted in one more."""
    constants = [
        p
        for p in results.searched
        if p != SEED_KEY and p not in domains and value_at(config, p, _MISSING) is not _MISSING
    ]
    found = []
    for trial in results.trials:
        if trial.status != FINISHED:
            continue
        problem = _trial_outside(trial, config, domains, constants)
        if problem is not None:
            found.append(
                SpecError(
                    f"trial {trial.trial_id} of {results.where}: {problem}",
                    path=at,
                    suggestion="widen the space to hold it, or leave this run out of warm_start",
                )
            )
    if len(found) > SHOWN:
        more = len(found) - SHOWN
        found = found[:SHOWN] + [
            SpecError(f"and {more} more trials of {results.where} outside the space", path=at)
        ]
    return found


def _trial_outside(
    trial: TrialOutcome, config: Any, domains: dict[str, Domain], constants: list[str]
) -> str | None:
    """Why a trial's config lies outside the space, naming the parameter; None: inside."""
    for path, domain in domains.items():
        value = value_at(trial.config, path, _MISSING)
        if value is _MISSING:
            return f"has no value of '{path}' (its run did not set it)"
        why = domain.outside(value)
        if why is not None:
            return f"'{path}' = {value!r} is {why} ({domain.describe()} here)"
    for path in constants:
        value, here = value_at(trial.config, path, _MISSING), value_at(config, path)
        if value is _MISSING or not same_value(value, here):
            shown = "unset" if value is _MISSING else repr(value)
            return f"'{path}' = {shown}, but here it is the constant {here!r}"
    return None


def _configurations(
    exp: Experiment,
    how: str,
    finished: list[tuple[ExperimentResults, list[TrialOutcome]]],
    mode: str | None,
    paths: list[str],
) -> WarmStart:
    """Each earlier configuration with its score (its seeds' aggregate, with seeds); for `first`
    the best first (where ranked), as many as the run's samples."""
    groups: dict[str, tuple[dict[str, Any], list[float], str]] = {}
    runs = []
    for earlier, trials in finished:
        seeded = bool(exp.seeds or earlier.summary.seeds)
        how_many = exp.aggregate if exp.seeds else earlier.summary.aggregate
        used = 0
        for trial in trials:
            if trial.last is None or not math.isfinite(trial.last):
                continue  # told nothing, or a failed score: not handed over
            values = {p: value_at(trial.config, p) for p in paths}
            key = repr(sorted(values.items())) if seeded else f"{earlier.where}/{trial.trial_id}"
            groups.setdefault(key, (values, [], how_many))[1].append(trial.last)
            used += 1
        runs.append(WarmStartRecord(earlier.where, used, how))
    scored = [(values, aggregate(scores, by)) for values, scores, by in groups.values()]
    pairs = [(v, s) for v, s in scored if s is not None]
    if how == "first":
        if mode is not None:
            pairs.sort(key=lambda p: -p[1] if mode == "max" else p[1])
        pairs = pairs[: exp.num_samples]
    return WarmStart(
        how=how,
        runs=tuple(runs),
        points=tuple(v for v, _ in pairs),
        told=tuple(s for _, s in pairs) if how == "evaluated" else (),
    )


def _grid(
    exp: Experiment, finished: list[tuple[ExperimentResults, list[TrialOutcome]]], where: str
) -> WarmStart:
    """The grid points no earlier run ran (with seeds: on every seed of this run), each once
    per sample; the earlier trials of the points skipped are the ones handed over."""
    axes = [(p, d) for p, d in outer_domains(exp.config) if d.is_grid]
    every = list(itertools.product(*(d.args for _, d in axes)))
    seeds_ran: dict[tuple[Any, ...], set[Any]] = {}
    for _, trials in finished:
        for trial in trials:
            point = _point_key(tuple(value_at(trial.config, p) for p, _ in axes))
            seeds_ran.setdefault(point, set()).add(value_at(trial.config, SEED_KEY))
    wanted = set(exp.seeds) if exp.seeds else None

    def ran(point: tuple[Any, ...]) -> bool:
        seen = seeds_ran.get(_point_key(point))
        return seen is not None and (wanted is None or wanted <= seen)

    left = [p for p in every if not ran(p)]
    if not left:
        raise SpecError(
            f"every one of the grid's {len(every)} points already ran in the warm-start runs: "
            "nothing is left to run",
            path=where,
            suggestion="add grid values, or leave warm_start out to run the grid again",
        )
    done = {_point_key(p) for p in every if ran(p)}
    runs = []
    for earlier, trials in finished:
        keys = [_point_key(tuple(value_at(t.config, p) for p, _ in axes)) for t in trials]
        runs.append(WarmStartRecord(earlier.where, sum(k in done for k in keys), "grid"))
    points = [dict(zip((p for p, _ in axes), point, strict=True)) for point in left]
    return WarmStart(
        how="grid",
        runs=tuple(runs),
        points=tuple(p for p in points for _ in range(exp.num_samples)),
        grid_points=len(every),
    )


def _point_key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A grid point compared as `space.same_value` compares: 1 and 1.0 alike, true not 1."""
    return tuple(("n", v) if _is_number(v) else (type(v).__name__, v) for v in values)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
