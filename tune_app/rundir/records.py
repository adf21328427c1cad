"""The records a run leaves and `analyze` reads: one `RunRecord` per experiment (run.json, how
it was run), one `TrialOutcome` per trial and one `RunSummary` per experiment (summary.json),
a `CloneEvent` per line of clones.jsonl and a `TrialEnd` per line of the journal, each written
and read back as the same type. Each is read from JSON once, typed by its fields' annotations
(`record`): a file received from someone may hold anything. Ray-free and plan-free, so every
reader can import them.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from functools import cache
from types import UnionType
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

from tune_app import scoring
from tune_app.failures import Failure
from tune_app.objectives import MODES, Limit, Objective
from tune_app.rundir import noise, pareto, rungs
from tune_app.rundir.noise import DEFAULT_SELECT, SELECTS
from tune_app.rundir.rungs import RungCheck
from tune_app.scoring import DEFAULT_SCOPE
from tune_app.seeds import AGGREGATES, DEFAULT_AGGREGATE, Configuration, group
from tune_app.words import counted

FINISHED = "TERMINATED"
ERRORED = "ERROR"
UNFINISHED = "UNFINISHED"  # running or pending when the run stopped; a resume continues it
ENDED = (FINISHED, ERRORED)  # Tune's statuses of a trial that will run no more

# Attribute -> its key in summary.json, where the two differ (the file's names came first).
_JSON_NAMES = {"score": "metric", "folder": "path"}


@dataclass(frozen=True)
class WarmStartRecord:
    """One earlier run a warm-started run began from (`warm_start`): where it is, how many of
    its finished trials were handed over, and how (`methods.Searcher.warm`: evaluated, told the
    searcher as scored; first, run first; grid, their grid points skipped). Those trials are
    the earlier run's: never trials nor rows of the warm-started run."""

    run: str
    trials: int = 0
    how: str = ""


# How each kind of hand-over is said after "warm start: N trials from RUN".
WARM_HOW = {
    "evaluated": "told the searcher as evaluated, not run again",
    "first": "their configurations run first",
    "grid": "their grid points not run again",
}


# Fields whose text is one of a few words or a pattern, in whichever record: another text
# reads as not recorded, as a value of another type does.
_ALLOWED: dict[str, Callable[[str], bool]] = {
    "mode": MODES.__contains__,
    "aggregate": AGGREGATES.__contains__,
    "select": SELECTS.__contains__,
    "scope": scoring.is_scope,
    "status": (FINISHED, ERRORED, UNFINISHED).__contains__,
}
_BAD = object()
_R = TypeVar("_R")


def _read(hint: Any, value: Any) -> Any:  # noqa: C901 - one case per kind of type
    """`value` (from JSON) as a field of type `hint` holds it (a list as a tuple where it says
    tuple, a record of the app's as that record), or _BAD where it does not fit: every item of
    a list or a mapping is checked, and a list of records keeps those that fit. A file written
    by hand or received from someone may hold anything."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return value
    if origin in (Union, UnionType):
        either = (_read(alt, value) for alt in args)
        return next((v for v in either if v is not _BAD), _BAD)
    if value is None or hint is type(None):
        return value if hint is type(None) and value is None else _BAD
    if dict in (origin, hint):
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            return _BAD
        items = {k: _read(args[1] if args else Any, v) for k, v in value.items()}
        return _BAD if any(v is _BAD for v in items.values()) else items
    if origin in (list, tuple) or hint in (list, tuple):
        if not isinstance(value, list | tuple):
            return _BAD
        if len(args) == 2 and args[1] is Ellipsis or origin is list:  # items of one type
            found = [_read(args[0], v) for v in value]
            if is_dataclass(args[0]):  # records: those that fit
                found = [v for v in found if v is not _BAD]
        elif args and len(args) != len(value):
            return _BAD
        else:
            found = [_read(a, v) for a, v in zip(args, value, strict=True)] if args else list(value)
        if any(v is _BAD for v in found):
            return _BAD
        return tuple(found) if tuple in (origin, hint) else found
    if isinstance(hint, type) and is_dataclass(hint):
        made = hint.from_json(value) if hasattr(hint, "from_json") else record(hint, value)
        return _BAD if made is None else made
    if isinstance(value, bool) and hint is not bool:
        return _BAD  # JSON's true is no number
    if hint is float:
        # The app writes no Infinity or NaN (null in their place), nor an int past a float.
        fits = isinstance(value, int | float) and abs(value) <= sys.float_info.max
        return value if fits else _BAD
    return value if isinstance(hint, type) and isinstance(value, hint) else _BAD


_hints = cache(get_type_hints)


def _fields(cls: type, data: dict[str, Any], names: dict[str, str] | None = None) -> dict[str, Any]:
    """The fields of `cls` that JSON object `data` holds (under `names`' keys, where they
    differ), each as its type holds it (`_read`) and, where it is one of a few words
    (`_ALLOWED`), one of them; a field holding anything else is left out (its default)."""
    kept = {}
    for f in fields(cls):
        key = (names or {}).get(f.name, f.name)
        value: Any = _read(_hints(cls)[f.name], data[key]) if key in data else _BAD
        allowed = _ALLOWED.get(f.name)
        if value is not _BAD and (value is None or allowed is None or allowed(value)):
            kept[f.name] = value
    return kept


def record(cls: type[_R], data: Any) -> _R | None:
    """A record of dataclass `cls` from a JSON object (a line of clones.jsonl, an item of a
    list in run.json): None where it is no object, a field it holds does not fit, or it lacks
    a field that has no default. Keys of no field are left out."""
    if not isinstance(data, dict):
        return None
    kept = _fields(cls, data)
    for f in fields(cls):  # type: ignore[arg-type]  # a dataclass, by contract
        needed = f.default is MISSING and f.default_factory is MISSING
        if f.name not in kept and (f.name in data or needed):
            return None
    return cls(**kept)


def warm_start_line(runs: tuple[WarmStartRecord, ...] | list[WarmStartRecord]) -> str | None:
    """The line the summary, `analyze` and the report say a warm start with ("warm start: 12
    trials from results/e (told the searcher as evaluated, not run again)"); None without."""
    if not runs:
        return None
    each = "; ".join(f"{counted(r.trials, 'trial')} from {r.run}" for r in runs)
    return f"warm start: {each} ({WARM_HOW.get(runs[0].how, runs[0].how)})"


@dataclass(frozen=True)
class RunRecord:
    """run.json: how an experiment was run, and what reading its results needs without the spec
    (metric, mode, searched keys, scheduler, stop). A field an older run.json lacks reads as its
    default (None: not recorded), so readers fall back on summary.json or the results."""

    experiment: str = ""
    spec_file: str = ""  # the spec file's absolute path (`<dict>` for a spec given as data)
    smoke: bool = False
    trainable: str = ""
    metric: str | None = None
    mode: str | None = None
    scope: str | None = None
    seeds: tuple[int, ...] = ()
    aggregate: str | None = None
    select: str | None = None  # what ranks configurations over seeds: aggregate or lcb
    searched: tuple[str, ...] = ()
    # Searched path -> where the spec wrote it, where they differ (`Experiment.written_at`).
    written_at: dict[str, str] = field(default_factory=dict)
    log_scaled: tuple[str, ...] | None = None
    scheduler: str | None = None
    # ASHA's and HyperBand's (BOHB's) share kept at each rung is 1 / reduction_factor.
    reduction_factor: float | None = None
    stop: dict[str, Any] = field(default_factory=dict)
    time_budget_s: float | None = None  # the search's time limit, if any
    result_timeout_s: float | None = None  # a trial silent this long failed, if set
    trials: int = 0
    # How long its trials run under a scheduler that stops some early (`eta.Plan`'s lengths:
    # each (iterations a trial ends at, its probability); () where the scheduler has no plan in
    # iterations); None where none is stopped early, or the file predates it.
    trial_ends: tuple[tuple[float, float], ...] | None = None
    # The sampling layout the app chose (config keys it set, and its line); {} and "" where it
    # chose none or the file predates it.
    layout: dict[str, Any] = field(default_factory=dict)
    layout_line: str = ""
    command: tuple[str, ...] = ()
    cwd: str = ""
    started: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    # The code it ran (`tune_app.sources`): user module file -> digest, and the app's own
    # digest; {} and "" where the file predates them.
    sources: dict[str, str] = field(default_factory=dict)
    app_code: str = ""
    # Several objectives and the constraints a best trial keeps; () where none or the file
    # predates them.
    objectives: tuple[Objective, ...] = ()
    constraints: tuple[Limit, ...] = ()
    # The earlier runs a warm start began from; () without one or where the file predates it.
    warm_start: tuple[WarmStartRecord, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        return cls(**_fields(cls, data))


@dataclass
class TrialOutcome:
    """One trial as the run ended it, or as its files tell it after a kill."""

    trial_id: str
    status: str  # TERMINATED, ERROR or UNFINISHED
    config: dict[str, Any]  # the trial's config, cut to the keys the spec wrote
    score: float | None  # what ranks it: the metric under the experiment's scope (scoring)
    iterations: int
    folder: str | None = None  # the trial's folder, relative to the experiment's
    error: str | None = None  # the first lines of its last error
    time_total_s: float = 0.0
    values: dict[str, float | None] = field(default_factory=dict)  # expect's keys
    cause: str | None = None  # what failed it: an exception type, "killed", "out of memory", ...
    failures: int = 0  # failures Tune saw, retried ones included
    params: dict[str, Any] = field(default_factory=dict)  # searched key path -> value
    last: float | None = None  # the metric's last value (None when it was not finite)
    best: float | None = None  # the metric's best value over the trial's iterations
    stopped_early: bool = False  # ended by the scheduler before its stop criteria or peers
    frame: str | None = None  # where in the user's code it failed: `my_train.py:14`
    # Several objectives: each one's last value, by name; {} with one metric.
    objectives: dict[str, float | None] = field(default_factory=dict)
    broken: list[str] = field(default_factory=list)  # the constraints it broke, in words

    @property
    def failure(self) -> Failure | None:
        return Failure(self.cause, self.error or "", self.frame) if self.cause else None

    def to_json(self) -> dict[str, Any]:
        return {_JSON_NAMES.get(f.name, f.name): getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Any) -> TrialOutcome | None:
        """A trial as summary.json holds it; keys an older file lacks take their defaults.
        None where it is no JSON object."""
        if not isinstance(data, dict):
            return None
        values = _fields(cls, data, _JSON_NAMES)
        values.setdefault("trial_id", "?")
        values.setdefault("status", UNFINISHED)
        values.setdefault("config", {})
        values.setdefault("score", None)
        values.setdefault("iterations", 0)
        return cls(**values)


@dataclass
class RunSummary:
    """What one experiment ended with; written as summary.json, read back by `analyze`."""

    experiment: str
    metric: str | None
    mode: str | None
    wall_time_s: float
    trials: list[TrialOutcome] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # spec key path -> key never reported
    # Spec key path -> what a key held in place of a number, in every result that held it
    # ("a string ('0.93') by trial abc_00001").
    unusable: dict[str, str] = field(default_factory=dict)
    reported: list[str] = field(default_factory=list)  # every result key any trial reported
    interrupted: bool = False  # trials left unfinished (Ctrl-C): resumable
    notes: list[str] = field(default_factory=list)  # what the run could not judge, and why
    scope: str = DEFAULT_SCOPE  # which value of the metric ranks a trial
    seeds: list[int] = field(default_factory=list)  # the seeds axis; empty without one
    aggregate: str = DEFAULT_AGGREGATE  # how a configuration's seeds are judged
    objectives: list[Objective] = field(default_factory=list)  # several; [] with one metric
    constraints: list[Limit] = field(default_factory=list)  # what a best trial keeps
    select: str = DEFAULT_SELECT  # what ranks configurations: their aggregate, or lcb
    # ASHA's and HyperBand's rungs: did their scores predict the final ones (tune_app.rundir.rungs)
    early_stopping: list[RungCheck] = field(default_factory=list)

    def points(self) -> dict[str, tuple[float, ...]]:
        """Each trial that may be on the front (several objectives): finished or stopped, a
        value of every objective, every constraint kept; trial id -> its values in order."""
        found: dict[str, tuple[float, ...]] = {}
        for t in self.trials:
            values = [t.objectives.get(o.name) for o in self.objectives]
            if t.status == ERRORED or t.broken or any(v is None for v in values):
                continue
            found[t.trial_id] = tuple(float(v) for v in values if v is not None)
        return found

    def pareto(self) -> list[str]:
        """The ids of the trials on the Pareto front of the objectives; [] with one metric."""
        if not self.objectives:
            return []
        return pareto.front(self.points(), [o.mode for o in self.objectives])

    def configurations(self) -> list[Configuration]:
        """With seeds: the configurations, each with its seeds' trials, their aggregate score
        and interval, its chance of being the best and its bound, best first (by the bound
        under `select: lcb`). Without seeds: none."""
        if not self.seeds:
            return []
        found = group(self.trials, self.aggregate, self.mode, expected=len(self.seeds))
        return noise.judged(found, self.aggregate, self.mode, self.select)

    def __repr__(self) -> str:
        """Short, as a notebook shows it (the fields hold every trial and every reported key):
        the experiment, its trials by status, its best trial or front."""
        counts = ", ".join(f"{n} {status.lower()}" for status, n in self.counts.items())
        best = self.best
        if self.objectives:
            found = f"a front of {len(self.pareto())} trials"
        elif best is not None and best.score is not None:
            found = f"best {self.metric} = {best.score:.6g} (trial {best.trial_id})"
        else:
            found = "no best trial"
        stopped = ", interrupted" if self.interrupted else ""
        return f"RunSummary({self.experiment!r}: {counts or 'no trials'}{stopped}; {found})"

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(t.status for t in self.trials))  # in the order first seen

    @property
    def errored(self) -> int:
        return self.counts.get(ERRORED, 0)

    def ranked(self) -> list[TrialOutcome]:
        """Trials best first by their score; trials without one last, in their order."""
        return ranked(self.trials, self.mode)

    @property
    def best(self) -> TrialOutcome | None:
        """The trial with the best score; with seeds, the best-scored trial of the best
        configuration (by its seeds' aggregate), so every reader names the same winner. None
        without a mode or a scored trial, and with several objectives (their answer is the
        front, `pareto`). A trial that broke a constraint is never best."""
        if self.mode is None or self.objectives:
            return None
        top = self.ranked()
        if self.seeds:
            configs = self.configurations()
            if not configs or configs[0].score is None:
                return None
            members = set(configs[0].trial_ids)
            top = [t for t in top if t.trial_id in members]
        return top[0] if top and top[0].score is not None and not top[0].broken else None

    @property
    def failed(self) -> dict[str, list[str]]:
        """Cause -> ids of the trials it failed, the largest group first."""
        return {cause: [t.trial_id for t in group] for cause, group in self.by_cause().items()}

    def by_cause(self) -> dict[str, list[TrialOutcome]]:
        """Failed trials grouped by cause, the largest group first."""
        groups: dict[str, list[TrialOutcome]] = {}
        for t in self.trials:
            if t.cause:
                groups.setdefault(t.cause, []).append(t)
        return dict(sorted(groups.items(), key=lambda item: -len(item[1])))

    def to_json(self) -> dict[str, Any]:
        """summary.json's content: the fields, plus the counts, best and failures they imply."""
        best = self.best
        return {
            "experiment": self.experiment,
            "metric": self.metric,
            "mode": self.mode,
            "scope": self.scope,
            "wall_time_s": self.wall_time_s,
            "counts": self.counts,
            "best": best.to_json() if best else None,
            "trials": [t.to_json() for t in self.trials],
            "missing": self.missing,
            "unusable": self.unusable,
            "reported": self.reported,
            "interrupted": self.interrupted,
            "failed": self.failed,
            "notes": self.notes,
            "seeds": self.seeds,
            "aggregate": self.aggregate,
            "select": self.select,
            "early_stopping": [
                {**asdict(c), "bound": rungs.BOUND, "predicts": c.predicts}
                for c in self.early_stopping
            ],
            "configurations": [asdict(c) for c in self.configurations()],
            "objectives": [asdict(o) for o in self.objectives],
            "constraints": [asdict(c) for c in self.constraints],
            "pareto": self.pareto(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSummary:
        given = {"experiment": "", "metric": None, "mode": None, "wall_time_s": 0.0}
        return cls(**(given | _fields(cls, data)))


@dataclass(frozen=True)
class CloneEvent:
    """One exploit of population-based training: `trial_id` took `from_trial`'s checkpoint and
    config at their iterations, then `changed` the mutated keys (path -> [before, after])."""

    trial_id: str
    from_trial: str
    # An older release's line may lack the iterations: 0, as it read them
    iteration: int = 0  # the copying trial's iteration when it copied
    from_iteration: int = 0  # the copied trial's iteration (its checkpoint's, at most)
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class TrialEnd:
    """A line of the journal of ended trials (finished.jsonl): a trial Tune ended, how, its
    last result, and the failures Tune had counted by then."""

    trial_id: str
    status: str = FINISHED  # the first journal's lines had none: each was a trial that ended
    last_result: dict[str, Any] | None = None
    failures: int = 0


def ranked(trials: list[TrialOutcome], mode: str | None) -> list[TrialOutcome]:
    """Trials best first by their score under `mode`; failed trials (a crash, a metric turned
    NaN) and trials that broke a constraint after the others, so a run that diverged is not
    best for what it scored before; trials without a score last. Equal scores go in the order
    Tune created the trials (their ids), so a run read back from its files names the same best
    trial as the run that wrote them, whatever order it lists them in."""
    sign = -1.0 if mode == "max" else 1.0
    return sorted(
        trials,
        key=lambda t: (
            t.score is None,
            t.status == ERRORED or bool(t.broken),
            sign * t.score if t.score is not None else 0.0,
            t.trial_id if t.score is not None else "",
        ),
    )


def best_value(values: Sequence[float | None], mode: str | None) -> float | None:
    """The best finite value of a trial's metric under `mode`: its score over all values, so
    "best" means here what it means in ranking (no mode: the highest)."""
    return scoring.score(values, "all", mode)


def last_value(values: list[Any]) -> float | None:
    """The metric's last reported value; None when it was not finite (a diverged trial)."""
    return scoring.finite(values[-1]) if values else None


def stopped_early(
    scheduler: str,
    status: str,
    iterations: int,
    most: int,
    last_row: dict[str, Any],
    stop: dict[str, Any],
    stopped_by_tune: bool = True,
) -> bool:
    """Ended by the scheduler: finished with fewer iterations than its longest peer, its stop
    criteria unmet, and stopped by Tune's own trial stop (`stopped_by_tune`: its end is in the
    journal, `layout.journaled_ends`), not by the run's end (`fail_fast`, `time_budget_s`),
    which stops every live trial wherever it is. FIFO never stops a trial early."""
    reached = any(
        isinstance(last_row.get(k), int | float) and last_row[k] >= v for k, v in stop.items()
    )
    return (
        scheduler != "fifo"
        and status == FINISHED
        and stopped_by_tune
        and iterations < most
        and not reached
    )
