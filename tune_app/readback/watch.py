"""`tune_app report [--watch]`: the report page written once, or kept current while the run lives.

A live page is rewritten whole (`report.write`: a temporary name, then a rename) at most every
`every` seconds, and reloads itself in the browser as often, so it needs no server. The run is
live while a process holds its folder's lock (`rundir.lock.writer_of`); once none does, the
page is written a last time without the reload and the loop returns. Ctrl-C raises
KeyboardInterrupt out of the loop, which the command line turns into exit 130; the page on disk
is then the last whole one written.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tune_app import eta
from tune_app.errors import TuneAppError
from tune_app.readback import importance, report
from tune_app.readback.plots import timeline
from tune_app.readback.report import LiveNote
from tune_app.rundir import read
from tune_app.rundir.lock import writer_of
from tune_app.rundir.read import ExperimentResults
from tune_app.rundir.records import UNFINISHED
from tune_app.rundir.storage import is_uri, local_path
from tune_app.words import counted

DEFAULT_EVERY_S = 10
MIN_EVERY_S = 2  # below this a page of many trials would be rewritten while the browser reads it

Experiments = list[ExperimentResults]


def page(folder: str, out: str | None, every: float | None = None) -> Path:
    """Write the report of the run(s) in `folder` to `out` (default: `report.html` beside the
    results, or here for a cloud run) and return its path; with `every`, keep it current while
    the run lives (`watch`) and return once the run has ended and the last page is written."""
    if every is not None and not (math.isfinite(every) and every >= MIN_EVERY_S):
        raise TuneAppError(f"--every must be at least {MIN_EVERY_S} seconds, got {every:g}")
    experiments = read.load(folder)
    # Named by the run read, which a folder of several runs chose (`RunLocation.open`).
    source = experiments[0].where if len(experiments) == 1 else str(folder)
    # Beside the results, or here when they are on cloud storage.
    path = report.page_path(
        Path(out or ("." if is_uri(source) else local_path(source))), "report.html", "--out"
    )
    if every is None:
        return report.write(experiments, path, source=source)
    if running(experiments):
        print(
            f"tune_app: {path} is rewritten every {every:g} s while the run lives; it ends with "
            "the run (Ctrl-C to stop)",
            file=sys.stderr,
            flush=True,
        )
    else:
        print(f"note: no process is writing {source}: the page is written once", file=sys.stderr)
    followers: read.Followers = {}  # while the run lives, its results read on, not again
    shown = importance.Kept()  # while it lives, importances again only as its trials grow
    # The runs read first, exactly (their run.json): not a later run of the experiment that
    # starts meanwhile, and without saying again which run a folder named.
    exact = [exp.run.record_where for exp in experiments]
    return watch(
        experiments,
        lambda live: [e for w in exact for e in read.load(w, followers if live else None)],
        lambda exps, live: report.write(
            exps, path, source=source, live=live, importances=shown if live else None
        ),
        every=every,
    )


def watch(
    experiments: Experiments,
    reread: Callable[[bool], Experiments],
    write: Callable[[Experiments, LiveNote | None], Path],
    *,
    every: float,
    is_live: Callable[[Experiments], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    stamp: Callable[[], str] = lambda: time.strftime("%H:%M:%S"),
    now: Callable[[], float] = time.time,
) -> Path:
    """Write the page of `experiments` (read once already, to know where the runs are) with a
    live note while `is_live` (default: `running`) holds, each write starting at least `every`
    seconds after the one before; then read them a last time, write the page without the note,
    and return its path. Liveness is asked before each read: a run that ends after the question
    is read whole the next time round, so the last page holds every result. `reread(live)`:
    the experiments again (while live, reading on from the last read where it can)."""
    alive = is_live or running
    while True:
        started = clock()
        live = alive(experiments)
        experiments = reread(live)
        path = write(experiments, note(experiments, every, stamp(), now()) if live else None)
        if not live:
            return path
        sleep(max(0.0, every - (clock() - started)))


def running(experiments: Experiments) -> bool:
    """A process holds the lock of one of the runs' folders: the run (or its resume) lives."""
    return any(writer_of(exp.run) is not None for exp in experiments)


def note(experiments: Experiments, every: float, updated: str, now: float) -> LiveNote:
    """The live line: when the page was written (`now`, unix time, `updated` as shown), the
    trials running and those done, and the time left."""
    trials = [t for exp in experiments for t in exp.trials]
    busy = sum(t.status == UNFINISHED for t in trials)
    running = sum(t.status == UNFINISHED and t.iterations > 0 for t in trials)  # reported
    pending = f"{busy - running} pending, " if busy > running else ""
    line = (
        f"live: updated {updated}; {counted(running, 'trial')} running, "
        f"{pending}{len(trials) - busy} done; {time_left(experiments, now)}"
    )
    return LiveNote(line=line, every_s=max(MIN_EVERY_S, round(every)))


def time_left(experiments: Experiments, now: float) -> str:
    """The time left, in words: the longest of the experiments' that have work left, each at
    its own rate so far (`eta.seconds_left`, as the progress line counts it, with the plan and
    the trial count run.json keeps); unknown where one has none to tell."""
    lefts = [_seconds_left(exp, now) for exp in experiments if _working(exp)]
    if not lefts:
        return "nothing left to run"
    known = [s for s in lefts if s is not None]
    if len(known) < len(lefts):
        plans = [exp.trial_ends for exp in experiments if _working(exp)]
        return eta.UNKNOWN if any(p == () for p in plans) else "time left unknown yet"
    return f"about {eta.clock(max(known))} left at the rate so far"


def _working(exp: ExperimentResults) -> bool:
    """Work left: a trial unfinished, or fewer trials than the run was to make."""
    ended = sum(t.status != UNFINISHED for t in exp.trials)
    return ended < max(exp.planned_trials, len(exp.trials))


def _seconds_left(exp: ExperimentResults, now: float) -> float | None:
    """One experiment's seconds left: its work done over the time since its first trial
    started (what its results' `logged_at` say), carried on; None where it cannot be told."""
    starts = [start for start, _ in timeline.wall_times(exp).values()]
    if not starts or not exp.planned_trials:
        return None
    ran = [(float(t.iterations), t.status != UNFINISHED) for t in exp.trials]
    plan = eta.Plan(exp.trial_ends) if exp.trial_ends is not None else None
    bound = exp.stop.get("training_iteration")
    total = max(exp.planned_trials, len(exp.trials))
    return eta.seconds_left(now - min(starts), total, ran, plan, int(bound) if bound else None)
