"""What `tune_app compare` found (`Comparison`: each run's best and staircase, the methods and
their probabilities of improvement) and its printed form; `compare_runs.compare` reads the runs
and judges them. Ray-free.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from tune_app.readback.analyze import cell
from tune_app.rundir import budget, noise
from tune_app.rundir.files import jsonable
from tune_app.seeds import CONFIDENCE

MIN_SCORES = noise.MIN_SEEDS  # scores a method needs for a probability of improvement
AXES = ("trials", "iterations", "seconds")  # what a staircase is drawn against
AXIS_WORDS = {
    "trials": "trials ended (with seeds: configurations)",
    "iterations": "iterations spent (every trial's)",
    "seconds": "wall time since the run's first result (s)",
}


@dataclass(frozen=True)
class Step:
    """One point of a run's best-so-far staircase: the best score once `trials` trials (with
    seeds: configurations) had ended, `iterations` results were logged and `seconds` had passed
    since the run's first result (None where the run's rows carry no time)."""

    trials: int
    iterations: int
    seconds: float | None
    best: float

    def at(self, axis: str) -> float | None:
        value = getattr(self, axis)
        return None if value is None else float(value)


@dataclass(frozen=True)
class ComparedRun:
    """One run as compared: where it was read, its best with an interval, its staircase."""

    label: str  # its short name in tables and legends
    where: str  # the run read, as a user names it (a folder or a URI)
    experiment: str
    scheduler: str
    trials: int
    finished: bool
    best: float | None
    interval: tuple[float, float] | None
    interval_words: str  # what the interval is, in words; "" without one
    unit: str  # what the trials axis counts: trials, or configurations with seeds
    seed_scores: tuple[float, ...]  # its best configuration's seeds' scores; () without seeds
    curve: tuple[Step, ...]
    method: str = ""  # the label of the method it belongs to

    def best_at(self, axis: str, x: float) -> float | None:
        """The best so far once `x` of `axis` was spent (beyond the run's end, its final best:
        `ended_by`); None before its first score."""
        found = None
        for step in self.curve:
            at = step.at(axis)
            if at is not None and at <= x:
                found = step.best
        return found

    def interval_text(self) -> str:
        """Its interval and what it is, as the table and the page show it; - without one."""
        if self.interval is None:
            return "-"
        return f"[{cell(self.interval[0])}, {cell(self.interval[1])}] ({self.interval_words})"

    def ended_by(self, axis: str, x: float) -> bool:
        """Whether the run had ended before `x` of `axis` was spent."""
        return bool(self.curve) and x > (self.curve[-1].at(axis) or 0.0) * (1 + 1e-9)


@dataclass(frozen=True)
class Method:
    """What the probability of improvement judges: one run with seeds, or the runs of one spec
    and experiment, and the scores that stand for it."""

    label: str
    runs: tuple[str, ...]  # its runs' labels
    scores: tuple[float, ...]
    basis: str  # where its scores come from, in words


@dataclass(frozen=True)
class Improvement:
    """P(`better` beats `than`): rliable's probability of improvement, with its interval."""

    better: str
    than: str
    chance: float
    interval: tuple[float, float]
    counts: tuple[int, int]  # the scores each side has


@dataclass(frozen=True)
class Comparison:
    """Several runs of one metric and mode, compared."""

    metric: str
    mode: str
    runs: tuple[ComparedRun, ...]
    methods: tuple[Method, ...]
    improvements: tuple[Improvement, ...]
    notes: tuple[str, ...] = field(default=())
    page: str | None = None  # where its HTML page was written, if it was

    def table(self) -> str:
        """What `tune_app compare` prints."""
        return render(self)

    def json(self) -> str:
        """What `tune_app compare --format json` prints: every field, as JSON."""
        return json.dumps(jsonable(asdict(self)), indent=2, allow_nan=False)  # strict JSON


# ---- the printed form --------------------------------------------------------------------


def render(c: Comparison) -> str:
    """The comparison as text: the runs, their staircases at a few points, the probabilities."""
    out = [f"comparing {len(c.runs)} runs by {c.metric} ({c.mode}):"]
    head: tuple[str, ...] = ("run", "scheduler", "trials", "best", "interval", "where")
    rows: list[tuple[str, ...]] = [
        (
            r.label,
            r.scheduler,
            str(r.trials) + ("" if r.finished else " (unfinished)"),
            cell(r.best),
            r.interval_text(),
            r.where,
        )
        for r in c.runs
    ]
    out += _columns(head, rows)
    for axis in AXES:
        if any(s.at(axis) is None for r in c.runs for s in r.curve):
            continue  # a run's rows carry no time
        out += ["", f"best so far against {AXIS_WORDS[axis]}:"]
        points = _points(c.runs, axis)
        head = ("run", *(_x(axis, x) for x in points), "at its end")
        rows = [
            (
                r.label,
                *(cell(r.best_at(axis, x)) + _mark(r) * r.ended_by(axis, x) for x in points),
                f"{cell(r.curve[-1].best)} at {_x(axis, r.curve[-1].at(axis) or 0)}"
                if r.curve
                else "-",
            )
            for r in c.runs
        ]
        out += _columns(head, rows)
        for mark, words in (("*", "the run had ended by then; its final best"), ("+", STOPPED)):
            if any(_mark(r) == mark and r.ended_by(axis, x) for r in c.runs for x in points):
                out.append(f"  {mark}: {words}")
    if c.improvements:
        out += [
            "",
            "probability of improvement, P(X beats Y) over their scores (rliable; "
            f"{CONFIDENCE:.0%} bootstrap interval):",
        ]
        for m in c.methods:
            if len(m.scores) >= MIN_SCORES:
                out.append(f"  {m.label}: {m.basis}")
        for i in c.improvements:
            low, high = i.interval
            out.append(
                f"  P({i.better} beats {i.than}) = {i.chance:.2f} [{low:.2f}, {high:.2f}] "
                f"({i.counts[0]} vs {i.counts[1]} scores)"
            )
    out += [f"note: {n}" for n in c.notes]
    return "\n".join(out)


def _points(runs: Sequence[ComparedRun], axis: str) -> list[float]:
    """Where the staircases are shown: 1, 2, 5, 10, ... trials up to the most any run ended;
    1/16, 1/8, ..., all of the most iterations or seconds any run spent (a run that ended
    before is shown with its final best, marked)."""
    most = max(((r.curve[-1].at(axis) or 0.0) for r in runs if r.curve), default=0.0)
    if axis == "trials":
        return [float(n) for n in budget.COMPACT if n < most] + [most]
    shares = [most / 2**k for k in (4, 3, 2, 1, 0)]
    if axis == "iterations":
        return sorted({float(round(x)) for x in shares if x >= 1})
    return sorted({x for x in shares if x > 0})


STOPPED = "the run stopped by then, not finished (interrupted or still running); its best so far"


def _mark(run: ComparedRun) -> str:
    """What marks a run's best beyond its end: * a finished run's, + one that stopped short."""
    return "*" if run.finished else "+"


def _x(axis: str, x: float) -> str:
    return f"{x:.3g}s" if axis == "seconds" else str(int(x))


def _columns(head: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(len(head))]
    return [
        "  " + "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
        for row in (head, *rows)
    ]
