"""What Tune saved of a run, read back outside Tune's loop: the journal of ended trials folded
into Tune's saved state, the wall time a resumed run already spent, the summary of a run that
stopped without Tune's loop ending (its loop raised, its Ray head was lost), and whether this
release can read that state at all.

Tune pickles the objects the app hands it (callbacks, stopper, searcher, scheduler, config
values) and `resume` unpickles them: a saved state names the app's classes and functions by
module and name, and a run resumes under a later release only while each name still imports.
`PICKLED_NAMES` is the list of those names, none private; tests/test_saved_state.py runs each
kind of search and holds what Tune pickled to it.
"""

from __future__ import annotations

import importlib
import pickletools
from collections.abc import Iterator
from dataclasses import replace
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import tune_app
from tune_app.errors import SpecError
from tune_app.interrupts import deferred
from tune_app.rllib.tables import ALGORITHMS
from tune_app.rundir.files import write_json
from tune_app.rundir.layout import TUNE_STATES, journaled_ends, newest_state, read_newest_state
from tune_app.rundir.outcome import summarize
from tune_app.rundir.read import read_summary
from tune_app.rundir.saved import tune_pickles
from tune_app.rundir.write import mark_finished_trials
from tune_app.sources import app_fingerprint
from tune_app.user_code import user_path
from tune_app.user_code.locating import is_local_origin, on_path, static_spec

if TYPE_CHECKING:
    from tune_app.plan.types import ExperimentPlan
    from tune_app.rundir.location import RunLocation
    from tune_app.rundir.records import RunRecord, RunSummary

# The app's names that Tune's saved state may hold, as `module:qualname`. A run saved by one
# release resumes under a later one only while each still imports there: a class or function
# renamed or moved keeps its old name here as an alias, and leaves this list only with a
# release that says it no longer resumes runs saved before. None is private (`_`), so no
# refactoring of private code can break a resume.
PICKLED_NAMES = frozenset(
    {
        # Callbacks and stopper (the run config)
        "tune_app.callbacks:JsonlResults",
        "tune_app.callbacks:PlainNumbers",
        "tune_app.callbacks:TrialLogsFollowResults",
        "tune_app.callbacks:SameFailures",
        "tune_app.progress:ProgressCallback",
        "tune_app.tensorboard:TrialBoard",
        "tune_app.tensorboard:TagLayout",
        "tune_app.timeouts:ResultTimeout",
        "tune_app.ray_internals.actors:kill_trial_actor",  # ResultTimeout's `kill`
        "tune_app.trackers.callback:TrackerLog",
        "tune_app.trackers.mirror:Target",
        "tune_app.trackers.naming:Naming",
        "tune_app.trackers.options:MlflowOptions",
        "tune_app.trackers.options:WandbOptions",
        "tune_app.tuner:SpecStopper",
        "tune_app.eta:Plan",  # the progress line's plan of trial lengths (ProgressCallback's)
        # What those hold
        "tune_app.rundir.location:RunLocation",
        "tune_app.space:Domain",
        "tune_app.objectives:Objective",
        "tune_app.objectives:Limit",
        # Searchers
        "tune_app.methods.by_index:SearchesByIndex",
        "tune_app.ray_internals.sparse:LatestMetric",
        "tune_app.ray_internals.seeded:SeedRepeater",
        "tune_app.ray_internals.seeded:SeededVariants",
        "tune_app.ray_internals.constraints:ToldConstraints",
        "tune_app.methods.told:Replayed",  # a warm start told to HyperOpt
        "tune_app.methods.told:ToldOnce",  # and to Optuna's stored study
        "tune_app.methods.optuna_study:RunJournal",  # that study's journal (its path)
        # Schedulers
        "tune_app.ray_internals.wrapping:SkipsEnded",  # around every scheduler
        "tune_app.ray_internals.sparse:SparseASHA",
        "tune_app.ray_internals.sparse:SparseMedian",
        "tune_app.ray_internals.seeded:SeededASHA",
        "tune_app.ray_internals.seeded:SeededMedian",
        "tune_app.ray_internals.seeded:SeededHyperBand",
        "tune_app.ray_internals.hyperband:ResumableHyperBand",
        "tune_app.ray_internals.hyperband:ResumableHyperBandForBOHB",
        "tune_app.ray_internals.population:AppPBT",
        "tune_app.ray_internals.population:AppPB2",
        "tune_app.ray_internals.population:RecordsClones",  # AppPBT's recorder
        "tune_app.ray_internals.population:RecordsClonesPB2",  # AppPB2's
        "tune_app.ray_internals.hyperband:FilledOnce",  # the brackets' class
        "tune_app.ray_internals.seeded:SeedsKeptTogether",
        # A trial's storage keeps the last copy command Tune's syncer ran (experiment state).
        "tune_app.ray_internals.uploads:upload",
        # An RLlib trial's config (experiment state, params.pkl, its checkpoints).
        "tune_app.rllib.handlers:ObservationConnectors",
        # The class an RLlib trial runs (its checkpoints), by the algorithm's name.
        *(f"tune_app.rllib.algorithm:{name}" for name in ALGORITHMS),
    }
)
# The packages whose names `resume` checks before handing the state to Tune: the app's and
# Ray's, whose versions run.json records. A user's module imports only on the run's own path.
_CHECKED = ("tune_app", "ray")
# What else a saved state may name for `resume` to hand it to Tune: the libraries the app's
# searchers, schedulers and trainables keep objects of, the standard library's data types, and
# builtins that hold data. A pickle names the functions it calls: a received folder's tuner.pkl
# calling `os.system` ran as `resume` read it. A filter of names, not a sandbox: code pickled
# by value, which Tune's own state holds (HyperBand's lambdas, a user's env), is not judged.
_TRUSTED = frozenset(
    {
        *_CHECKED,
        "trainables",
        *("numpy", "pandas", "pyarrow", "scipy", "sklearn", "statsmodels", "joblib", "torch"),
        *("optuna", "hyperopt", "hpbandster", "ConfigSpace", "gymnasium", "networkx"),
        *("collections", "copyreg", "datetime", "decimal", "enum", "fractions", "pathlib"),
        *("uuid", "typing", "inspect", "abc", "concurrent", "_operator", "numbers", "re"),
        *("functools", "random", "array", "math"),  # hyperopt's partial, Python's Random
    }
)
# Single names of modules whose others could call code (logging.config builds what it is told)
_TRUSTED_NAMES = frozenset(
    {"logging:getLogger", "time:monotonic", "time:time", "time:perf_counter"}  # a Logger, clocks
)
_DATA_BUILTINS = frozenset(
    "bool int float complex str bytes bytearray list tuple dict set frozenset slice range "
    "object type property NoneType".split()
)
_EXCEPTIONS = ("Error", "Exception", "Warning", "Interrupt", "Exit")


def saved_summary(ep: ExperimentPlan, wall_time_s: float) -> RunSummary | None:
    """The summary of what Tune saved last, marked interrupted and written (where it can be),
    for a run that stopped without Tune's loop ending: None when that state is unreadable. At
    5,000 trials Tune's loop once raised "dictionary changed size during iteration": the run
    ended with a traceback and no summary, though its saved state resumed."""
    from ray.tune import ExperimentAnalysis, ResultGrid

    try:
        with deferred():
            mark_finished(ep)
            grid = ResultGrid(ExperimentAnalysis(ep.folder.local.as_posix()))
            summary = replace(summarize(ep, grid, wall_time_s), interrupted=True)
            write_json(ep.folder.summary, summary.to_json())
            ep.folder.push()
    except Exception:  # the saved state itself is unreadable: the error says what broke
        return None
    return summary


def earlier_wall_time(ep: ExperimentPlan) -> tuple[float, bool]:
    """The wall time a resumed run already spent (from the summary an interrupted or finished
    run wrote; a killed run left none), and whether that run had finished."""
    summary = read_summary(ep.folder)
    if summary is None:
        return 0.0, False
    return summary.wall_time_s, not summary.interrupted


def mark_finished(ep: ExperimentPlan) -> None:
    """Patch Tune's saved state with the journal of ended trials, wherever the state lives."""
    ep.folder.pull_state()
    if mark_finished_trials(ep.folder.local):
        ep.folder.push_state()


def pickled_globals(data: bytes) -> Iterator[str]:
    """`module:qualname` of each global a pickle names (what unpickling it imports), in order;
    nothing more once the pickle turns out torn. A function or class that cloudpickle wrote by
    value (its code, not its name) shows as the reconstructor it calls
    (`ray.cloudpickle.cloudpickle:_make_function`); `by_value` names its module."""
    return (value for kind, value in _walk(data) if kind == "global")


def by_value(data: bytes) -> list[str]:
    """The `__module__` of each function or class a pickle holds by value (cloudpickle's way
    with a lambda, a function's local, a class made at run time): code frozen into the state."""
    found, key = [], None
    for kind, value in _walk(data):
        if kind == "string" and key == "__module__" and value not in found:
            found.append(value)
        key = value if kind == "string" else None
    return found


def _walk(data: bytes) -> Iterator[tuple[str, str]]:
    """("global", "module:qualname") for each global a pickle names and ("string", text) for
    each string it pushes (also one fetched again from the memo), in order; nothing more once
    the pickle turns out torn."""
    memo: dict[int, str | None] = {}
    pushed: list[str | None] = []  # the last two values pushed: a string, or None for another
    try:
        for op, arg, _ in pickletools.genops(data):
            if op.name in ("GLOBAL", "INST"):  # protocols 0-3: "module name" in the opcode
                yield "global", str(arg).replace(" ", ":", 1)
            elif op.name == "STACK_GLOBAL" and len(pushed) == 2 and None not in pushed:
                yield "global", f"{pushed[0]}:{pushed[1]}"
            if op.name == "MEMOIZE":
                memo[len(memo)] = pushed[-1] if pushed else None
            elif op.name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[int(str(arg))] = pushed[-1] if pushed else None
            elif op.name not in ("PROTO", "FRAME"):
                got = op.name in ("GET", "BINGET", "LONG_BINGET")
                value = memo.get(int(str(arg))) if got else arg
                text = value if isinstance(value, str) and (got or "UNICODE" in op.name) else None
                pushed.append(text)
                if text is not None:
                    yield "string", text
            del pushed[:-2]
    except (ValueError, EOFError, KeyError):  # torn, or not a pickle: Tune's error says so
        return


def is_private(name: str) -> bool:
    """Whether `module:qualname` names something private: a part of either starting with `_`,
    or a function's local (`<locals>`), which pickles only by value."""
    module, _, qualname = name.partition(":")
    return any(part.startswith(("_", "<")) for part in (*module.split("."), *qualname.split(".")))


@cache
def resolves(name: str) -> bool:
    """Whether `module:qualname` imports in this process, as unpickling would import it."""
    module, _, qualname = name.partition(":")
    try:
        found: object = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except Exception:  # noqa: BLE001 - any failure to import is a name this release lacks
        return False
    return True


def saved_names(folder: Path) -> list[str]:
    """Each name the state Tune saved in `folder` holds (`module:qualname`), once, in order: the
    pickles are read once, for every check of them (at 10,000 trials the state is 100 MB)."""
    return list(dict.fromkeys(n for _, data in tune_pickles(folder) for n in pickled_globals(data)))


def missing_name(names: list[str]) -> str | None:
    """The first of a saved state's `names` that is of the app or of Ray and does not import
    here, or None: a state this release cannot unpickle."""
    for name in names:
        if name.split(".", 1)[0].split(":", 1)[0] in _CHECKED and not resolves(name):
            return name
    return None


def foreign_name(names: list[str], own: tuple[str, ...]) -> str | None:
    """The first of a saved state's `names` that a run of the app does not put there, or None:
    not of the app, Ray, the libraries their objects come from, the standard library's data,
    or the user's modules in `own` (folders)."""
    for name in names:
        module, _, qualname = name.partition(":")
        top = module.split(".")[0]
        if top == "builtins":
            if qualname not in _DATA_BUILTINS and not qualname.endswith(_EXCEPTIONS):
                return name
        elif top not in _TRUSTED and name not in _TRUSTED_NAMES and not _users(top, own):
            return name
    return None


def _users(top: str, own: tuple[str, ...]) -> bool:
    """Whether top-level module `top` is a module file of the user's, in `own` (found, not
    imported)."""
    with on_path(own):
        found = static_spec(top) if top else None
    return found is not None and is_local_origin(found.origin, own)


def check_readable(folder: RunLocation, record: RunRecord) -> None:
    """Refuse, in one line, to resume a run whose saved state names a class or function of the
    app or of Ray that this release does not have, naming the release that saved it: Tune would
    fail unpickling it with a traceback ("Can't get attribute ..."); or one that names what no
    run of the app puts there, which unpickling would call; or one Tune cannot read back whole
    (`_check_whole`)."""
    _check_whole(folder)
    names = saved_names(folder.local)
    name = missing_name(names)
    if name is not None:
        raise unreadable(folder, record, name)
    foreign = foreign_name(names, user_path(Path(record.spec_file).parent))
    if foreign is not None:
        raise SpecError(
            f"{folder.where}: its saved search state names {foreign}, which no run of tune_app "
            "puts there: resuming would hand it to Tune, whose unpickling calls what it names",
            suggestion="its results read as they are (analyze, report, best); resume only a run "
            "folder you trust",
        )


def _check_whole(folder: RunLocation) -> None:
    """Refuse a run Tune cannot read back whole: a pickle it unpickles whole (tuner.pkl, its
    searcher's and callbacks' states) cut short or no pickle, where Tune fails with an
    unpickling traceback or starts the search afresh; or a run whose trials ran but whose newest
    experiment state is missing or torn, where Tune starts afresh and runs every trial again."""
    instead = (
        "its results read as they are (analyze, report, best); to go on from its finished "
        f"trials, start a new run with `warm_start: [{folder.where}]` in the experiment"
    )
    for where, data in tune_pickles(folder.local):
        if not where.endswith(".pkl"):
            break  # the experiment state's own pickles: whole where that state reads
        if not _whole(data):
            raise SpecError(
                f"{folder.where}: Tune's saved {where} is cut short or no pickle: resuming "
                "cannot read back the search it saved",
                suggestion=instead,
            )
    if not folder.holds_results() or read_newest_state(folder.local) is not None:
        return
    state = newest_state(folder.local)
    damaged = f"{state.name} cannot be read" if state else f"{TUNE_STATES} is missing"
    raise SpecError(
        f"{folder.where}: Tune's saved state {damaged}: resuming would start the search afresh "
        f"and run every trial it ran again ({len(journaled_ends(folder.local))} finished)",
        suggestion=instead,
    )


def _whole(data: bytes) -> bool:
    """Whether `data` is a pickle to its end (its STOP), as unpickling reads it."""
    try:
        for _ in pickletools.genops(data):
            pass
    except (ValueError, EOFError, KeyError):
        return False
    return True


def unreadable(folder: RunLocation, record: RunRecord, cause: str) -> SpecError:
    """The one-line refusal to resume the run in `folder`, whose saved state this release cannot
    read because of `cause` (the name it lacks, or the unpickling error), naming the release
    that saved it from its run.json."""
    wrote = _release(record.versions.get("tune_app"), record.app_code)
    if cause.startswith("ray"):  # Ray was upgraded under the run
        then = record.versions.get("ray")
        saved_by = f"{wrote} with ray {then or '(version not recorded)'}"
        reader = f"ray {metadata.version('ray')}"
        install = f"ray {then}" if then else "the Ray release that ran it"
    else:
        saved_by = wrote
        reader = _release(tune_app.__version__, app_fingerprint())
        install = wrote if record.versions.get("tune_app") else "the release that ran it"
    return SpecError(
        f"{folder.where} was saved by {saved_by}; this {reader} cannot read its saved search "
        f"state, which names {cause}",
        suggestion=f"its results read as they are (analyze, report, best); to continue the "
        f"search, resume it with {install} installed, or start a new run",
    )


def _release(version: str | None, code: str) -> str:
    """A release of the app as run.json names it: its version, and the digest of its code (every
    commit of a version shares the version); an earlier release's run.json may lack either."""
    digest = f" (code {code})" if code else ""
    if not version or version == "not installed":
        return f"a tune_app release its run.json does not name{digest}"
    return f"tune_app {version}{digest}"
