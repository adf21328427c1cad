"""`--smoke`: any experiment shrunk to a tiny run that still takes every code path.

At most 2 samples, each grid axis cut to its first 2 values, at most 2 iterations per trial, and
the trainable's declared smoke overrides (RLlib: one env runner, tiny batches) for the config
keys the spec does not search. `expect: {smoke: {...}}` bounds are the ones a smoke run checks.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tune_app.registry import TrainableRef
from tune_app.space import Domain, map_domains
from tune_app.spec.resolved import Experiment

MAX_SAMPLES = 2
MAX_GRID_VALUES = 2
MAX_ITERATIONS = 2


def shrink(exp: Experiment, ref: TrainableRef) -> Experiment:
    """The smoke-size version of `exp` (RLlib keys already in their new-stack names)."""
    config = ref.kind.smoke_config(cut_grids(exp.config))
    stop = dict(exp.stop)
    stop["training_iteration"] = min(stop.get("training_iteration", MAX_ITERATIONS), MAX_ITERATIONS)
    expect = exp.expect
    if expect.smoke:  # the bounds a smoke run can meet replace those it cannot
        expect = expect.model_copy(update={"metrics": dict(expect.smoke), "smoke_run": True})
    return replace(
        exp,
        config=config,
        num_samples=min(exp.num_samples, MAX_SAMPLES),
        stop=stop,
        expect=expect,
    )


def cut_grids(space: Any) -> Any:
    """The parsed space with every grid axis cut to its first values."""

    def cut(d: Domain) -> Domain:
        args = d.args[:MAX_GRID_VALUES] if d.is_grid else d.args
        return Domain(d.kind, tuple(cut_grids(a) for a in args))

    return map_domains(space, cut)
