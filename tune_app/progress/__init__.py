"""The compact progress of a run: one live line per experiment on a terminal, one plain line per
finished trial elsewhere (CI logs).

A Tune callback in each experiment's loop takes snapshots (trials done, running, pending,
errored; the best metric so far and its parameters, or with several objectives the Pareto
front's size and its best point on the first objective, as the summary's foot names it; elapsed
and remaining time, under early stopping by the scheduler's plan, `eta`) and hands them to the
view of the driver (`view`): directly when the experiment runs in the driver, through a small
Ray actor when experiments run side by side in their own tasks. The callback finds its view by
experiment name at run time, so a callback that Tune restores on resume finds the new one.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, Protocol

import ray
from ray import tune

from tune_app import eta, failures, objectives, scoring
from tune_app.divergence import diverged
from tune_app.failures import TrialFiles, failure_line
from tune_app.objectives import Limit, Objective
from tune_app.resources import amounts
from tune_app.rundir import pareto
from tune_app.rundir.layout import flatten
from tune_app.rundir.location import RunLocation
from tune_app.rundir.records import ENDED
from tune_app.scoring import finite
from tune_app.words import counted

SNAPSHOT_PERIOD_S = 0.5
# Trials waiting this long while fewer than the plan's trials at once run are said once: what
# they wait for, and what the cluster has free (the spec's other experiments or other work may
# hold the rest).
WAITING_S = 60.0


@dataclass(frozen=True)
class Snapshot:
    """Where one experiment stands."""

    experiment: str
    done: int = 0
    running: int = 0
    pending: int = 0
    errored: int = 0
    total: int | None = None  # trials the search will make, when known
    metric: str | None = None
    best: float | None = None
    best_params: str = ""
    elapsed_s: float = 0.0
    remaining_s: float | None = None
    budget_s: float | None = None  # the search's time budget (time_budget_s), when it has one
    # Several objectives: the front's size so far (None with one metric), and its point best on
    # the first objective, each objective's value by name (its parameters in `best_params`).
    front: int | None = None
    point: tuple[tuple[str, float], ...] = ()
    unknown_eta: bool = False  # trials are stopped early by no plan the time left can follow


class Sink(Protocol):
    def snapshot(self, snap: Snapshot) -> None: ...

    def line(self, text: str) -> None: ...


_SINKS: dict[str, Sink] = {}


def attach(experiment: str, sink: Sink | None) -> None:
    """Send `experiment`'s progress to `sink` (None: nowhere) in this process."""
    if sink is None:
        _SINKS.pop(experiment, None)
    else:
        _SINKS[experiment] = sink


class ProgressCallback(tune.Callback):
    """Takes snapshots of one experiment's trials for the view attached to its name."""

    plan: eta.Plan | None = None  # also a class default: one pickled before plans resumes as FIFO
    at_once: int | None = None  # the plan's trials at once (class defaults: as `plan`)
    beside: tuple[str, ...] = ()  # the spec's other experiments taking what its trials take
    _short_since: float | None = None  # since when fewer run while trials wait
    _said_waiting = False

    def __init__(
        self,
        experiment: str,
        metric: str | None,
        mode: str | None,
        searched: tuple[str, ...],
        iterations: int | None = None,
        scope: str = scoring.DEFAULT_SCOPE,
        folder: RunLocation | None = None,
        output: bool | str | tuple[str, str] = False,
        budget_s: float | None = None,
        several: tuple[Objective, ...] = (),
        constraints: tuple[Limit, ...] = (),
        plan: eta.Plan | None = None,
        at_once: int | None = None,
        beside: tuple[str, ...] = (),
    ) -> None:
        self.experiment, self.metric, self.mode = experiment, metric, mode
        self.objectives, self.constraints = several, constraints
        # trial id -> its last value of each key the objectives and constraints read
        self._lasts: dict[str, dict[str, float | None]] = {}
        self.folder = folder  # the run folder, to name a failed trial's files
        self.output = output  # the experiment's log_to_file: where trials keep their output
        self.budget_s = budget_s  # the search's time budget, when it has one
        self.scope = scope
        self._scores: dict[str, scoring.RunningScore] = {}  # trial id -> its score so far
        self.searched = searched
        self.iterations = iterations  # the stop bound on a trial's iterations, when there is one
        self.plan = plan  # how long trials run when the scheduler stops some early; None: no stop
        self.at_once, self.beside = at_once, beside
        self._total: int | None = None
        self._start = time.monotonic()
        self._last = 0.0
        # trial id -> (Tune's status, the status counted, iterations) of a trial that ended: it
        # changes no more, and a snapshot of a search of thousands reads it from here
        self._ended: dict[str, tuple[str, str, float]] = {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # One pickled before scores were kept as they run (a resumed run) kept every value.
        values = state.pop("_values", None)
        state["_ended"] = {}
        self.__dict__.update(state)
        if values is not None:
            self._scores = {}
            for trial_id, reported in values.items():
                running = self._scores[trial_id] = scoring.RunningScore(self.scope, self.mode)
                for value in reported:
                    running.add(value)

    def setup(  # type: ignore[override]  # Tune passes these as keywords
        self, total_num_samples: int | None = None, **info: Any
    ) -> None:
        self._start = time.monotonic()
        if total_num_samples is not None and total_num_samples < sys.maxsize:
            self._total = int(total_num_samples)

    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        flat = flatten(result, "/")
        if self.metric:
            running = self._scores.get(trial.trial_id)
            if running is None:
                running = self._scores[trial.trial_id] = scoring.RunningScore(self.scope, self.mode)
            running.add(flat.get(self.metric))
        lasts = self._lasts.setdefault(trial.trial_id, {})
        for key in objectives.limited_keys(self.objectives, self.constraints):
            if key in flat:
                lasts[key] = finite(flat[key])

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        self._send_due(trials)

    def _say_waiting(self, trials: list) -> None:
        """Once, trials that waited WAITING_S while fewer than the plan's at once ran: what each
        asks for (its placement group's sum) and what Ray has free of it."""
        waiting = [t for t in trials if t.status == "PENDING"]
        running = sum(t.status == "RUNNING" for t in trials)
        if self.at_once is None or not waiting or running >= self.at_once or self._said_waiting:
            self._short_since = None
            return
        now = time.monotonic()
        if self._short_since is None:
            self._short_since = now
        elif now - self._short_since >= WAITING_S:
            self._said_waiting = True
            need = waiting[0].placement_group_factory.required_resources
            free = ray.available_resources()
            others = ", ".join(self.beside)
            holders = (
                f"this spec's other experiments ({others}) or other work hold"
                if others
                else "other work holds"
            )
            self._line(
                f"{counted(len(waiting), 'trial')} waiting for {amounts(need)} each, "
                f"{running} of the {self.at_once} planned at once running: Ray has "
                f"{amounts({k: free.get(k, 0.0) for k in need})} free ({holders} the rest)"
            )

    def _send_due(self, trials: list) -> None:
        # A snapshot reads every trial: taken at most every SNAPSHOT_PERIOD_S, not at each
        # trial's end, or a search of thousands of short trials is quadratic in its trials.
        now = time.monotonic()
        if now - self._last >= SNAPSHOT_PERIOD_S:
            self._last = now
            self._send(trials)
            self._say_waiting(trials)

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        last = flatten(trial.last_result or {}, "/")
        params = _params(trial.config, self.searched)
        bad = diverged(last, self.metric or [o.name for o in self.objectives])
        if bad is not None:  # stopped for a NaN metric: failed, as the summary counts it
            self._line(f"trial {trial.trial_id} failed: {bad[0]} = {bad[1]}{params}")
        else:
            value = last.get(self.metric) if self.metric else None
            shown = f", {self.metric} = {value:.6g}" if finite(value) is not None else ""
            shown += "".join(
                f", {o.name} = {v:.6g}"
                for o in self.objectives
                if (v := finite(last.get(o.name))) is not None
            )
            iterations = last.get("training_iteration", 0)
            self._line(
                f"trial {trial.trial_id} done after {counted(iterations, 'iteration')}"
                f"{shown}{params}"
            )
        self._send_due(trials)

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        # One line per failure: the error, where in the user's code, and the trial's files (the
        # traceback is in its error file, and shown with -v).
        self._line(
            failure_line(
                f"[{self.experiment}] trial {trial.trial_id}",
                failures.of_trial(trial),
                _params(trial.config, self.searched),
                self._files(trial),
            )
        )
        self._send_due(trials)

    def _files(self, trial: Any) -> TrialFiles | None:
        """Where a failed trial's error file and output are, as a user names them."""
        name = getattr(getattr(trial, "storage", None), "trial_dir_name", None)
        if self.folder is None or not name:
            return None
        parent, files = self.folder.failed_trial_files(self.output)
        return TrialFiles(parent, name, files)

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        self._send(trials)

    def _line(self, text: str) -> None:
        sink = _SINKS.get(self.experiment)
        if sink is not None:
            sink.line(text if text.startswith("[") else f"[{self.experiment}] {text}")

    def _send(self, trials: list) -> None:
        sink = _SINKS.get(self.experiment)
        if sink is not None:
            sink.snapshot(self.snapshot(trials))

    def snapshot(self, trials: list) -> Snapshot:
        """Counts, the best so far and the time left, estimated from finished work."""
        counts = {"TERMINATED": 0, "RUNNING": 0, "ERROR": 0}
        ran = []  # each trial's iterations so far, and whether it ended
        for trial in trials:
            _, status, iterations = self._row(trial)
            counts[status] = counts.get(status, 0) + 1
            ran.append((iterations, trial.status in ENDED))
        best, best_trial = self._best(trials)
        total = max(self._total or 0, len(trials)) or None
        elapsed = time.monotonic() - self._start
        remaining = eta.seconds_left(elapsed, total, ran, self.plan, self.iterations)
        done, errored = counts["TERMINATED"], counts["ERROR"]
        front: int | None = None
        point: tuple[tuple[str, float], ...] = ()
        if self.objectives:  # no one best: the front so far, and its point best on the first
            front, point, best_trial = self._front(trials)
        return Snapshot(
            experiment=self.experiment,
            done=done,
            running=counts["RUNNING"],
            pending=(total or len(trials)) - done - errored - counts["RUNNING"],
            errored=errored,
            total=total,
            metric=self.metric,
            best=best,
            best_params=_params(best_trial.config if best_trial else {}, self.searched)[2:],
            elapsed_s=elapsed,
            remaining_s=remaining,
            budget_s=self.budget_s,
            front=front,
            point=point,
            unknown_eta=self.plan is not None and not self.plan.known,
        )

    def _row(self, trial: Any) -> tuple[str, str, float]:
        """Tune's status, the status counted (`_counted`) and the iterations so far: of an
        ended trial, kept from the first time it is read."""
        kept = self._ended.get(trial.trial_id)
        if kept is not None and kept[0] == trial.status:
            return kept
        last = flatten(trial.last_result or {}, "/")
        row = (
            str(trial.status),
            self._counted(trial.status, last),
            float(last.get("training_iteration") or 0),
        )
        if trial.status in ENDED:
            self._ended[trial.trial_id] = row
        return row

    def _counted(self, status: str, last: dict[str, Any]) -> str:
        """Tune's status, but ERROR for a trial stopped for a NaN metric, as the summary counts
        it."""
        ranked = self.metric or [o.name for o in self.objectives]
        return "ERROR" if status == "TERMINATED" and diverged(last, ranked) else str(status)

    def _best(self, trials: list) -> tuple[float | None, Any]:
        """The best score so far and its trial: failed trials rank after the others, and one
        that breaks a constraint is never best (as `records` ranks them)."""
        best, best_trial = None, None
        failed_best, failed_trial = None, None
        for trial in trials:
            running = self._scores.get(trial.trial_id)
            value = running.value if running is not None else None
            if value is None or self._judged(trial.trial_id).get("broken"):
                continue
            if self._row(trial)[1] == "ERROR":  # failed, or stopped for a NaN metric
                if scoring.better(value, failed_best, self.mode):
                    failed_best, failed_trial = value, trial
            elif scoring.better(value, best, self.mode):
                best, best_trial = value, trial
        return (best, best_trial) if best_trial is not None else (failed_best, failed_trial)

    def _judged(self, trial_id: str) -> dict[str, Any]:
        """A trial's objective values and broken constraints so far (`objectives.judged`)."""
        if not self.objectives and not self.constraints:
            return {}
        return objectives.judged(self.objectives, self.constraints, self._lasts.get(trial_id, {}))

    def _front(self, trials: list) -> tuple[int, tuple[tuple[str, float], ...], Any]:
        """The Pareto front of the trials so far (as `RunSummary.points` admits them: a value
        of every objective, not failed, every constraint kept): its size, its point best on the
        first objective (the one `best --pick FIRST` exports), and that trial."""
        points: dict[str, tuple[float, ...]] = {}
        by_id = {}
        for trial in trials:
            last = flatten(trial.last_result or {}, "/")
            judged = self._judged(trial.trial_id)
            values = [judged["objectives"].get(o.name) for o in self.objectives]
            failed = trial.status == "ERROR" or any(diverged(last, o.name) for o in self.objectives)
            if failed or judged["broken"] or any(v is None for v in values):
                continue
            points[trial.trial_id] = tuple(float(v) for v in values if v is not None)
            by_id[trial.trial_id] = trial
        if not points:
            return 0, (), None
        first = self.objectives[0].name
        chosen = pareto.pick(points, self.objectives, first, "progress")
        named = tuple((o.name, v) for o, v in zip(self.objectives, points[chosen], strict=True))
        return len(pareto.front(points, [o.mode for o in self.objectives])), named, by_id[chosen]


def _params(config: dict[str, Any], searched: tuple[str, ...]) -> str:
    flat = flatten(config or {})
    shown = [f"{k}={_short(flat[k])}" for k in searched if k in flat]
    return f", {', '.join(shown)}" if shown else ""


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
