"""How sure a run with seeds is of its best configuration: each configuration's chance of being
the best, and a pessimistic bound that `select: lcb` ranks by.

Both come from one seeded bootstrap over each configuration's own seed scores: a draw resamples
every configuration's scores with replacement and takes their aggregate (the run's mean, iqm or
median). A configuration's chance of being the best is the share of draws in which its aggregate
is the top one (ties shared); its bound is the 5th percentile of its own draws' aggregates (the
95th when lower is better), a one-sided 95% bound. Under `seeds.MIN_BOOTSTRAP` seeds a bootstrap
knows little more than the seeds it has: with 2 seeds the bound is the worse seed's score.
Pure functions, Ray-free; the seed is fixed so a report shows the same figures each time.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tune_app.seeds import Configuration, aggregate_rows, finite_values

DRAWS = 2000
SEED = 0
LEVEL = 0.95  # the bound's one-sided confidence
DEFAULT_SELECT = "aggregate"
SELECTS = ("aggregate", "lcb")  # what may rank configurations: their aggregate, or its bound
MIN_SEEDS = 2  # scored seeds a configuration needs for a chance or a bound


def resampled(scores: Sequence[Sequence[float | None]], how: str) -> list[np.ndarray | None]:
    """For each configuration, the aggregates of DRAWS bootstrap resamples of its finite
    scores; None for one with fewer than MIN_SEEDS. One generator draws them all in order, so
    the result depends only on the scores and SEED."""
    rng = np.random.default_rng(SEED)
    out: list[np.ndarray | None] = []
    for values in scores:
        finite = finite_values(values)
        if finite.size < MIN_SEEDS:
            out.append(None)
            continue
        picks = rng.integers(0, finite.size, size=(DRAWS, finite.size))
        out.append(aggregate_rows(finite[picks], how))
    return out


def chance_best(
    scores: Sequence[Sequence[float | None]], how: str, mode: str | None
) -> list[float | None]:
    """Each configuration's chance of being the best: the share of bootstrap draws in which its
    aggregate is the top one among the configurations with MIN_SEEDS scored seeds (a tie shares
    the draw). None for a configuration with fewer; the others' chances sum to 1."""
    stats = resampled(scores, how)
    judged = [i for i, s in enumerate(stats) if s is not None]
    out: list[float | None] = [None] * len(stats)
    if not judged:
        return out
    table = np.stack([stats[i] for i in judged])  # type: ignore[misc]  # configs x draws
    if mode == "min":
        table = -table
    top = table.max(axis=0)
    winners = table == top  # configs x draws
    share = (winners / winners.sum(axis=0)).sum(axis=1) / table.shape[1]
    for i, value in zip(judged, share, strict=True):
        out[i] = float(value)
    return out


def lower_bound(values: Sequence[float | None], how: str, mode: str | None) -> float | None:
    """The pessimistic one-sided 95% bootstrap bound of the aggregate of `values`: its 5th
    percentile (95th when lower is better). None under MIN_SEEDS finite values."""
    stats = resampled([values], how)[0]
    if stats is None:
        return None
    tail = (1 - LEVEL) * 100
    return float(np.percentile(stats, 100 - tail if mode == "min" else tail))


def judged(
    configs: list[Configuration], how: str, mode: str | None, select: str = DEFAULT_SELECT
) -> list[Configuration]:
    """`configs` (as `seeds.group` ranks them) with each one's chance of being best and its
    bound filled in; with `select: lcb`, ranked by the bound instead of the aggregate, the
    incomplete and the unbounded after the others, as `group` puts the incomplete after."""
    chances = chance_best([c.scores for c in configs], how, mode)
    for c, chance in zip(configs, chances, strict=True):
        c.chance_best = chance
        c.bound = lower_bound(c.scores, how, mode)
    if select != "lcb":
        return configs
    sign = -1.0 if mode == "max" else 1.0
    return sorted(
        configs,
        key=lambda c: (
            c.score is None,
            not c.complete,
            c.bound is None,
            sign * c.bound if c.bound is not None else 0.0,
        ),
    )  # stable: equal bounds keep the aggregate's order


def bound_words(mode: str | None) -> str:
    """What the bound is, in a few words, for tables and captions."""
    side = "upper" if mode == "min" else "lower"
    return f"one-sided {LEVEL:.0%} bootstrap {side} bound"


def chosen_by(c: Configuration, select: str) -> str:
    """`, P(best) 74%` and, under select: lcb, `, ranked by its lcb 0.61`: what the best
    configuration's line adds in `analyze`, `report` and the run's summary."""
    chance = f", P(best) {c.chance_best:.0%}" if c.chance_best is not None else ""
    bound = f"{c.bound:.6g}" if c.bound is not None else "-"
    return chance + (f", ranked by its lcb {bound}" if select == "lcb" else "")
