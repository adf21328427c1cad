"""What a run leaves beside Tune's own files: results.jsonl, summary.json, run.json, spec.yaml.

`results.jsonl` is written by a Tune callback on the driver, one JSON object per result, one
unbuffered write per line, so a killed run leaves only whole lines behind, but for a torn last
one that the next write cuts. A write that fails (a full disk) stops the run as Ctrl-C does
(`interrupts.stops_on_write_error`).
"""

from __future__ import annotations

import contextlib
import copy
import json
import numbers
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ray.tune import Callback, Stopper

from tune_app import failures, head
from tune_app.interrupts import stops_on_write_error
from tune_app.ray_internals.uploads import copy_trial_files_now
from tune_app.rundir.files import (
    append_line,
    cut_torn_tail,
    jsonable,
    open_append,
    read_rows,
    write_all,
    write_text,
)
from tune_app.rundir.layout import TUNE_TRIAL_LOGS, cut_trial_logs
from tune_app.rundir.location import RunLocation
from tune_app.rundir.stream import read_jsonl
from tune_app.scoring import number

MIRROR_PERIOD_S = 5.0  # how often the app's files are copied to cloud storage during a run
# Trials that fail alike before any trial reports end the search (`SameFailures`).
SAME_FAILURES = 3

# Result keys that repeat on every row without saying anything about the trial's progress.
_DROPPED = ("config", "hostname", "node_ip", "date", "done", "should_checkpoint")


# Experiment name -> where its run folder is now, only while `restoring` holds.
_RESTORING: dict[str, RunLocation] = {}


@contextlib.contextmanager
def restoring(experiment: str, folder: RunLocation) -> Iterator[None]:
    """While this holds (around `Tuner.restore`, which unpickles the run's callbacks), a callback
    of experiment `experiment` unpickled takes `folder` as its run folder: it holds the folder of
    the process that pickled it (a moved folder, another machine, a cloud run staged elsewhere).

    Scoped to the restore, not kept for the process: a map kept for the process sent the
    results.jsonl rows (and journal) of every later run in it of an experiment of the same name
    to the resumed run's folder, and the later run had none."""
    earlier = _RESTORING.get(experiment)
    _RESTORING[experiment] = folder
    try:
        yield
    finally:
        if earlier is None:
            _RESTORING.pop(experiment, None)
        else:
            _RESTORING[experiment] = earlier


def located(experiment: str, folder: RunLocation) -> RunLocation:
    """Where experiment `experiment`'s run folder is, for a callback being unpickled: the folder
    `restoring` gives while it holds, else the one the callback kept."""
    return _RESTORING.get(experiment, folder)


def _same(a: Any, b: Any) -> bool:
    """`a == b`, False where equality has no single answer (a numpy array in a config)."""
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


class PlainNumbers(Callback):
    """Makes a result's numbers ints and floats, in place, before the other callbacks see it (Tune
    lets a callback change it): a Decimal, a Fraction or a numpy float as a float, a complex
    number as its text (not a number: skipped, with a note, as text is). After its callbacks Tune
    takes the max and mean of every number in a result, and failed on a complex or a Decimal,
    ending the run (a resume failed again)."""

    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        plain_numbers(result)


def plain_numbers(result: dict[str, Any]) -> None:
    """`PlainNumbers`'s rewrite of `result` and the dicts in it."""
    for key, value in result.items():
        if isinstance(value, dict):
            plain_numbers(value)
        elif isinstance(value, numbers.Number) and not isinstance(value, numbers.Integral | float):
            found = number(value)
            result[key] = str(value) if found is None else found


class JsonlResults(Callback):
    """Appends every trial result to `results.jsonl`; a trial's config rides on its first line,
    and on the first line after PBT changes it.

    Safe to resume: on its first write in a process it cuts a torn last line (a killed run) and
    indexes what is there. A row is identified by (trial, training_iteration): a trial that
    reports an iteration already logged was restored from an older checkpoint (a resume, a
    retry, or a PBT exploit onto another trial's) and has its rows from that iteration on
    replaced, whatever config it runs with, so no iteration appears twice (`latest_results`
    reads a file the same way). Its rows before that iteration stay.
    """

    def __init__(self, folder: RunLocation, experiment: str = "") -> None:
        self._folder = folder  # mirrored to cloud storage when it has a URI
        self._experiment = experiment or folder.name
        self._mirrored = 0.0
        self._seen: set[str] = set()
        self._file: Any = None
        self._logged: dict[str, int] = {}  # trial id -> last iteration in the file
        self._configs: dict[str, Any] = {}  # trial id -> the config last written
        self._given: dict[str, Any] = {}  # trial id -> a copy of that config as Tune gave it
        self._failed = False  # a write failed: the file may end in a torn line, add nothing

    @property
    def path(self) -> Path:
        return self._folder.results

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A run begun when this callback kept a results path and a URI, resumed.
        if "_folder" not in state:
            state["_folder"] = RunLocation(Path(state.pop("_path")).parent, state.pop("_mirror_to"))
        state.setdefault("_experiment", state["_folder"].name)
        # Tune restores this callback from the run's pickle on resume, paths and all; a resume on
        # another machine (or of a moved folder) says where the files are now.
        state["_folder"] = located(state["_experiment"], state["_folder"])
        state.setdefault("_failed", False)
        state.setdefault("_given", {})
        self.__dict__.update(state)

    @stops_on_write_error
    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        if self._failed:  # the run is stopping; the next process cuts the torn line
            return
        if self._file is None:
            self._open()
        step = result.get("training_iteration")
        if isinstance(step, int) and self._logged.get(trial.trial_id, 0) >= step:
            # Whatever its config: a trial resumed from a state Tune saved before an exploit
            # that the file shows replays with its config from before the exploit, and a test
            # of the config took that replay for an exploit and logged its iteration twice.
            self._drop_from(trial.trial_id, step)
        row = {"trial_id": trial.trial_id, "logged_at": time.time()}
        row.update((k, v) for k, v in result.items() if k not in _DROPPED)
        if self._config_changed(trial):
            # On the first row, and again when PBT has changed it: a killed run is read back
            # with each trial's latest config.
            row["config"] = trial.config
        try:
            write_all(self._file, (json.dumps(jsonable(row), allow_nan=False) + "\n").encode())
        except OSError:
            self._failed = True
            self._close()
            raise
        if isinstance(step, int):
            self._logged[trial.trial_id] = step

    def _config_changed(self, trial: Any) -> bool:
        """Whether the trial's config is not the one its rows last wrote (none yet: changed),
        and if so, remember it as written. Compared as given first: writing a config as the file
        holds it costs a JSON round trip, more than the rest of a row."""
        given = self._given.get(trial.trial_id)
        if trial.trial_id in self._seen and given is not None and _same(given, trial.config):
            return False
        config = jsonable(trial.config)  # as results.jsonl holds it: tuples as lists, NaN null
        if trial.trial_id in self._seen and self._configs.get(trial.trial_id) == config:
            if given is None:  # the first result after a resume: the file's config, as given
                self._given[trial.trial_id] = copy.deepcopy(trial.config)
            return False  # (a config with no single equality, an array, takes this way each time)
        self._given[trial.trial_id] = copy.deepcopy(trial.config)
        self._seen.add(trial.trial_id)
        self._configs[trial.trial_id] = config
        return True

    def _open(self, rows: Iterable[dict[str, Any]] | None = None) -> None:
        """Open for appending, after indexing `rows`, the file's (None: its whole lines, a torn
        last one cut first)."""
        self._seen, self._logged, self._configs, self._given = set(), {}, {}, {}
        if rows is None:
            cut_torn_tail(self.path)
            rows = read_jsonl(self.path, [])  # a row at a time: a resumed file may be large
        for row in rows:
            self._index(row)
        self._file = open_append(self.path)

    def _index(self, row: dict[str, Any]) -> None:
        trial_id = str(row.get("trial_id"))
        if "config" in row:
            self._seen.add(trial_id)
            self._configs[trial_id] = row["config"]  # the latest in the file
        step = row.get("training_iteration")
        if isinstance(step, int):
            self._logged[trial_id] = max(self._logged.get(trial_id, 0), step)

    def _drop_from(self, trial_id: str, step: int) -> None:
        """Rewrite the file without `trial_id`'s rows from iteration `step` on (atomically)."""
        self._close()
        kept = [
            row
            for row in read_rows(self.path.read_bytes())
            if not (row.get("trial_id") == trial_id and row.get("training_iteration", 0) >= step)
        ]
        write_text(self.path, "".join(json.dumps(r, allow_nan=False) + "\n" for r in kept))
        self._open(kept)

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    @stops_on_write_error
    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._journal(trial, "TERMINATED")

    @stops_on_write_error
    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        head.lost_with_head()  # a trial killed with the head did not end: the run ends first
        self._journal(trial, "ERROR")

    def _journal(self, trial: Any, status: str) -> None:
        # An ended trial writes no more rows: its config is not kept for the rest of the run (an
        # RLlib trial's is tens of KB, held for every trial of a search of thousands).
        self._configs.pop(trial.trial_id, None)
        self._given.pop(trial.trial_id, None)
        # Tune saves its experiment state every 10 s or more (and never re-saves a paused trial
        # that a scheduler stops); a driver killed in between would resume a just-finished trial.
        # This journal, flushed at once, is the record of which trials ended and how.
        entry = {
            "trial_id": trial.trial_id,
            "status": status,
            "last_result": trial.last_result,
            "failures": trial.run_metadata.num_failures,  # this trial's, retried ones included
        }
        append_line(self._folder.finished, entry)

    @stops_on_write_error
    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        if self._folder.uri and time.monotonic() - self._mirrored >= MIRROR_PERIOD_S:
            self._mirror()

    @stops_on_write_error
    def on_checkpoint(  # type: ignore[override]  # Tune passes the checkpoint as a keyword
        self, iteration: int, trials: list, trial: Any, **info: Any
    ) -> None:
        # Tune's next saved state will restore this trial from this checkpoint: the rows up to
        # it must be in the cloud copy before, or a resume elsewhere would never see them.
        self._mirror()

    @stops_on_write_error
    def on_experiment_end(self, trials: list, **info: Any) -> None:
        self._close()
        self._mirror()

    def _mirror(self) -> None:
        """Copy the app's files to the cloud folder (`push`: nothing for a local one)."""
        self._mirrored = time.monotonic()
        self._folder.push()

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its run config for resume; an open file cannot travel.
        return {**self.__dict__, "_file": None, "_failed": False}


class TrialLogsFollowResults(Callback):
    """Keeps Tune's per-trial result.json and progress.csv to what results.jsonl holds: a trial
    reporting an iteration its logs already have (restored from an older checkpoint, or started
    over after a kill) has their lines from that iteration on cut first. Tune's JSON and CSV
    loggers append; this runs before them in the callback list. As a trial ends its logs are
    copied to a local run folder at once (`copy_trial_files_now`), not at Tune's next save."""

    def __init__(self) -> None:
        self._last: dict[str, int] = {}  # trial id -> its last iteration in this process

    @stops_on_write_error
    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        step = result.get("training_iteration")
        if not isinstance(step, int):
            return
        last = self._last.get(trial.trial_id)
        self._last[trial.trial_id] = step
        # Its logs may hold lines of a run before this one. (The step first: Tune builds
        # `local_path` anew at every call, which costs more than the rest of a result's check.)
        if (last is None or step <= last) and trial.local_path:
            cut_trial_logs(Path(trial.local_path), step)

    @stops_on_write_error
    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        copy_trial_files_now(trial, TUNE_TRIAL_LOGS)

    on_trial_error = on_trial_complete  # a trial that failed: its logs as well

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_last": {}}


class SameFailures(Callback, Stopper):
    """Ends a search whose first trials to end all failed alike (`failures.alike`) before any
    trial reported a result: a mistake in the trainable's set-up (a config key it reads and the
    spec lacks) that would fail every trial the same way, each after its start-up.

    `limit` trials (or all of them, if the search makes fewer) must fail so: at least
    SAME_FAILURES, and more than the spec's `expect.max_errored_trials`, so the run could not
    have passed once they had. A result, a trial that ends well or a failure unlike the first
    leaves the search alone for good. A callback (to see failures) and the stopper Tune asks
    whether to end the search: both lists must hold the same object."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.first: failures.Failure | None = None
        self.failed = 0  # trials failed alike so far
        self.watching = True  # nothing yet showed a trial can run
        self.ended = False
        self._total: int | None = None

    @classmethod
    def allowing(cls, max_errored_trials: int) -> SameFailures:
        return cls(max(SAME_FAILURES, max_errored_trials + 1))

    def setup(  # type: ignore[override]  # Tune passes these as keywords
        self, total_num_samples: int | None = None, **info: Any
    ) -> None:
        self._total = total_num_samples

    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        self.watching = False

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self.watching = False

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        if not self.watching:
            return
        failure = failures.of_trial(trial)
        if failure is None or (
            self.first is not None and failures.alike(failure) != failures.alike(self.first)
        ):
            self.watching = False
            return
        self.first = self.first or failure
        self.failed += 1
        total = self._total or len(trials)
        if self.failed >= min(self.limit, total):
            self.ended = True

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        return False  # ends no single trial

    def stop_all(self) -> bool:
        return self.ended

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles it for resume: a resumed search (its code fixed, maybe) is watched anew.
        return SameFailures(self.limit).__dict__
