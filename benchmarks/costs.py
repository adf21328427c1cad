"""The search benchmarks' shared arithmetic (Ray-free): a method's costs over searcher seeds, and
bootstrap intervals of ratios of medians, for one problem or pooled over several."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any


def reached(value: Any, goal: float, mode: str = "max") -> bool:
    if not isinstance(value, int | float) or math.isnan(value):
        return False
    return value >= goal if mode == "max" else value <= goal


@dataclass(frozen=True)
class Costs:
    """A method's compute to the goal, one value per run; a run that never reached the goal
    counts as all it spent, a lower bound of what it would have needed."""

    method: str
    values: tuple[int, ...]
    misses: tuple[bool, ...] = ()  # per run: it never reached the goal (empty: none did)
    unit: str = "trial-iterations"  # what a value counts

    @property
    def missed(self) -> int:
        return sum(self.misses)

    def _runs(self) -> zip[tuple[int, bool]]:
        return zip(self.values, self.misses or (False,) * len(self.values), strict=True)

    @property
    def median(self) -> float:
        return float(median(self.values))

    @property
    def censored(self) -> tuple[float, ...]:
        """The runs' costs with a miss as infinite: what the method is judged on when it is
        the faster side of a target (a miss's count would flatter it)."""
        return tuple(math.inf if miss else v for v, miss in self._runs())

    def listing(self) -> str:
        """Every run's count in seed order, "+" after a miss: the figures can be worked out
        again from a log."""
        return " ".join(f"{v}{'+' if miss else ''}" for v, miss in self._runs())

    def describe(self) -> str:
        runs = len(self.values)
        if runs == 1:
            text = f"{self.method} {self.values[0]:,} {self.unit} (one run)"
        else:
            text = (
                f"{self.method} median {self.median:,.0f} {self.unit} "
                f"({min(self.values):,}-{max(self.values):,} over {runs} seeds)"
            )
        if self.missed:
            text += (
                f", {self.missed} of {runs} never reached it (counted as all they spent; as "
                f"never when it is the side a target bounds)"
            )
        return text


def ratio_interval(
    num: tuple[float, ...],
    den: tuple[float, ...],
    level: float = 0.9,
    draws: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """A bootstrap interval of median(num) / median(den): both sides' runs resampled."""
    rng = random.Random(seed)
    ratios = sorted(
        median(rng.choices(num, k=len(num))) / median(rng.choices(den, k=len(den)))
        for _ in range(draws)
    )
    tail = (1 - level) / 2
    return ratios[int(tail * draws)], ratios[math.ceil((1 - tail) * draws) - 1]


def pooled_interval(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    level: float = 0.95,
    draws: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """A bootstrap interval of the geometric mean, over problems, of median(num) / median(den):
    in every draw each problem's runs are resampled on both sides."""
    rng = random.Random(seed)
    found = []
    for _ in range(draws):
        logs = []
        for num, den in pairs:
            ratio = median(rng.choices(num, k=len(num))) / median(rng.choices(den, k=len(den)))
            logs.append(math.log(ratio) if ratio > 0 else -math.inf)
        found.append(math.exp(sum(logs) / len(logs)) if math.inf not in logs else math.inf)
    found.sort()
    tail = (1 - level) / 2
    return found[int(tail * draws)], found[math.ceil((1 - tail) * draws) - 1]


def geometric_mean(values: Sequence[float]) -> float:
    if any(v == math.inf for v in values):
        return math.inf
    return math.exp(sum(math.log(v) for v in values) / len(values))


def difference_interval(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    level: float = 0.95,
    draws: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """A bootstrap interval of the mean, over problems, of median(a) - median(b): each problem's
    runs resampled on both sides in every draw."""
    rng = random.Random(seed)
    found = sorted(
        sum(median(rng.choices(a, k=len(a))) - median(rng.choices(b, k=len(b))) for a, b in pairs)
        / len(pairs)
        for _ in range(draws)
    )
    tail = (1 - level) / 2
    return found[int(tail * draws)], found[math.ceil((1 - tail) * draws) - 1]
