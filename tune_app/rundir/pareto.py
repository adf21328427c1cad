"""The Pareto front of a search of several objectives, and the one point of it `best --pick`
names: pure functions of each trial's objective values. Ray-free.

A point dominates another when it is at least as good on every objective and better on one.
The front is the points no other dominates: trials with a value of every objective, that did
not fail and kept every constraint (the caller leaves the others out).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from tune_app.errors import SpecError
from tune_app.objectives import Objective

Point = Sequence[float]


def _better(a: float, b: float, mode: str) -> bool:
    return a > b if mode == "max" else a < b


def dominates(a: Point, b: Point, modes: Sequence[str]) -> bool:
    """Whether `a` is at least as good as `b` on every objective and better on one."""
    pairs = list(zip(a, b, modes, strict=True))
    return all(not _better(y, x, m) for x, y, m in pairs) and any(
        _better(x, y, m) for x, y, m in pairs
    )


def front(points: Mapping[str, Point], modes: Sequence[str]) -> list[str]:
    """The ids of the points no other point dominates, in the order given (equal points are
    all on the front)."""
    return [
        key
        for key, point in points.items()
        if not any(dominates(other, point, modes) for k, other in points.items() if k != key)
    ]


def pick(
    points: Mapping[str, Point],
    objectives: Sequence[Objective],
    which: str,
    where: str,
    trials: Collection[str] = (),
) -> str:
    """The front's point `which` names: an objective's name (the front's best on it, ties by the
    other objectives in order) or a trial id on the front. `where` names the option for
    messages; `trials`, the run's every trial (those without a point too)."""
    modes = [o.mode for o in objectives]
    ids = front(points, modes)
    names = [o.name for o in objectives]
    if not ids:
        raise SpecError(
            "no trial is on the front: none has a value of every objective within the constraints",
            path=where,
            suggestion="see analyze for what each trial reported",
        )
    if which in names:
        at = names.index(which)
        order = [at, *(i for i in range(len(names)) if i != at)]
        sign = [1.0 if modes[i] == "min" else -1.0 for i in range(len(names))]
        return min(ids, key=lambda k: tuple(sign[i] * points[k][i] for i in order))
    if which in ids:
        return which
    if which in points:
        why = "is not on the front"
    elif which in trials:
        why = "is not on the front (it broke a constraint, failed, or lacks an objective's value)"
    else:
        why = "is neither an objective nor a trial"
    raise SpecError(
        f"'{which}' {why}",
        path=where,
        allowed=[*names, *ids],
        suggestion="name an objective (the front's best on it) or a trial id of the front",
    )
