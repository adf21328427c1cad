"""The Python API, and the one way a run is done: `tune_app.run(spec)` runs a spec and
`tune_app.resume(folder)` continues an interrupted run, as `tune_app run` and `tune_app resume`
do (the CLI calls them), and return what they ended with; `tune_app.load(folder)` reads a run back
as `tune_app analyze` does, as a DataFrame.

Bad input raises the CLI's errors (`SpecError`, `SpecErrors`: `TuneAppError`s) before Ray
starts; a failed trial is not an exception but shows in the result (`passed`, `exit_code`). A
write of the run's files that failed (a full disk) stops the run as Ctrl-C does and raises
`StorageError`, which says how to resume it and carries the result so far (`result`); Tune's own
loop failing, or its Ray head lost, raises `TuneFailure` the same way.

The rest of the API is given out here from where it is done: `validate` (`plan.validate`), and
`read`, `load`, `compare` and `best_checkpoint` (`readback.loading`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from tune_app.command import resume_command
from tune_app.errors import RunStopped, SpecError, TuneAppError
from tune_app.plan.validate import SpecSource, plan_of, validate
from tune_app.readback.loading import (
    BestCheckpoint,
    PartlyRead,
    best_checkpoint,
    compare,
    load,
    read,
)

if TYPE_CHECKING:
    import pandas as pd

    from tune_app.expect import Outcome
    from tune_app.plan.types import Plan
    from tune_app.rundir.records import RunSummary, TrialOutcome
    from tune_app.runner import RunOptions
    from tune_app.spec import Spec

__all__ = [
    "BestCheckpoint",
    "Interrupted",
    "NeverReported",
    "PartlyRead",
    "RunInProgress",
    "RunResult",
    "best_checkpoint",
    "compare",
    "load",
    "read",
    "resume",
    "resume_command",
    "run",
    "validate",
]

PYTHON_API = ("<python api>",)  # the command run.json keeps for a run started from Python


@dataclass(frozen=True)
class RunResult:
    """What `run` ended with: each experiment's summary, where its results are, expectations."""

    plan: Plan
    summaries: list[RunSummary]  # one per experiment, in the spec's order
    outcomes: list[Outcome]  # every expectation checked
    address: str | None = None  # the cluster joined through `address`, where resume joins too

    @property
    def experiments(self) -> dict[str, RunSummary]:
        return {s.experiment: s for s in self.summaries}

    @property
    def folders(self) -> dict[str, str]:
        """Experiment -> where its results are (a folder, or a cloud URI)."""
        return {ep.name: ep.location for ep in self.plan.experiments}

    @property
    def summary_paths(self) -> dict[str, str]:
        """Experiment -> its summary.json."""
        return {ep.name: ep.folder.summary_where for ep in self.plan.experiments}

    @property
    def best(self) -> dict[str, TrialOutcome | None]:
        """Experiment -> its best trial (by the experiment's metric, mode and scope)."""
        return {s.experiment: s.best for s in self.summaries}

    @property
    def interrupted(self) -> bool:
        return any(s.interrupted for s in self.summaries)

    @property
    def interrupted_folders(self) -> list[str]:
        """Where the interrupted experiments are, for `resume_command` (with `address`)."""
        return [
            ep.location
            for ep, s in zip(self.plan.experiments, self.summaries, strict=True)
            if s.interrupted
        ]

    @property
    def passed(self) -> bool:
        """Every expectation held (at most `max_errored_trials` errors, metric bounds)."""
        return not self.interrupted and all(o.passed for o in self.outcomes)

    @property
    def exit_code(self) -> int:
        """What `tune_app run` would exit with: 0 passed, 1 failed, 130 interrupted by Ctrl-C
        (128 + the signal's number for SIGTERM, 143, and SIGHUP, 129)."""
        from tune_app import interrupts

        return interrupts.exit_code() if self.interrupted else 0 if self.passed else 1

    def frame(self) -> pd.DataFrame:
        """The run's trials as `load` reads them back from the results."""
        return load(*self.folders.values())

    def __repr__(self) -> str:
        """Short, as a notebook shows it: each experiment's summary and where its results are."""
        return f"RunResult(exit_code={self.exit_code}, {self.summaries}, folders={self.folders})"


class NeverReported(SpecError):
    """A stop or metric key the trainable never reported, or never as a number, ended the
    search early. The error carries what the run ended with (`result`: summaries,
    expectations), for a caller to show."""

    def __init__(self, error: SpecError, result: RunResult) -> None:
        super().__init__(
            error.what,
            file=error.file,
            path=error.path,
            allowed=error.allowed,
            suggestion=error.suggestion,
            multiline=error.multiline,
        )
        self.result = result


class Interrupted(KeyboardInterrupt):
    """Ctrl-C while experiments ran at the same time, so no summaries came back: `folders` are
    the experiments that started, each resumable (`resume_command(folders, address)`)."""

    def __init__(self, folders: list[str], address: str | None = None) -> None:
        super().__init__()
        self.folders = folders
        self.address = address  # the cluster the run joined through `address`


class RunInProgress(TuneAppError):
    """A run or resume was asked for while another is going in this process (another thread):
    one at a time (exit 2, nothing started or written)."""


_ONE_RUN = threading.Lock()
_GOING: list[str] = []  # what holds `_ONE_RUN`, for the refusal


@contextlib.contextmanager
def _one_run_at_a_time(what: str) -> Iterator[None]:
    """Hold this process's one run while the block runs; RunInProgress at once when another
    thread holds it. A run starts Ray and stops it at its end, and sets process-wide state
    while it goes (signal handlers, Ray's and Tune's module settings, the live view): two in
    threads raced in `ray.init` ("called ray.init twice", a dashboard traceback) and the first
    to end stopped the other's Ray."""
    if not _ONE_RUN.acquire(blocking=False):
        going = _GOING[0] if _GOING else "another run"
        raise RunInProgress(
            f"cannot start {what}: {going} is still going in this process, and a process runs "
            "one at a time; wait for it (run them one after the other), list both experiments "
            "in one spec (they run at the same time), or run each in a process of its own"
        )
    _GOING[:] = [f"{what} (thread '{threading.current_thread().name}')"]
    try:
        yield
    finally:
        _GOING.clear()
        _ONE_RUN.release()


def _named(spec: SpecSource | Spec) -> str:
    """A spec as the refusal names it: its file, or how it was given."""
    file = getattr(spec, "file", None) if not isinstance(spec, str | os.PathLike) else spec
    return f"the run of {os.fspath(file)}" if file is not None else "a run of a spec mapping"


def run(
    spec: SpecSource | Spec,
    *,
    smoke: bool = False,
    storage_path: str | os.PathLike[str] | None = None,
    address: str | None = None,
    verbosity: int = 0,
    command: Sequence[str] = PYTHON_API,
    junit: str | os.PathLike[str] | None = None,
    on_plan: Callable[[Plan], None] | None = None,
) -> RunResult:
    """Run every experiment of `spec` (Ray started, or joined at `address` / RAY_ADDRESS) and
    return its summaries and expectations.

    `verbosity`: 0 quiet, 1 the live view, 2 Tune's tables. `command` is kept in run.json;
    `junit` names a JUnit XML report to write; `on_plan` sees the checked plan (its warnings)
    before Ray starts. Raises `NeverReported` for a stop or metric key never reported (or
    never as a number), `Interrupted` on Ctrl-C while experiments ran at the same time,
    `StorageError` when a write of the run's files failed (the run stopped as by Ctrl-C; its
    message says how to resume), and `RunInProgress` at once while another run or resume goes
    in this process (a process runs one at a time; experiments of one spec run together).
    """
    with _one_run_at_a_time(_named(spec)):
        _check_junit(junit)
        from tune_app.resources import ClusterAddress

        cluster = ClusterAddress.of(address)
        plan = plan_of(spec, smoke, storage_path, rllib_checks=True, cluster=cluster)
        from tune_app.rundir.location import RunLocation

        # A folder an earlier run wrote is kept: this run writes `<name>_<n>` beside it.
        folders = RunLocation.fresh_all([ep.folder for ep in plan.experiments])
        fresh = tuple(
            replace(ep, folder=f) for ep, f in zip(plan.experiments, folders, strict=True)
        )
        plan = replace(plan, experiments=fresh)
        if on_plan is not None:
            on_plan(plan)
        from tune_app.runner import RunOptions  # imports Ray: only for a valid plan

        opts = RunOptions(address=cluster, verbosity=verbosity, command=tuple(command))
        return _run_plan(plan, opts, junit)


def resume(
    folder: str | os.PathLike[str],
    *,
    force: bool = False,
    address: str | None = None,
    verbosity: int = 0,
    command: Sequence[str] = PYTHON_API,
    junit: str | os.PathLike[str] | None = None,
    on_plan: Callable[[Plan], None] | None = None,
) -> RunResult:
    """Continue the interrupted runs in `folder` (an experiment's folder, the storage folder
    holding several, or a cloud URI) from Tune's saved state, and return as `run` does.

    A spec file changed since the run is refused unless `force`; the plan's warnings, which
    `on_plan` sees, say so, and what each scheduler does differently on a resume.
    """
    with _one_run_at_a_time(f"the resume of {os.fspath(folder)}"):
        _check_junit(junit)
        from tune_app.methods import scheduler_of
        from tune_app.resources import ClusterAddress
        from tune_app.resuming import resume_plan

        machine = None
        cluster = ClusterAddress.of(address)
        if cluster:  # the trials go on where they ran: the layout is chosen for its nodes again
            from tune_app.cluster import machine_at  # imports Ray

            machine = machine_at(cluster)
        plan = resume_plan(os.fspath(folder), force=force, machine=machine)
        notes = [
            f"{ep.experiment.key_path}.scheduler: {note}"
            for ep in plan.experiments
            if (note := scheduler_of(ep.experiment.scheduler).resume_note)
        ]
        plan = replace(plan, warnings=(*plan.warnings, *notes))
        if on_plan is not None:
            on_plan(plan)
        from tune_app.runner import RunOptions  # imports Ray: only for a valid plan

        opts = RunOptions(address=cluster, verbosity=verbosity, command=tuple(command), resume=True)
        return _run_plan(plan, opts, junit)


def _run_plan(plan: Plan, opts: RunOptions, junit: str | os.PathLike[str] | None) -> RunResult:
    """Run a checked plan, check its expectations, write the JUnit report when asked."""
    from tune_app import expect, runner
    from tune_app.resources import ClusterAddress
    from tune_app.rundir.outcome import missing_keys_error

    address = ClusterAddress.option(opts.address)
    try:
        summaries = runner.run(plan, opts)
    except KeyboardInterrupt:
        started = [ep.location for ep in plan.experiments if ep.folder.started]
        raise Interrupted(started, address) from None
    except RunStopped as err:  # stopped with the state saved: resumable
        started = [ep.location for ep in plan.experiments if ep.folder.started]
        if len(err.summaries) == len(plan.experiments):
            err.result = RunResult(plan, err.summaries, [], address)
        raise err.resumed_by(resume_command(started, address) if started else None) from None
    outcomes = [
        o
        for ep, summary in zip(plan.experiments, summaries, strict=True)
        for o in expect.check(ep, summary, smoke=plan.smoke)
    ]
    if junit is not None:
        expect.write_junit(Path(junit), plan, summaries, outcomes)
    result = RunResult(plan, summaries, outcomes, address)
    for ep, summary in zip(plan.experiments, summaries, strict=True):
        # Not after Ctrl-C: the search was cut short, and the keys may yet come.
        if (summary.missing or summary.unusable) and not summary.interrupted:
            error = missing_keys_error(ep, summary).with_file(str(plan.spec.file))
            raise NeverReported(error, result)
    return result


def _check_junit(junit: str | os.PathLike[str] | None) -> None:
    """Refuse a JUnit file the run could not write, or should not, before the run starts."""
    from tune_app.rundir.allowed import output_problem

    problem = output_problem(Path(junit), (".xml",)) if junit is not None else None
    if problem is not None:
        raise SpecError(problem, path="--junit", suggestion="name a new file ending in .xml")
