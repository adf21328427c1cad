"""Which trial is best: one rule, Tune's `scope`, for every place that ranks trials.

A trial's score is computed from the finite values of the metric it reported, in order: its
last value (`last`, the default: where a learning curve ended), its best ever (`all`), the mean
of all (`avg`) or of its last N (`last-N-avg`). The live view, the summary, `expect`, `analyze`,
`report`, JUnit and TensorBoard's HParams all rank by it, so they name the same best trial.
Ray-free.
"""

from __future__ import annotations

import bisect
import math
import numbers
import re
from array import array
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

DEFAULT_SCOPE = "last"
# N has at most 6 digits: a window of a million values is more than any run reports.
SCOPE_PATTERN = r"^(last|all|avg|last-([1-9][0-9]{0,5})-avg)$"
SCOPES = ("last", "all", "avg", "last-N-avg (N from 1 to 999999)")


def is_scope(text: str) -> bool:
    """Whether `text` is a scope (`SCOPES`)."""
    return re.fullmatch(SCOPE_PATTERN, text) is not None


def number(value: Any) -> float | None:
    """`value` as a float when it is a real number (numpy's, a Decimal too; NaN and infinities
    included, a bool not), else None: a metric reported as text, a list or a complex number holds
    no value of it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
        return None
    return float(value)


def finite(value: Any) -> float | None:
    """`value` as a float when it is a finite number (numpy's too), else None."""
    found = number(value)
    return found if found is not None and math.isfinite(found) else None


def score(
    values: Iterable[Any], scope: str = DEFAULT_SCOPE, mode: str | None = "max"
) -> float | None:
    """A trial's score from the metric values it reported (missing and non-finite ones skipped):
    `RunningScore` of them all."""
    running = RunningScore(scope, mode)
    for x in values:
        running.add(x)
    return running.value


@dataclass
class RunningScore:
    """A trial's score kept as its values arrive, in what the scope needs and no more: the last
    value, the best, a sum and a count, or the last N values. `value` is `score` of every value
    added, for a live view that scores each trial again and again while it reports at full
    rate (a list of every value would grow with the results, and be summed each time)."""

    scope: str = DEFAULT_SCOPE
    mode: str | None = "max"
    value: float | None = None
    _sum: float = 0.0
    _count: int = 0
    # The last N values, for a last-N-avg scope only: an empty deque is 0.6 KB, and a run
    # keeps one score per trial.
    _tail: deque[float] | None = None

    def __post_init__(self) -> None:
        found = re.match(SCOPE_PATTERN, self.scope)
        if found is None:
            raise ValueError(f"unknown scope {self.scope!r}; allowed: {', '.join(SCOPES)}")
        if found.group(2):
            self._tail = deque(maxlen=int(found.group(2)))

    def add(self, reported: Any) -> None:
        """Take one reported value (a missing or non-finite one is skipped, as `score` does)."""
        x = finite(reported)
        if x is None:
            return
        self._sum, self._count = self._sum + x, self._count + 1
        if self.scope == "last":
            self.value = x
        elif self.scope == "all":
            best = self.value
            self.value = (
                x if best is None else (min(best, x) if self.mode == "min" else max(best, x))
            )
        elif self.scope == "avg":
            self.value = self._sum / self._count
        elif self._tail is not None:
            self._tail.append(x)
            self.value = sum(self._tail) / len(self._tail)


def better(value: float, than: float | None, mode: str | None) -> bool:
    """Whether score `value` beats `than` (None: anything beats it)."""
    if than is None:
        return True
    return value < than if mode == "min" else value > than


def describe(scope: str) -> str:
    """A few words saying what a score under `scope` is, for tables and plans."""
    if scope.startswith("last-"):
        return f"mean of the last {scope.split('-')[1]} values"
    return {"last": "last value", "all": "best value ever", "avg": "mean of all values"}[scope]


class StepScore:
    """A trial's score over the values it reported at rising steps, where a step that goes back
    (a resume, a retry, a restore) drops the values from that step on, as results.jsonl's
    readers do. Adding at a new step costs O(1): the steps and values are two compact columns
    (16 bytes a result), the score a `RunningScore`, rebuilt only when a step goes back."""

    def __init__(self, scope: str = DEFAULT_SCOPE, mode: str | None = "max") -> None:
        self.steps = array("d")
        self.values = array("d")
        self.running = RunningScore(scope, mode)

    @property
    def value(self) -> float | None:
        return self.running.value

    def add(self, step: float, value: float | None) -> None:
        """Take a result at `step`: values at `step` or later go first; None (no finite value)
        only cuts."""
        if self.steps and self.steps[-1] >= step:
            cut = bisect.bisect_left(self.steps, step)
            del self.steps[cut:]
            del self.values[cut:]
            self.running = RunningScore(self.running.scope, self.running.mode)
            for kept in self.values:
                self.running.add(kept)
        x = finite(value)
        if x is not None:
            self.steps.append(step)
            self.values.append(x)
            self.running.add(x)
