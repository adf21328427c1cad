"""The records a run leaves and `analyze` reads: one `RunRecord` per experiment (run.json, how
it was run), one `TrialOutcome` per trial and one `RunSummary` per experiment (summary.json),
each written and read back as the same type. Ray-free and plan-free, so every reader can import
them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from tune_app import objectives, scoring
from tune_app.failures import Failure
from tune_app.objectives import Limit, Objective
from tune_app.rundir import noise, pareto, rungs
from tune_app.rundir.noise import DEFAULT_SELECT
from tune_app.rundir.rungs import RungCheck
from tune_app.scoring import DEFAULT_SCOPE
from tune_app.seeds import DEFAULT_AGGREGATE, Configuration, group

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
    trials: int
    how: str

    @classmethod
    def from_json(cls, data: Any) -> WarmStartRecord | None:
        if not isinstance(data, dict) or not isinstance(data.get("run"), str):
            return None
        return cls(data["run"], int(data.get("trials") or 0), str(data.get("how") or ""))


# How each kind of hand-over is said after "warm start: N trials from RUN".
WARM_HOW = {
    "evaluated": "told the searcher as evaluated, not run again",
    "first": "their configurations run first",
    "grid": "their grid points not run again",
}


# The JSON values each annotation of a record's field takes (its first alternative; `| None`
# takes null too). A value of another type, in a file written by hand or received from someone,
# reads as the field's default instead of reaching a reader that would trip on it.
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "bool": (bool,),
    "int": (int,),
    "float": (int, float),
    "dict": (dict,),
    "list": (list,),
    "tuple": (list, tuple),
}


def _typed(annotation: Any, value: Any) -> bool:
    """Whether `value` (from JSON) fits a field annotated `annotation` (a string here)."""
    text = str(annotation)
    if value is None:
        return text.replace(" ", "").endswith("|None")  # the field's own union, not an item's
    kinds = _JSON_TYPES.get(text.split(" |")[0].split("[")[0].strip())
    if kinds is None:
        return True  # a type of the app's own (Objective, Limit): read by its own from_json
    if isinstance(value, bool) and bool not in kinds:
        return False  # JSON's true is no number
    if isinstance(value, float) and not math.isfinite(value):
        return False  # the app writes no Infinity or NaN (null in their place)
    return isinstance(value, kinds)


def _ends(value: Any) -> tuple[tuple[float, float], ...] | None:
    """run.json's `trial_ends` as pairs of numbers; None where it is not a list of them."""
    try:
        return tuple((float(x), float(p)) for x, p in value)
    except (TypeError, ValueError):
        return None


def warm_start_line(runs: tuple[WarmStartRecord, ...] | list[WarmStartRecord]) -> str | None:
    """The line the summary, `analyze` and the report say a warm start with ("warm start: 12
    trials from results/e (told the searcher as evaluated, not run again)"); None without."""
    if not runs:
        return None
    each = "; ".join(f"{r.trials} trial{'s' * (r.trials != 1)} from {r.run}" for r in runs)
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
        known = {f.name: f for f in fields(cls)}
        kept: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known or value is None or not _typed(known[key].type, value):
                continue
            if key in ("stop", "versions", "layout", "sources") and not isinstance(value, dict):
                continue
            if key in ("seeds", "searched", "log_scaled", "command") and isinstance(value, list):
                value = tuple(value)
            if key == "trial_ends" and (value := _ends(value)) is None:
                continue
            kept[key] = value
        kept["objectives"], kept["constraints"] = objectives.from_json(data)
        warm = data.get("warm_start")
        runs = map(WarmStartRecord.from_json, warm if isinstance(warm, list) else [])
        kept["warm_start"] = tuple(r for r in runs if r is not None)
        return cls(**kept)


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
    def from_json(cls, data: dict[str, Any]) -> TrialOutcome:
        """A trial as summary.json holds it; keys an older file lacks take their defaults."""
        known = {f.name: (_JSON_NAMES.get(f.name, f.name), f.type) for f in fields(cls)}
        values = {
            name: data[key]
            for name, (key, annotation) in known.items()
            if key in data and _typed(annotation, data[key])
        }
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
        found: dict[str, int] = {}
        for t in self.trials:
            found[t.status] = found.get(t.status, 0) + 1
        return found

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
        def get(key: str, annotation: str, default: Any) -> Any:
            value = data.get(key)
            return value if value is not None and _typed(annotation, value) else default

        return cls(
            experiment=get("experiment", "str", ""),
            metric=get("metric", "str", None),
            mode=get("mode", "str", None),
            wall_time_s=float(get("wall_time_s", "float", 0.0)),
            trials=[
                TrialOutcome.from_json(t) for t in get("trials", "list", []) if isinstance(t, dict)
            ],
            missing=dict(get("missing", "dict", {})),
            unusable=dict(get("unusable", "dict", {})),
            reported=list(get("reported", "list", [])),
            interrupted=bool(data.get("interrupted")),
            notes=list(get("notes", "list", [])),
            scope=get("scope", "str", None) or DEFAULT_SCOPE,
            seeds=list(get("seeds", "list", [])),
            aggregate=get("aggregate", "str", None) or DEFAULT_AGGREGATE,
            objectives=list(objectives.from_json(data)[0]),
            constraints=list(objectives.from_json(data)[1]),
            select=get("select", "str", None) or DEFAULT_SELECT,
            early_stopping=[
                c
                for c in map(RungCheck.from_json, get("early_stopping", "list", []))
                if c is not None
            ],
        )


@dataclass(frozen=True)
class CloneEvent:
    """One exploit of population-based training: `trial_id` took `from_trial`'s checkpoint and
    config at their iterations, then `changed` the mutated keys (path -> [before, after])."""

    trial_id: str
    from_trial: str
    iteration: int  # the copying trial's iteration when it copied
    from_iteration: int  # the copied trial's iteration (its checkpoint's, at most)
    changed: dict[str, list[Any]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CloneEvent:
        return cls(
            trial_id=str(data.get("trial_id")),
            from_trial=str(data.get("from_trial")),
            iteration=int(data.get("iteration") or 0),
            from_iteration=int(data.get("from_iteration") or 0),
            changed={str(k): list(v) for k, v in (data.get("changed") or {}).items()},
        )


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
