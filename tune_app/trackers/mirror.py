"""A tracker fed off the driver's critical path, holding what results.jsonl holds.

The driver only puts events (a trial started, reported, ended) on a bounded queue and never
waits: one worker thread per tracker drives the tracker's `Sink`. A frozen tracker server fills
the queue; what does not fit is dropped (one warning), and the end of the experiment waits for
the worker at most `DRAIN_S` seconds in all. A tracker that fails is one warning and is left
alone for the rest of the run.

What a tracker holds follows results.jsonl's own rule (`latest_results`): a trial reporting an
iteration it already has (restored from an older checkpoint, or started over after a kill) has
its run rewritten from results.jsonl, so the first attempt's values do not stay beside the
second's. When the experiment ends, every trial of results.jsonl is checked once more, so
results a killed run wrote but never sent, and results dropped from a full queue while the
tracker was slow, are sent. Ray-free: tests drive it with any sink.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tune_app.errors import MAX_PART_CHARS, clip, error_line
from tune_app.rundir.files import read_rows
from tune_app.rundir.layout import latest_results
from tune_app.rundir.write import read_run_record
from tune_app.trackers import naming

if TYPE_CHECKING:
    from tune_app.plan.types import ExperimentPlan
    from tune_app.rundir.records import RunSummary

# Events waiting for a tracker before new ones are dropped (and sent at the experiment's end).
CAPACITY = 10_000
# The longest the end of an experiment waits for a tracker to take what is queued: the most a
# slow or frozen tracker can add to a search. TUNE_APP_TRACKER_DRAIN_S sets it.
DRAIN_S = 30.0

_WARNED: set[str] = set()  # trackers that warned in this process: one warning each


def warn(tracker: str, what: str) -> None:
    """One line on stderr per tracker per process: the run goes on, its own files complete."""
    if tracker in _WARNED:
        return
    _WARNED.add(tracker)
    print(
        f"warning: the {tracker} tracker {what}; the run goes on and its own files "
        "(results.jsonl, summary.json, TensorBoard) are complete",
        file=sys.stderr,
        flush=True,
    )


@dataclass(frozen=True)
class Row:
    """One result as a tracker logs it: its iteration, its x axis, its numbers."""

    iteration: int
    step: int
    metrics: dict[str, float]

    @classmethod
    def of(cls, result: dict[str, Any]) -> Row | None:
        """A result's row, or None for one without an iteration (nothing to place it at)."""
        done = result.get(naming.ITERATION)
        if not isinstance(done, int) or isinstance(done, bool):
            return None
        return cls(done, naming.step(result), naming.metrics(result))


@dataclass(frozen=True)
class Target:
    """What a tracker logs for one experiment's run, as plain data and paths."""

    experiment: str
    naming: naming.Naming
    key: str  # this run of the experiment (its folder and start), the same after a resume
    results: Path  # results.jsonl: what every tracker must end up holding
    spec: Path  # the spec as run
    summary: Path  # summary.json


class Sink(Protocol):
    """One tracker's runs, one per trial. Called from one worker thread only."""

    name: str  # as warnings name it: "MLflow", "W&B"

    def connect(self) -> None:
        """Reach the tracker and find or make this experiment's place there."""

    def open(self, trial_id: str, config: dict[str, Any]) -> list[int]:
        """The trial's run, made if new: the iterations it holds, in order."""

    def log(self, trial_id: str, rows: list[Row]) -> None:
        """Append rows to the trial's run."""

    def restart(self, trial_id: str, config: dict[str, Any], rows: list[Row]) -> None:
        """Make the trial's run hold exactly `rows`, whatever it held before."""

    def close(self, trial_id: str, failed: bool, local_path: str | None) -> None:
        """The trial ended (it may be retried and go on)."""

    def finish(self, summary: RunSummary) -> None:
        """After summary.json is written: final statuses, the spec and summary."""

    def shutdown(self) -> None:
        """Release what the sink holds (W&B's runs, flushed)."""


_STOP = ("stop",)


@dataclass
class _Truth:
    """results.jsonl read back, per trial: its rows as the file means them and its config."""

    rows: dict[str, list[Row]] = field(default_factory=dict)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)


class Mirror:
    """One tracker's worker: a bounded queue the driver puts events on, and the thread that
    hands them to the sink."""

    def __init__(self, sink: Sink, results: Path, capacity: int = CAPACITY) -> None:
        self.sink = sink
        self.results = results
        self.queue: queue.Queue[tuple[Any, ...]] = queue.Queue(capacity)
        self.held: dict[str, list[int]] = {}  # trial id -> iterations its run holds
        self.checked: set[str] = set()  # trials compared with results.jsonl in this process
        self.failed = False  # the tracker failed: nothing more is sent
        self.dropped = 0  # events that found the queue full
        self._truth: tuple[tuple[int, int], _Truth] | None = None
        self._reconcile = False
        self._summary: RunSummary | None = None
        self._thread = threading.Thread(target=self._work, name=f"{sink.name} tracker", daemon=True)
        self._thread.start()

    # ---- the driver's side: never waits, except `stop` (bounded) ----

    def submit(self, *event: Any) -> None:
        if self.failed:
            return
        try:
            self.queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1
            warn(
                self.sink.name,
                f"is not keeping up ({self.queue.maxsize} results waiting): later results "
                "are sent when the experiment ends",
            )

    def start(self, trial_id: str, config: dict[str, Any]) -> None:
        self.submit("start", trial_id, dict(config))

    def result(self, trial_id: str, config: dict[str, Any], result: dict[str, Any]) -> None:
        row = Row.of(result)
        if row is not None:
            self.submit("result", trial_id, config, row)

    def end(self, trial_id: str, failed: bool, local_path: str | None) -> None:
        self.submit("end", trial_id, failed, local_path)

    def reconcile(self) -> None:
        """Check every trial of results.jsonl against the tracker once what is queued is sent
        (the experiment ended). Never dropped: it is done when the worker stops."""
        self._reconcile = True

    def finish(self, summary: RunSummary) -> None:
        """Record the summary (final statuses) when the worker stops, after `reconcile`."""
        self._summary = summary

    def stop(self, timeout: float | None = None) -> bool:
        """Let the worker take what is queued and end, waiting at most `timeout` seconds (default
        DRAIN_S); True when it did. A tracker still busy then is left behind, with a warning."""
        budget = drain_s() if timeout is None else timeout
        deadline = time.monotonic() + budget
        with contextlib.suppress(queue.Full):
            self.queue.put(_STOP, timeout=budget)
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            warn(self.sink.name, f"did not answer within {budget:g} s and was left behind")
            return False
        return True

    # ---- the worker's side ----

    def _work(self) -> None:
        try:
            self.sink.connect()
        except Exception as err:  # a tracker's failure must not fail a trial or the run
            self._fail(err)
        while True:
            event = self.queue.get()
            if event is _STOP:
                self._end()
                break
            if self.failed:
                continue
            try:
                getattr(self, "_on_" + event[0])(*event[1:])
            except Exception as err:
                self._fail(err)
        try:
            self.sink.shutdown()
        except Exception as err:
            self._fail(err)

    def _fail(self, err: BaseException) -> None:
        self.failed = True
        # Both ends kept: what a tracker says to do often ends its message (MLflow's opt-in).
        warn(self.sink.name, f"failed ({clip(error_line(err), MAX_PART_CHARS)})")

    def _known(self, trial_id: str, config: dict[str, Any]) -> list[int]:
        if trial_id not in self.held:
            self.held[trial_id] = list(self.sink.open(trial_id, config))
        return self.held[trial_id]

    def _on_start(self, trial_id: str, config: dict[str, Any]) -> None:
        self._known(trial_id, config)

    def _on_result(self, trial_id: str, config: dict[str, Any], row: Row) -> None:
        held = self._known(trial_id, config)
        first = trial_id not in self.checked
        self.checked.add(trial_id)
        # A trial's first result in this process may follow results a killed run wrote but never
        # sent; a result at an iteration the run holds means the trial went back (a restore).
        if (first and (held or row.iteration > 1)) or (held and held[-1] >= row.iteration):
            before = [r for r in self._read().rows.get(trial_id, []) if r.iteration < row.iteration]
            self._match(trial_id, config, before)
        self.sink.log(trial_id, [row])
        self.held[trial_id].append(row.iteration)

    def _on_end(self, trial_id: str, failed: bool, local_path: str | None) -> None:
        if trial_id in self.held:
            self.sink.close(trial_id, failed, local_path)

    def _end(self) -> None:
        try:
            if self._reconcile and not self.failed:
                self._on_reconcile()
            if self._summary is not None and not self.failed:
                self.sink.finish(self._summary)
        except Exception as err:
            self._fail(err)

    def _on_reconcile(self) -> None:
        truth = self._read()
        for trial_id, rows in truth.rows.items():
            config = truth.configs.get(trial_id, {})
            held = self._known(trial_id, config)
            if held != [r.iteration for r in rows]:
                self._match(trial_id, config, rows)
            self.checked.add(trial_id)

    def _match(self, trial_id: str, config: dict[str, Any], rows: list[Row]) -> None:
        """Make the trial's run hold `rows`: the missing ones appended where the run holds a
        beginning of them, else the run rewritten."""
        held, wanted = self.held[trial_id], [r.iteration for r in rows]
        if wanted[: len(held)] == held:
            if len(wanted) > len(held):
                self.sink.log(trial_id, rows[len(held) :])
        else:
            self.sink.restart(trial_id, config, rows)
        self.held[trial_id] = wanted

    def _read(self) -> _Truth:
        """results.jsonl as its readers mean it, read again only when it changed."""
        try:
            stat = self.results.stat()
        except FileNotFoundError:
            return _Truth()
        stamp = (stat.st_size, stat.st_mtime_ns)
        if self._truth is not None and self._truth[0] == stamp:
            return self._truth[1]
        raw = read_rows(self.results.read_bytes())
        truth = _Truth()
        for one in raw:  # a trial's config rides on its first line (and after PBT changes it)
            if isinstance(one.get("config"), dict):
                truth.configs[str(one.get("trial_id"))] = one["config"]
        for one in latest_results(raw):
            row = Row.of(one)
            if row is not None:
                truth.rows.setdefault(str(one.get("trial_id")), []).append(row)
        self._truth = (stamp, truth)
        return truth


def drain_s() -> float:
    try:
        return max(0.0, float(os.environ.get("TUNE_APP_TRACKER_DRAIN_S", DRAIN_S)))
    except ValueError:
        return DRAIN_S


# The live mirror of each (tracker, experiment) in this process: `finish` queues the summary
# behind the trials' results and ends it.
LIVE: dict[tuple[str, str], Mirror] = {}


def target_of(ep: ExperimentPlan) -> Target:
    """What a tracker logs for `ep`'s run, with its run folder where it is in this process."""
    record = read_run_record(ep.folder)
    return Target(
        experiment=ep.name,
        naming=naming.Naming.of(ep, record.spec_file),
        key=f"{ep.folder.where}@{record.started}",
        results=ep.folder.results,
        spec=ep.folder.spec,
        summary=ep.folder.summary,
    )


def mirror_for(sink: str, options: Any, target: Target) -> Mirror:
    """A started mirror of the sink class at `sink` ("module:Class"), built with (options,
    target)."""
    module, _, name = sink.partition(":")
    cls = getattr(importlib.import_module(module), name)
    return Mirror(cls(options, target), target.results)
