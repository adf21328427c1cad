"""`--smoke`: any experiment shrunk to a tiny run that still takes every code path.

At most 2 samples, each grid axis cut to its first 2 values, at most 2 iterations per trial, and
the trainable's declared smoke overrides (RLlib: one env runner, tiny batches) for the config
keys the spec does not search.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tune_app import rllib
from tune_app.registry import TrainableRef
from tune_app.space import Domain, map_domains
from tune_app.spec.models import Experiment

MAX_SAMPLES = 2
MAX_GRID_VALUES = 2
MAX_ITERATIONS = 2


def shrink(exp: Experiment, ref: TrainableRef) -> Experiment:
    """The smoke-size version of `exp` (RLlib keys already in their new-stack names)."""
    config = cut_grids(exp.config)
    if isinstance(config, dict):
        for key, value in overrides(ref).items():
            if not isinstance(config.get(key), Domain):
                config[key] = value
        if ref.kind == "rllib":
            defaults = rllib.algorithm_keys(ref.run).defaults
            for key, cap in rllib.SMOKE_AT_MOST.items():
                given = config.get(key, defaults.get(key))
                if isinstance(given, int | float) and not isinstance(given, bool):
                    config[key] = min(cap, given)  # None (no minimum) stays
    stop = dict(exp.stop)
    stop["training_iteration"] = min(stop.get("training_iteration", MAX_ITERATIONS), MAX_ITERATIONS)
    return replace(exp, config=config, num_samples=min(exp.num_samples, MAX_SAMPLES), stop=stop)


def overrides(ref: TrainableRef) -> dict[str, Any]:
    """The config a trainable declares for smoke runs."""
    if ref.info is not None:
        return dict(ref.info.smoke)
    if ref.kind == "rllib":
        accepted = rllib.algorithm_keys(ref.run).defaults
        out: dict[str, Any] = {k: v for k, v in rllib.SMOKE.items() if k in accepted}
        # Fragments that fit the tiny batches: RLlib's "auto" where that is its default, else
        # a length the smoke minibatch is a multiple of (IMPALA and APPO require it).
        fragment = accepted.get("rollout_fragment_length")
        out.update(
            {"rollout_fragment_length": "auto"} if fragment == "auto" else rllib.SMOKE_FRAGMENTS
        )
        return out
    return {}


def cut_grids(space: Any) -> Any:
    """The parsed space with every grid axis cut to its first values."""

    def cut(d: Domain) -> Domain:
        args = d.args[:MAX_GRID_VALUES] if d.is_grid else d.args
        return Domain(d.kind, tuple(cut_grids(a) for a in args))

    return map_domains(space, cut)
