"""A run's parameter importance by every method: permutation importance and Optuna's evaluators,
over the searched parameters (never the seed), as `analyze` and `report` show it.

Optuna's evaluators take each parameter's distribution from the spec as run (the run folder's
copy); where it cannot be read, from the trials' values.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tune_app.readback.importance.optuna_evaluators import Evaluated, evaluate
from tune_app.readback.importance.permutation import (
    Importances,
    importances,
    scored_trials,
    too_little,
)
from tune_app.rundir.read import ExperimentResults
from tune_app.scoring import finite
from tune_app.seeds import SEED_KEY
from tune_app.space import Domain, outer_domains

PERMUTATION = "permutation"  # the JSON field of permutation importance, beside `EVALUATORS`' keys


@dataclass(frozen=True)
class RunImportance:
    """Every method's importances of one experiment's searched parameters."""

    params: tuple[str, ...]  # most important first: by permutation, else by the first evaluator
    permutation: Importances
    evaluated: tuple[Evaluated, ...]  # one per `EVALUATORS` entry, in its order

    def shares(self, param: str) -> dict[str, float | None]:
        """`param`'s share by each method (None: the method gave none), by JSON field."""
        found = {i.param: i.share for i in self.permutation.params}
        return {PERMUTATION: found.get(param), **{e.method: e.share(param) for e in self.evaluated}}

    def notes(self) -> dict[str, str]:
        """Each method's note (why it has no numbers, or a caveat), by JSON field."""
        return {PERMUTATION: self.permutation.note, **{e.method: e.note for e in self.evaluated}}

    def as_dict(self) -> dict[str, Any]:
        """What `analyze --format json` prints under `importance`."""
        return {
            "trials": self.permutation.trials,
            "params": {
                p: {k: None if v is None else round(v, 4) for k, v in self.shares(p).items()}
                for p in self.params
            },
            "notes": self.notes(),
            "fit": None if self.permutation.fit is None else round(self.permutation.fit, 4),
        }


def of_run(
    exp: ExperimentResults, log_scaled: Collection[str] | None = None
) -> RunImportance | None:
    """The importances of `exp`'s searched parameters to its score; None without a metric (or
    with several objectives) or a searched parameter. `log_scaled`: the parameters read on a log
    scale (None: run.json's, or for an older run, positive numbers 100x or more apart)."""
    params = [k for k in exp.searched if k != SEED_KEY]  # the seed is noise, not a choice
    if not params or exp.metric is None:
        return None
    logs = list(log_scaled) if log_scaled is not None else _log_scaled(exp, params)
    permutation = importances(exp.trials, params, logs)
    domains = {} if too_little(scored_trials(exp.trials), params) else spec_domains(exp)
    evaluated = evaluate(exp.trials, params, exp.mode, domains, logs)
    ranked = [i.param for i in permutation.params]
    for e in evaluated:
        ranked += [p for p, _ in e.shares if p not in ranked]
    return RunImportance(tuple(ranked), permutation, evaluated)


# From this many trials, `begun` computes in a process of its own while the caller draws.
BESIDE_FROM_TRIALS = 500


def begun(
    exp: ExperimentResults, log_scaled: Collection[str] | None = None
) -> Callable[[], RunImportance | None]:
    """`of_run(exp, log_scaled)` begun; the callable returned gives its result. From
    BESIDE_FROM_TRIALS trials on it runs in a spawned process while this one goes on (the
    report draws its figures meanwhile): on 2 cores its import of scikit-learn (2.5 s) and its
    fits take as long as the figures of a 10,000-trial run. Should that process fail to start
    or die, it is computed here, where its error, if real, is raised."""
    if len(exp.trials) < BESIDE_FROM_TRIALS:
        found = of_run(exp, log_scaled)
        return lambda: found
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # What of_run reads, without the results the plots keep (up to 500 a trial).
    slim = replace(exp, history={}, curves=None, clones=[])
    logs = None if log_scaled is None else list(log_scaled)
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    future = pool.submit(of_run, slim, logs)
    pool.shutdown(wait=False)

    def result() -> RunImportance | None:
        try:
            return future.result()
        except Exception:  # the process, not the computation: done again here
            return of_run(exp, log_scaled)

    return result


# A live page computes its importances again once the scored trials have grown this much.
REFRESH_GROWTH = 0.1


class Kept:
    """The importances a live page showed, by experiment: `begun` computes them again only once
    the experiment's scored trials have grown by REFRESH_GROWTH since (or shrunk: a rewritten
    run). A live page of a large run is rewritten every few seconds, and each computation takes
    a process's seconds beside the run it watches; the page says from how many trials its
    importances were learnt."""

    def __init__(self) -> None:
        self._shown: dict[str, tuple[int, RunImportance | None]] = {}

    def begun(
        self, exp: ExperimentResults, log_scaled: Collection[str] | None = None
    ) -> Callable[[], RunImportance | None]:
        scored = len(scored_trials(exp.trials))
        shown = self._shown.get(exp.name)
        if shown is not None and shown[0] <= scored < shown[0] * (1 + REFRESH_GROWTH):
            return lambda: shown[1]
        pending = begun(exp, log_scaled)

        def result() -> RunImportance | None:
            found = pending()
            self._shown[exp.name] = (scored, found)
            return found

        return result


def as_json(exp: ExperimentResults) -> dict[str, Any] | None:
    """`exp`'s importances as `analyze --format json` prints them (None: `of_run`'s None)."""
    found = of_run(exp)
    return found.as_dict() if found is not None else None


def spec_domains(exp: ExperimentResults) -> Mapping[str, Domain]:
    """Each searched path of `exp` -> its domain in the spec as run; {} where the run folder's
    copy of the spec cannot be read or names no experiment of this name."""
    from tune_app.errors import SpecError
    from tune_app.rundir.files import read_text
    from tune_app.spec.resolve import loads

    path = exp.run.spec
    try:
        spec = loads(read_text(path), path)
    except (OSError, UnicodeDecodeError, SpecError):
        return {}
    for e in spec.experiments:
        if e.name == exp.name:
            return dict(outer_domains(e.config))
    return {}


def _log_scaled(exp: ExperimentResults, params: list[str]) -> list[str]:
    """The parameters run.json says were searched on a log scale; for a run from before it said,
    those whose values are positive numbers 100x or more apart (as the report's axes)."""
    if exp.log_scaled is not None:
        return [p for p in params if p in exp.log_scaled]
    found = []
    for p in params:
        values = [finite(t.params.get(p)) for t in exp.trials]
        xs = [x for x in values if x is not None]
        if xs and len(xs) == len(values) and min(xs) > 0 and max(xs) >= 100 * min(xs):
            found.append(p)
    return found
