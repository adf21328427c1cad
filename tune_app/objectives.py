"""Several objectives: `metric: [a, b]` with `mode: [max, min]`, read into `Objective`s, and the
constraints a trial must meet to be on the front. Ray-free and spec-free, so the spec, the plan
and the run folder's readers share these types.

A search of several objectives has no single best trial: its answer is the Pareto front (see
`tune_app.rundir.pareto`). Tune keeps one `metric` for its own bookkeeping, so such a search runs
with none, its searcher holding the objectives (Tune's `OptunaSearch` takes lists of metrics and
modes), and every part of the app that ranks by one metric sees a search without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator

from tune_app.errors import SpecError

MODES = ("min", "max")


def metric_name(name: str) -> str:
    """`name` as a spec's result key: an empty or blank name names none."""
    if not name.strip():
        raise ValueError(f"{name!r} is not a metric name: write a result key a trial reports")
    return name


# A result key a spec names: a bound's key, checkpoint_score_attribute, a scheduler's time_attr.
MetricName = Annotated[str, AfterValidator(metric_name)]


@dataclass(frozen=True)
class Objective:
    """One objective of a search: the result key and whether lower or higher is better."""

    name: str
    mode: str  # "min" or "max"


@dataclass(frozen=True)
class Limit:
    """A constraint on a reported key: its last value must lie within min and max (inclusive).
    A trial that breaks one, or never reports the key, is never best nor on the front."""

    name: str
    min: float | None = None
    max: float | None = None

    def broken(self, value: float | None) -> str | None:
        """How `value` breaks the limit, in words; None when it keeps it."""
        if value is None:
            return f"{self.name} never reported"
        if self.min is not None and value < self.min:
            return f"{self.name} {value:g} < min {self.min:g}"
        if self.max is not None and value > self.max:
            return f"{self.name} {value:g} > max {self.max:g}"
        return None

    def shown(self) -> str:
        """`gpu_mem_mb <= 2000`, `0 <= loss <= 1`."""
        low = f"{self.min:g} <= " if self.min is not None else ""
        high = f" <= {self.max:g}" if self.max is not None else ""
        return f"{low}{self.name}{high}"

    def excess(self, value: float | None) -> float:
        """Optuna's constraint value: how far `value` lies outside (<= 0: kept; never
        reported: 1, broken)."""
        if value is None:
            return 1.0  # never reported: broken, by an amount that says nothing more
        over = [self.min - value] if self.min is not None else []
        over += [value - self.max] if self.max is not None else []
        return max(over, default=0.0)


def judged(
    objectives: Sequence[Objective], constraints: Sequence[Limit], last: dict[str, float | None]
) -> dict[str, Any]:
    """A trial's `TrialOutcome` fields from its last value of each key: each objective's value
    by name, and the constraints it broke, in words."""
    broken = [c.broken(last.get(c.name)) for c in constraints]
    return {
        "objectives": {o.name: last.get(o.name) for o in objectives},
        "broken": [b for b in broken if b is not None],
    }


def limited_keys(objectives: Sequence[Objective], constraints: Sequence[Limit]) -> list[str]:
    """The result keys the objectives and constraints read, each once."""
    return list(dict.fromkeys([*(o.name for o in objectives), *(c.name for c in constraints)]))


def several(metric: Any) -> bool:
    """Whether a spec's `metric` names several objectives (a list)."""
    return isinstance(metric, list | tuple)


def objectives_of(metric: Any, mode: Any, path: str) -> tuple[Objective, ...]:
    """The objectives of a spec's `metric: [a, b]` and `mode: [max, min]`, one mode per metric;
    () when `metric` names one objective (a mode list beside it is refused). `path` is the key
    path the two keys sit under ("" at the top of the file), for messages."""
    path = f"{path}." if path else ""
    if not several(metric):
        if several(mode):
            raise SpecError(
                f"mode is a list {list(mode)} but metric names one objective ({metric!r})",
                path=f"{path}mode",
                allowed=MODES,
                suggestion="write one mode, or list the metrics: metric: [a, b]",
            )
        return ()
    names = list(metric)
    if len(names) < 2:
        raise SpecError(
            f"metric lists {len(names)} objective{'s' * (len(names) != 1)}: a list is for "
            "two or more",
            path=f"{path}metric",
            suggestion=f"write metric: {names[0]}" if names else "name a metric",
        )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SpecError(
            f"metric lists {', '.join(twice)} more than once",
            path=f"{path}metric",
            suggestion="list each objective once",
        )
    modes = _modes(mode, names, path)
    return tuple(Objective(n, m) for n, m in zip(names, modes, strict=True))


def _modes(mode: Any, names: Sequence[str], path: str) -> list[str]:
    if not several(mode) or len(mode) != len(names):
        given = "none" if mode is None else repr(list(mode) if several(mode) else mode)
        raise SpecError(
            f"metric lists {len(names)} objectives, so mode lists one mode for each, in "
            f"order, but got {given}",
            path=f"{path}mode",
            allowed=MODES,
            suggestion=f"write mode: [{', '.join('max' for _ in names)}] with min or max each",
        )
    return [str(m) for m in mode]


def describe(objectives: Sequence[Objective]) -> str:
    """`a (max), b (min)`."""
    return ", ".join(f"{o.name} ({o.mode})" for o in objectives)


def shown(objectives: Sequence[Objective], constraints: Sequence[Limit]) -> str:
    """The plan's line for an experiment without one metric: its objectives and constraints."""
    if not objectives:
        return "none" + kept(constraints)
    return f"objectives {describe(objectives)}: the Pareto front is the answer{kept(constraints)}"


def kept(constraints: Sequence[Limit]) -> str:
    """`; kept: gpu_mem_mb <= 2000`: the plan's words for the constraints, "" without any."""
    limits = [c.shown() for c in constraints]
    return f"; kept: {', '.join(limits)}" if limits else ""
