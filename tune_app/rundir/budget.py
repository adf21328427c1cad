"""Enough trials? The expected best score of a search of n trials, n = 1..N, from the run's own
N final scores (Dodge et al. 2019, "Show your work: improved reporting of experimental
results").

A search of n trials is taken as n of the run's trials drawn without replacement, all subsets
alike: with the scores sorted worst to best, v(1) .. v(N), the best of n is v(i) with
probability C(i-1, n-1) / C(N, n) (the i-th and n-1 of the i-1 below it), so
E[best of n] = sum over i of v(i) C(i-1, n-1) / C(N, n), exact, and at n = N it is the run's
best. A curve still climbing at N says more trials would likely find better; a flat one, that
they would not (for this space and searcher: a model-based searcher's later trials are not
draws from its early ones). Pure functions, Ray-free.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tune_app.rundir.records import ERRORED, UNFINISHED, RunSummary

COMPACT = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)  # n shown in a line
# Up to this many trials the curve is at every n; beyond, at about as many n spaced evenly on a
# log scale (each n costs O(N): every n of 100,000 trials would take minutes).
EVERY_N = 2000


@dataclass(frozen=True)
class ExpectedBest:
    """The expected best score of n trials drawn from the run's, and its standard deviation."""

    n: int
    mean: float
    sd: float


@dataclass(frozen=True)
class BudgetCurve:
    """The expected best against the number of trials (or configurations, with seeds)."""

    unit: str  # "trials" or "configurations"
    points: tuple[ExpectedBest, ...]  # n = 1 .. N (beyond EVERY_N, some n of them)

    @property
    def count(self) -> int:
        """N: the run's own count, where the curve ends (and the run's best)."""
        return self.points[-1].n if self.points else 0

    def compact(self) -> tuple[ExpectedBest, ...]:
        """The curve at a few n (1, 2, 5, 10, 20, ...) and at N."""
        return tuple(p for p in self.points if p.n in COMPACT or p.n == self.count)

    def gain(self) -> float | None:
        """What the second half of the run added to the expected best: E[N] - E[N // 2];
        None under 2 points."""
        if self.count < 2:
            return None
        half = max((p for p in self.points if p.n <= self.count // 2), key=lambda p: p.n)
        return self.points[-1].mean - half.mean


def sizes(count: int) -> list[int]:
    """The n a curve of `count` trials is computed at: all up to EVERY_N, else about EVERY_N
    spaced evenly on a log scale, with COMPACT's and `count` among them."""
    if count <= EVERY_N:
        return list(range(1, count + 1))
    spaced = np.unique(np.round(np.geomspace(1, count, EVERY_N)).astype(int))
    return sorted({int(n) for n in spaced} | {n for n in COMPACT if n <= count} | {count})


def expected_best(scores: Sequence[float], mode: str | None) -> tuple[ExpectedBest, ...]:
    """E[best of n] and its standard deviation for n = 1 .. len(scores) (`sizes`), n of the
    scores drawn without replacement (best: the highest, or the lowest under mode min)."""
    values = np.sort(np.array([s for s in scores if math.isfinite(s)], dtype=float))
    if mode == "min":
        values = values[::-1]  # worst to best
    count = values.size
    if count == 0:
        return ()
    # log k! for k = 0 .. N, so each C(a, b) is exp(lf[a] - lf[b] - lf[a - b]) without overflow.
    lf = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, count + 1)))])
    out = []
    rank = np.arange(1, count + 1)  # i: v(i) is the i-th worst
    for n in sizes(count):
        i = rank[n - 1 :]
        log_choose_n = lf[count] - lf[n] - lf[count - n]
        weights = np.exp(lf[i - 1] - lf[n - 1] - lf[i - n] - log_choose_n)
        weights /= weights.sum()  # exact up to rounding: they sum to 1
        top = values[n - 1 :]
        mean = float(weights @ top)
        spread = float(weights @ (top - mean) ** 2)
        out.append(ExpectedBest(n, mean, math.sqrt(max(spread, 0.0))))
    return tuple(out)


def curve(summary: RunSummary) -> BudgetCurve | None:
    """The run's curve: over its scored trials that ended and did not fail, or with seeds over
    its configurations' aggregates (a configuration is what a search of n draws); None under 2.
    A trial an interruption left unfinished is out: its score is an early one, not its final."""
    out = {t.trial_id for t in summary.trials if t.status in (ERRORED, UNFINISHED)}
    if summary.seeds:
        unit = "configurations"
        configs = summary.configurations()
        scores = [c.score for c in configs if c.score is not None and not out & set(c.trial_ids)]
    else:
        unit = "trials"
        scores = [t.score for t in summary.trials if t.score is not None and t.trial_id not in out]
    scores = [s for s in scores if math.isfinite(s)]  # a metric at inf (from rows) no score
    if len(scores) < 2:
        return None
    return BudgetCurve(unit, expected_best(scores, summary.mode))


def compact_text(found: BudgetCurve, shown: Callable[[float], str] = "{:.6g}".format) -> str:
    """The curve in one line: `expected best of n trials: 1: 0.61, 2: 0.7, ..., 20 (this run):
    0.93`."""
    parts = [
        f"{p.n}{' (this run)' if p.n == found.count else ''}: {shown(p.mean)}"
        for p in found.compact()
    ]
    return f"expected best of n {found.unit}: " + ", ".join(parts)
