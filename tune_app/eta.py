"""How long a search has left, for the progress line and the live report page alike. When its
scheduler stops trials early, each trial's expected length under the scheduler's plan (ASHA's
rungs, HyperBand's brackets), so the ETA counts the iterations the plan will run, not every
trial to its bound. Pure, Ray-free.

Under successive halving about 1 / reduction_factor of the trials that reach a rung go on to the
next, so a trial's length is a distribution over the rungs: most trials end at the first one. A
search whose trials have run `done` iterations in `elapsed` seconds has `left` iterations to go
by that distribution, and as many seconds left as `elapsed * left / done`: the rate so far, all
trials in parallel, carried on.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

ITERATION = "training_iteration"  # the only clock a plan counts in
UNKNOWN = "ETA unknown under early stopping"  # the line's words where no plan applies

Lengths = tuple[tuple[float, float], ...]  # (iterations a trial ends at, its probability)


@dataclass(frozen=True)
class Plan:
    """A trial's length under a scheduler that stops trials early: where trials end and how
    likely each end is; () when the scheduler's plan says nothing in iterations (its clock is
    not `training_iteration`, or it stops by comparing medians): the ETA is unknown."""

    lengths: Lengths = ()

    @property
    def known(self) -> bool:
        return bool(self.lengths)

    def expected(self, reached: float = 0.0) -> float:
        """The iterations a trial that has run `reached` is expected to run in all: its mean
        length over the ends at or beyond `reached` (`reached` itself past every end)."""
        ahead = [(x, p) for x, p in self.lengths if x >= reached and p > 0]
        weight = sum(p for _, p in ahead)
        if not weight:
            return reached
        return sum(x * p for x, p in ahead) / weight

    def left(self, running: Iterable[float], unstarted: int) -> float:
        """The iterations still to run: each running (or paused) trial's from the iterations it
        has run, and every trial not started yet its whole expected length."""
        return sum(self.expected(i) - i for i in running) + unstarted * self.expected()


def seconds_left(
    elapsed_s: float,
    total: int | None,
    ran: Sequence[tuple[float, bool]],
    plan: Plan | None = None,
    bound: int | None = None,
) -> float | None:
    """Seconds left of a search of `total` trials whose trials so far have run `ran` (each
    one's iterations, and whether it ended) in `elapsed_s`, at the rate so far. With a `plan`
    (a scheduler that stops trials early) by the iterations the plan will run over those run
    so far; without one, by the trials' share done: an ended trial all of its work, a running
    one its iterations over the stop's `bound` (none without a bound). None where nothing is
    done yet, or there is no total or plan to count to."""
    if plan is not None:
        iterations = sum(i for i, _ in ran)
        if not plan.known or not total or iterations <= 0:
            return None
        left = plan.left([i for i, ended in ran if not ended], max(0, total - len(ran)))
        return elapsed_s * max(0.0, left) / iterations
    done = sum(1.0 if ended else min(1.0, i / bound) if bound else 0.0 for i, ended in ran)
    return elapsed_s * (total - done) / done if total and done > 0 else None


def clock(seconds: float) -> str:
    """A duration as the progress line and the live page say it: 45s, 3m05s, 2h10m."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def asha(
    grace_period: int,
    max_t: int,
    reduction_factor: float,
    brackets: int = 1,
    time_attr: str = ITERATION,
    bound: int | None = None,
) -> Plan:
    """ASHA's plan: in bracket s its rungs are at grace_period * rf^(k+s) (Tune's
    `_Bracket`), a trial past one of them goes on with chance 1 / rf, and trials that pass
    every rung end at max_t, or at the spec's own stop on `training_iteration` (`bound`) when
    that comes first. Tune draws a trial's bracket with a weight of e^(its rung count)."""
    if time_attr != ITERATION:
        return Plan()
    end = float(min(max_t, bound) if bound else max_t)
    weights: list[float] = []
    per_bracket: list[Lengths] = []
    for s in range(brackets):
        count = int(math.log(max_t / grace_period) / math.log(reduction_factor) - s + 1)
        marks = [grace_period * reduction_factor ** (k + s) for k in range(max(0, count))]
        weights.append(math.e ** len(marks))
        per_bracket.append(_halving([m for m in marks if m < end], end, reduction_factor))
    total = sum(weights)
    return Plan(
        _merged((w / total, lengths) for w, lengths in zip(weights, per_bracket, strict=True))
    )


def hyperband(
    max_t: int, reduction_factor: float, time_attr: str = ITERATION, bound: int | None = None
) -> Plan:
    """HyperBand's plan (Tune's `HyperBandScheduler`): a band of brackets s = 0, 1, ...; bracket
    s takes ceil(s_max / (s + 1) * rf^s) trials, runs them to max_t * rf^-s, and keeps 1 / rf of
    them (rounded up) at each of its s halvings, their budget times rf. A trial's chance of a
    bracket is the bracket's share of the band's trials."""
    if time_attr != ITERATION:
        return Plan()
    end = float(min(max_t, bound) if bound else max_t)
    s_max = int(round(math.log(max_t) / math.log(reduction_factor))) + 1
    counts: defaultdict[float, float] = defaultdict(float)
    for s in range(s_max):
        budget = int(max_t * reduction_factor**-s)
        if budget == 0:
            continue  # Tune skips a bracket too small to run
        n = math.ceil(s_max / (s + 1) * reduction_factor**s)
        for _ in range(s):
            kept = math.ceil(n / reduction_factor)
            counts[float(min(budget, end))] += n - kept
            n, budget = kept, int(min(budget * reduction_factor, max_t))
        counts[float(min(budget, end))] += n
    total = sum(counts.values())
    return Plan(tuple(sorted((x, c / total) for x, c in counts.items())))


def _halving(marks: list[float], end: float, rf: float) -> Lengths:
    """Ends of a trial that meets `marks` (ascending, under `end`) and goes on past each with
    chance 1 / rf, running to `end` past them all."""
    lengths, reach = [], 1.0
    for mark in marks:
        lengths.append((mark, reach * (1 - 1 / rf)))
        reach /= rf
    return (*lengths, (end, reach))


def _merged(parts: Iterable[tuple[float, Lengths]]) -> Lengths:
    """Several distributions of ends, each weighted, as one."""
    counts: defaultdict[float, float] = defaultdict(float)
    for weight, lengths in parts:
        for x, p in lengths:
            counts[float(x)] += weight * p
    return tuple(sorted(counts.items()))
