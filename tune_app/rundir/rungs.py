"""Does early stopping judge well here? For ASHA, HyperBand and BOHB runs, the rank correlation
(Spearman) at each rung between the trials' scores there and their final scores, over the trials
that reached the end.

A rung is an iteration at which the scheduler stopped trials (what the run's trials show, so a
run read back without its spec gives the same rungs); a trial that the run's end stopped
(`fail_fast`, `time_budget_s`) or that failed is no scheduler's stop (`records.stopped_early`).
Only trials that reached the end have a final score, and the scheduler promoted them, so the
correlation is over survivors: it judges whether the rung ordered the trials it kept as they
ended. Below `BOUND` the rung's cuts were
close to chance: with a reduction factor of 3, a rung keeping the top 9 of 27 trials keeps the
one that would have ended best about 3 times in 4 at a Spearman of 0.5 (and 1 in 3 at 0, 24 in
25 at 0.8; Gaussian ranks, simulated), and a run loses it at every such rung in turn. Pure
functions, Ray-free.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from tune_app.words import counted


class TrialOutcome(Protocol):
    """What the rung checks read of a trial's outcome (`records.TrialOutcome` has it; records
    holds the checks in RunSummary, so this module does not import it)."""

    @property
    def trial_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def iterations(self) -> int: ...
    @property
    def score(self) -> float | None: ...
    @property
    def stopped_early(self) -> bool: ...


FINISHED = "TERMINATED"  # a trial that ended on its own (tune_app.rundir.records.FINISHED)

BOUND = 0.5  # a rung's Spearman under this: its early scores did not predict the final ones
MIN_TRIALS = 5  # trials that reached the end needed to judge a rung (under it, no figure)
SCHEDULERS = ("asha", "hyperband")  # those that stop trials at rungs (BOHB runs hyperband's)
ITERATION = "training_iteration"
Curves = dict[str, dict[int, float | None]]  # trial id -> its metric by iteration


@dataclass(frozen=True)
class RungCheck:
    """One rung: its iteration, the trials that reached the end with a score there, and the
    Spearman correlation of their scores there with their final scores (None: too few)."""

    rung: int
    trials: int = 0
    spearman: float | None = None

    @property
    def predicts(self) -> bool | None:
        """Whether the rung's scores predicted the final ones (None: not judged)."""
        return None if self.spearman is None else self.spearman >= BOUND


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation (ties get their mean rank); None under 3 pairs or when
    either side is constant."""
    if len(a) != len(b) or len(a) < 3:
        return None
    ra, rb = _ranks(np.asarray(a, dtype=float)), _ranks(np.asarray(b, dtype=float))
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranks(values: np.ndarray) -> np.ndarray:
    order = values.argsort(kind="stable")
    ranks = np.empty(values.size, dtype=float)
    ranks[order] = np.arange(1, values.size + 1)
    for value in np.unique(values):  # ties: their mean rank, as scipy's rankdata
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def rungs_of(trials: Sequence[TrialOutcome]) -> list[int]:
    """The iterations at which the scheduler stopped trials, below the longest trial's end."""
    most = max((t.iterations for t in trials), default=0)
    return sorted({t.iterations for t in trials if t.stopped_early and 0 < t.iterations < most})


def check(
    curves: Mapping[str, Mapping[int, float | None]],
    finals: Mapping[str, float],
    rungs: Sequence[int],
) -> list[RungCheck]:
    """Each rung's correlation: `curves` are each trial's metric by iteration, `finals` the
    final scores of the trials that reached the end (the others do not count)."""
    out = []
    for rung in rungs:
        pairs = [
            (at, finals[trial])
            for trial, points in curves.items()
            if trial in finals and (at := points.get(rung)) is not None and math.isfinite(at)
        ]
        rho = spearman([p[0] for p in pairs], [p[1] for p in pairs])
        out.append(RungCheck(rung, len(pairs), rho if len(pairs) >= MIN_TRIALS else None))
    return out


def checks(
    trials: Sequence[TrialOutcome],
    curves: Mapping[str, Mapping[int, float | None]],
    scheduler: str,
) -> list[RungCheck]:
    """The run's rungs, checked: for ASHA and HyperBand (BOHB) runs, the trials that finished
    at the longest trial's iteration count as having reached the end; [] for other
    schedulers."""
    if scheduler not in SCHEDULERS:
        return []
    most = max((t.iterations for t in trials), default=0)
    finals = {
        t.trial_id: t.score
        for t in trials
        if t.status == FINISHED and t.iterations == most and t.score is not None
    }
    return check(curves, finals, rungs_of(trials))


def curves_from(
    history: Mapping[str, Sequence[Mapping[str, float | None]]], metric: str | None
) -> Curves:
    """Each trial's metric by iteration, from flat result rows (the last row of an iteration
    wins, as Tune's results.jsonl keeps one per iteration)."""
    if metric is None:
        return {}
    out: Curves = {}
    for trial, rows in history.items():
        points = out.setdefault(trial, {})
        for row in rows:
            step = row.get(ITERATION)
            if step is not None and metric in row:
                points[int(step)] = row[metric]
    return out


def warning(found: Sequence[RungCheck], scheduler: str) -> str | None:
    """The run's end's note when a rung's scores did not predict the final ones, with what to
    change; None when every judged rung did (or none was judged)."""
    poor = [c for c in found if c.predicts is False]
    if not poor:
        return None
    where = ", ".join(f"iteration {c.rung} (Spearman {c.spearman:.2f})" for c in poor)
    good = [c.rung for c in found if c.predicts and c.rung > poor[-1].rung]
    later = f"grace_period: {good[0]}" if good else f"a grace_period above {poor[-1].rung}"
    change = (
        f"raise the first rung ({later}) or stop no trial early (scheduler: fifo)"
        if scheduler == "asha"
        else f"use scheduler asha with {later}, or stop no trial early (scheduler: fifo)"
    )
    return (
        f"early stopping: early results did not predict late ones here: the scores at {where} "
        f"ranked the trials that reached the end unlike their final scores (under {BOUND}); "
        f"{change}"
    )


def check_text(found: Sequence[RungCheck]) -> str:
    """The checks in one line: `rung Spearman with the final score: iteration 2: 0.31 (8
    trials), ...`."""
    parts = [
        f"iteration {c.rung}: "
        + (f"{c.spearman:.2f}" if c.spearman is not None else "-")
        + f" ({counted(c.trials, 'trial')})"
        for c in found
    ]
    return "rank correlation (Spearman) of each rung's scores with the final scores: " + ", ".join(
        parts
    )


@functools.cache
def chance_best_kept(
    rank_correlation: float, reduction_factor: float, trials: int = 27, draws: int = 20_000
) -> float:
    """The chance that a rung keeping the top 1 / `reduction_factor` of `trials` keeps the
    trial that would have ended best, when the scores there and the final ones have the
    Spearman correlation `rank_correlation` (Gaussian ranks, simulated with a fixed seed):
    1 / reduction_factor at 0, about 3 in 4 at 0.5 with a factor of 3."""
    kept = max(1, int(trials // reduction_factor))
    pearson = 2 * math.sin(math.pi * rank_correlation / 6)  # a Gaussian pair's Spearman
    rng = np.random.default_rng(0)
    final = rng.standard_normal((draws, trials))
    early = pearson * final + math.sqrt(max(0.0, 1 - pearson**2)) * rng.standard_normal(
        (draws, trials)
    )
    best = final.argmax(axis=1)
    # The best's early score beats all but fewer than `kept` of the others: it is kept.
    above = (early > early[np.arange(draws), best][:, None]).sum(axis=1)
    return float((above < kept).mean())


def cut_words(reduction_factor: float | None) -> str:
    """How often a rung at the bound keeps the trial that would have ended best, for the run's
    reduction factor (run.json's; a run that predates it is told of a factor of 3, as an
    example)."""
    factor = reduction_factor if reduction_factor and reduction_factor > 1 else None
    shown = factor or 3.0
    at_bound, at_zero = chance_best_kept(BOUND, shown), chance_best_kept(0.0, shown)
    which = "this run's reduction factor" if factor else "a reduction factor"
    return (
        f"with {which} of {shown:g}, a rung at {BOUND} keeps the trial that would have ended "
        f"best {at_bound:.0%} of the time ({at_zero:.0%} at 0)"
    )
