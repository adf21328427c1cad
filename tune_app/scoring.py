"""Which trial is best: one rule, Tune's `scope`, for every place that ranks trials.

A trial's score is computed from the finite values of the metric it reported, in order: its
last value (`last`, the default: where a learning curve ended), its best ever (`all`), the mean
of all (`avg`) or of its last N (`last-N-avg`). The live view, the summary, `expect`, `analyze`,
`report`, JUnit and TensorBoard's HParams all rank by it, so they name the same best trial.
Ray-free.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable
from typing import Any

DEFAULT_SCOPE = "last"
SCOPE_PATTERN = r"^(last|all|avg|last-[1-9][0-9]*-avg)$"
SCOPES = ("last", "all", "avg", "last-N-avg")
SCOPE_DOC = {
    "last": "the trial's last reported value",
    "all": "the best value the trial ever reported",
    "avg": "the mean of all its reported values",
    "last-N-avg": "the mean of its last N reported values (e.g. last-5-avg)",
}


def number(value: Any) -> float | None:
    """`value` as a float when it is a real number (numpy's too; NaN and infinities included, a
    bool not), else None: a metric reported as text or a list holds no value of it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def finite(value: Any) -> float | None:
    """`value` as a float when it is a finite number (numpy's too), else None."""
    found = number(value)
    return found if found is not None and math.isfinite(found) else None


def score(
    values: Iterable[Any], scope: str = DEFAULT_SCOPE, mode: str | None = "max"
) -> float | None:
    """A trial's score from the metric values it reported (missing and non-finite ones skipped)."""
    numbers_ = [v for v in (finite(x) for x in values) if v is not None]
    if not numbers_:
        return None
    if scope == "last":
        return numbers_[-1]
    if scope == "all":
        return min(numbers_) if mode == "min" else max(numbers_)
    if scope == "avg":
        return sum(numbers_) / len(numbers_)
    found = re.fullmatch(r"last-([1-9][0-9]*)-avg", scope)
    if found is None:
        raise ValueError(f"unknown scope {scope!r}; allowed: {', '.join(SCOPES)}")
    tail = numbers_[-int(found.group(1)) :]
    return sum(tail) / len(tail)


def better(value: float, than: float | None, mode: str | None) -> bool:
    """Whether score `value` beats `than` (None: anything beats it)."""
    if than is None:
        return True
    return value < than if mode == "min" else value > than


def describe(scope: str) -> str:
    """A few words saying what a score under `scope` is, for tables and plans."""
    if scope.startswith("last-") and scope != "last":
        return f"mean of the last {scope.split('-')[1]} values"
    return {"last": "last value", "all": "best value ever", "avg": "mean of all values"}[scope]
