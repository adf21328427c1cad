"""The Python API, and the one way a run is done: `tune_app.run(spec)` runs a spec and
`tune_app.resume(folder)` continues an interrupted run, as `tune_app run` and `tune_app resume`
do (the CLI calls them), and return what they ended with; `tune_app.load(folder)` reads a run back
as `tune_app analyze` does, as a DataFrame.

Bad input raises the CLI's errors (`SpecError`, `SpecErrors`: `TuneAppError`s) before Ray
starts; a failed trial is not an exception but shows in the result (`passed`, `exit_code`). A
write of the run's files that failed (a full disk) stops the run as Ctrl-C does and raises
`StorageError`, which says how to resume it and carries the result so far (`result`); Tune's own
loop failing, or its Ray head lost, raises `TuneFailure` the same way.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tune_app.command import resume_command
from tune_app.errors import RunStopped, SpecError, TuneAppError
from tune_app.spec.loading import DICT_SPEC, mapping_text

if TYPE_CHECKING:
    import pandas as pd

    from tune_app.expect import Outcome
    from tune_app.plan.types import Plan
    from tune_app.readback.comparing import Comparison
    from tune_app.resources import ClusterAddress
    from tune_app.rundir.read import ExperimentResults
    from tune_app.rundir.records import RunSummary, TrialOutcome
    from tune_app.runner import RunOptions
    from tune_app.spec import Spec

SpecSource = str | os.PathLike[str] | Mapping[str, Any]
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


def validate(
    spec: SpecSource | Spec,
    *,
    smoke: bool = False,
    storage_path: str | os.PathLike[str] | None = None,
    rllib_checks: bool = False,
    cpus: float | None = None,
    gpus: float | None = None,
    address: str | None = None,
) -> Plan:
    """The checked plan of a spec (a file, a mapping as the YAML would hold it, or a loaded
    `Spec`): what `tune_app validate` prints. (`tune_app.plan` makes it.)

    Planned for this machine; for one of `cpus` CPUs and `gpus` GPUs (a machine one does not
    have); or, with `address`, for the running cluster there, whose nodes are read by joining
    it for a moment (no trial is started). Ray-free unless `address` is given; the spec is
    checked before the cluster is joined. `address` with `cpus` or `gpus` is refused: each names
    the machine planned for."""
    from tune_app.resources import ClusterAddress

    if address is not None and (cpus is not None or gpus is not None):
        given = "--cpus" if cpus is not None else "--gpus"
        raise SpecError(
            "plans for a machine of that size, and --address for the cluster there: not both",
            path=given,
            suggestion="leave out --address to plan for the size given, or --cpus and --gpus to "
            "plan for the cluster's nodes",
        )
    cluster = None if address is None else ClusterAddress(address)
    return _plan(
        spec, smoke, storage_path, rllib_checks=rllib_checks, cpus=cpus, gpus=gpus, cluster=cluster
    )


def _plan(
    spec: SpecSource | Spec,
    smoke: bool,
    storage_path: str | os.PathLike[str] | None,
    *,
    rllib_checks: bool,
    cluster: ClusterAddress | None,
    cpus: float | None = None,
    gpus: float | None = None,
) -> Plan:
    """`validate`'s plan, for the cluster at `cluster` (its errors name where that was given)."""
    from tune_app.plan.make import make_plan
    from tune_app.resources import Machine

    loaded = _load(spec)
    where = None if storage_path is None else str(storage_path)
    machine: Machine | None = None
    if cluster is not None:
        # First against a cluster not yet known: a bad spec never joins it.
        make_plan(loaded, machine=Machine.unknown(), storage_path=where, smoke=smoke)
        from tune_app.cluster import machine_at  # imports Ray

        try:
            machine = machine_at(cluster)
        except SpecError as err:
            raise err.with_file(str(loaded.file)) from None
    elif cpus is not None and not math.isfinite(cpus):
        machine = Machine.unknown()
    elif cpus is not None or gpus is not None:
        machine = Machine.planned(cpus, gpus)
    return make_plan(
        loaded, machine=machine, storage_path=where, smoke=smoke, rllib_checks=rllib_checks
    )


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
        plan = _plan(spec, smoke, storage_path, rllib_checks=True, cluster=cluster)
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


def read(*folders: str | os.PathLike[str]) -> list[ExperimentResults]:
    """Every experiment in `folders` (experiment folders, storage folders or cloud URIs), read
    from their files alone, as `analyze` reads them."""
    from tune_app.rundir.read import load as load_runs

    return [exp for folder in folders for exp in load_runs(os.fspath(folder))]


def load(*folders: str | os.PathLike[str], top: int | None = None) -> pd.DataFrame:
    """A run's trials as a DataFrame, a row each, ranked best first within each experiment as
    `analyze` ranks them: experiment, run (the run read), metric, trial_id, status,
    `config/<path>` of each searched
    parameter, iterations, score, best, last, time_total_s, failures, stopped_early, cause,
    error, folder. Raises `SpecError` for a folder that holds no tune_app run (saying what it
    holds: a plain Ray Tune experiment, a run stopped before it began), and warns (`PartlyRead`)
    for each file of a run that could not be read in full."""
    import pandas as pd

    from tune_app.readback.analyze import trial_rows

    experiments = read(*folders)
    for exp in experiments:
        for problem in exp.problems:  # analyze prints them as `skipped:` lines
            warnings.warn(f"{exp.where}: {problem}", PartlyRead, stacklevel=2)
    return pd.DataFrame(trial_rows(experiments, top))


class PartlyRead(UserWarning):
    """A file of a run `load` read could not be read in full (a killed run's torn line, a file
    cut short): its rows hold what could be read. A folder that holds no tune_app run at all is
    refused (`SpecError`), as `analyze` refuses it and as Ray Tune's `ExperimentAnalysis`
    refuses a folder without its experiment state."""


def compare(
    *runs: str | os.PathLike[str], html: str | os.PathLike[str] | None = None
) -> Comparison:
    """Several runs of one metric and mode compared, as `tune_app compare` prints them: each
    run's best with an interval, its best-so-far staircase against trials, iterations and wall
    time, and where runs have seeds (or several runs share a spec) the probability that one
    method beats another (`tune_app.readback.compare_runs`). Each of `runs` is read as `analyze`
    reads it (a folder of several runs: its newest that ran trials). With `html`, the page is
    written there too. Raises `SpecError` for fewer than two runs or runs of different metrics
    or modes."""
    from tune_app.readback import compare_page, compare_runs

    found = compare_runs.compare([os.fspath(r) for r in runs])
    if html is not None:
        found = replace(found, page=str(compare_page.write(found, os.fspath(html))))
    return found


@dataclass(frozen=True)
class BestCheckpoint:
    """The best trial's newest checkpoint: its folder, and the trial it came from."""

    experiment: str
    trial_id: str
    path: Path  # the checkpoint's folder: the files the trainable's save_checkpoint wrote
    config: dict[str, Any]  # the trial's config, to rebuild the model the weights fit
    score: float | None  # the trial's score (the experiment's metric, mode and scope)


def best_checkpoint(folder: str | os.PathLike[str], pick: str | None = None) -> BestCheckpoint:
    """The newest checkpoint of the best trial of the run in `folder` (an experiment's folder,
    or a storage folder holding one experiment), the trial `analyze` and `best` call best. For
    a search of several objectives, which has a front and no one best, `pick` names the point
    of its front, as `best --pick` does: an objective (the front's best on it) or a trial id.

    Raises `SpecError` when the folder holds several experiments, no trial has a score, a
    search of several objectives is given no `pick` (or one metric is given one), or the
    trial kept no checkpoint."""
    from tune_app.command import APP
    from tune_app.readback import front
    from tune_app.rundir.read import KEEP_A_CHECKPOINT

    found = read(folder)
    if len(found) != 1:
        names = ", ".join(e.name for e in found)
        raise SpecError(
            f"{os.fspath(folder)} holds {len(found)} experiments ({names}), not one",
            suggestion="pass the folder of one experiment",
        )
    exp = found[0]
    several = front.several(exp.summary)
    if several and pick is None:
        objectives = ", ".join(o.name for o in exp.summary.objectives)
        raise SpecError(
            f"{exp.where}: experiment '{exp.name}' searched several objectives ({objectives}): "
            "its answer is a Pareto front, not one best trial",
            path="pick",
            suggestion="pass pick= an objective (the front's best on it) or a trial id of "
            f"the front (`{APP} analyze {exp.where}` shows it)",
        )
    if not several and pick is not None:
        raise SpecError(
            f"pick names a point of a Pareto front, and experiment '{exp.name}' optimised one "
            f"metric ({exp.metric or 'none'})",
            path="pick",
            suggestion="leave pick out: the best trial is given",
        )
    chosen = front.chosen(exp.summary, pick) if pick is not None else [exp.best_trial]
    best = chosen[0] if chosen else None
    if best is None:
        raise SpecError(
            f"{exp.where}: no trial of experiment '{exp.name}' has a score"
            + (" on every objective within its constraints" if several else ""),
            suggestion=f"see `{APP} analyze {exp.where}` for what each trial reported",
        )
    path = exp.checkpoint(best)
    if path is None:
        raise SpecError(
            f"{exp.where}: the {'chosen' if several else 'best'} trial {best.trial_id} kept no "
            "checkpoint"
            + (" here (a run on cloud storage: copy its trial folder)" if exp.on_cloud else ""),
            suggestion=KEEP_A_CHECKPOINT,
        )
    return BestCheckpoint(exp.name, best.trial_id, path, dict(best.config), best.score)


def _load(source: SpecSource | Spec) -> Spec:
    from tune_app.spec import Spec
    from tune_app.spec import resolve as specs

    if isinstance(source, Spec):
        return source
    if isinstance(source, Mapping):
        # The same path as a file: errors name the mapping, the run keeps its text as spec.yaml.
        return specs.loads(mapping_text(dict(source)), Path(DICT_SPEC))
    return specs.load(os.fspath(source))
