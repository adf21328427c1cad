"""Finding the runs a folder holds: a run's folder, its experiment's newest run that ran trials,
every run of a folder of experiments, and one clear refusal for a folder that holds none (a plain
Ray Tune experiment, a folder where nothing ran, a run whose run.json is lost or damaged).
Ray-free."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

from tune_app.errors import SpecError
from tune_app.rundir.files import read_json, read_text
from tune_app.rundir.layout import (
    CLONES_FILE,
    FINISHED_FILE,
    RESULTS_FILE,
    RUN_FILE,
    SPEC_FILE,
    SUMMARY_FILE,
    TUNER_STATE,
    glob_escape,
    newest_state,
)
from tune_app.rundir.records import RunRecord


def run_number(name: str, base: str) -> int | None:
    """Which run of experiment folder `base` a folder named `name` is: 1 for `base` itself, n
    for `base_n` (n >= 2: a re-run of a spec writes beside the earlier runs, never into them),
    None for any other name."""
    if name == base:
        return 1
    found = _NUMBERED.fullmatch(name)
    if found is None or found.group(1) != base or int(found.group(2)) < 2:
        return None
    return int(found.group(2))


_NUMBERED = re.compile(r"(.+)_(\d+)")


def newest_of_each(
    runs: dict[str, str], prefer: Callable[[str], bool] | None = None
) -> dict[str, list[str]]:
    """Runs one folder holds, as folder name -> the experiment its run.json names: the newest
    run of each experiment (its highest `run_number`; the newest that `prefer`s, if one does)
    -> that experiment's other runs, oldest first. A folder whose name is not its experiment's
    (an experiment named `e_2` beside `e`) is a run of its own."""
    families: dict[str, list[tuple[int, str]]] = {}
    for name, experiment in runs.items():
        number = run_number(name, experiment)
        families.setdefault(experiment if number is not None else name, []).append(
            (number or 1, name)
        )
    out = {}
    for members in families.values():
        ordered = [name for _, name in sorted(members)]
        preferred = [name for name in ordered if prefer is not None and prefer(name)]
        chosen = (preferred or ordered)[-1]
        out[chosen] = [name for name in ordered if name != chosen]
    return out


def experiment_of(folder: Path) -> str:
    """The experiment a run folder's run.json names (its folder's name when it names none)."""
    try:
        data = read_json(folder / RUN_FILE)
    except (OSError, ValueError):
        data = None
    name = data.get("experiment") if isinstance(data, dict) else None
    return name if isinstance(name, str) and name else folder.name


def unfinished(folder: Path) -> bool:
    """Whether a run folder's run left trials unfinished (or never wrote its summary)."""
    try:
        data = read_json(folder / SUMMARY_FILE)
    except (OSError, ValueError):
        return True
    return not isinstance(data, dict) or bool(data.get("interrupted", True))


def not_run_why(summary: str | None, reported: bool) -> str | None:
    """Why a run ran no trials to read, in a few words, or None when it ran some: from its
    summary.json's text (None: no summary, the run was killed or is still going) and whether a
    trial reported or ended (results.jsonl or the journal holds a line). A run refused once its
    trials had reported (a stop or metric key never reported, or never as a number) counts as
    one that ran none: it was ended before it could rank any."""
    try:
        data = json.loads(summary) if summary is not None else None
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict):
        missing, unusable = data.get("missing"), data.get("unusable")
        if isinstance(missing, dict) and missing:
            return f"ended early: '{next(iter(missing.values()))}' was never reported"
        if isinstance(unusable, dict) and unusable:
            return f"ended early: {next(iter(unusable))} was never a number"
        if data.get("trials"):
            return None
    return None if reported else "no trial reported"


def not_run(folder: Path) -> str | None:
    """`not_run_why` of a local run folder."""
    try:
        summary: str | None = read_text(folder / SUMMARY_FILE)
    except (OSError, UnicodeDecodeError):
        summary = None
    return not_run_why(summary, any(_has_lines(folder / n) for n in (RESULTS_FILE, FINISHED_FILE)))


def ran_trials(folder: Path) -> bool:
    """Whether a local run folder's run ran trials to read (`not_run_why`)."""
    return not_run(folder) is None


def _has_lines(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def find_runs(
    folder: Path, *, every: bool = False, prefer: Callable[[Path], bool] | None = None
) -> tuple[list[Path], list[Path]]:
    """The runs `folder` names, and the other runs of their experiments, left unread.

    A run's folder names the newest run of its experiment (itself, or a later `<name>_<n>`
    beside it: a re-run writes there); a run's run.json names exactly that run; a folder
    holding experiments names the newest run of each (every run with `every`). With `prefer`,
    the newest run that it prefers, where one does (the readers: the newest that ran trials,
    `ran_trials`; `resume`: the newest unfinished run). `RunLocation.open` is the one caller
    that readers go through: it says in one line which run it read and names the others.
    """
    folder = folder.expanduser()
    if folder.name == RUN_FILE and folder.is_file():
        if not holds_run(folder.parent):
            raise _no_run(folder.parent)
        return [folder.parent], []
    if not folder.exists():
        raise SpecError(f"{folder} does not exist", suggestion="give a folder a run wrote")
    if not folder.is_dir():
        raise SpecError(f"{folder} is not a folder", suggestion="give a folder a run wrote")
    if holds_run(folder):
        experiment = experiment_of(folder)
        base = experiment if run_number(folder.name, experiment) is not None else folder.name
        family = {
            p.name: experiment_of(p)
            for p in [folder.parent / base, *folder.parent.glob(f"{glob_escape(base)}_*")]
            if holds_run(p)
        }
        family = {name: exp for name, exp in family.items() if exp == experiment}
        family[folder.name] = experiment
        chosen = newest_of_each(family, _by_name(folder.parent, prefer))
        for newest, others in chosen.items():
            if folder.name in (newest, *others):
                return [folder.parent / newest], [folder.parent / o for o in others]
    found = {
        p.parent.name: experiment_of(p.parent)
        for p in folder.glob(f"*/{RUN_FILE}")
        if holds_run(p.parent)
    }
    if not found:
        raise _no_run(folder)
    if every:
        return sorted(folder / name for name in found), []
    latest = newest_of_each(found, _by_name(folder, prefer))
    passed = sorted(folder / o for olds in latest.values() for o in olds)
    return sorted(folder / name for name in latest), passed


def holds_run(folder: Path) -> bool:
    """Whether `folder` holds a tune_app run: a run.json that reads as the app's `RunRecord` (a
    JSON object, naming at least one of its fields unless empty). Another tool's run.json, or
    one that is no JSON, is not a run: read as one, it gave a run of no trials without a word."""
    try:
        data = read_json(folder / RUN_FILE)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and (not data or not RECORD_FIELDS.isdisjoint(data))


RECORD_FIELDS = frozenset(f.name for f in fields(RunRecord))


def _no_run(folder: Path) -> SpecError:
    """The error for a folder that holds no tune_app run, saying what it holds instead."""
    where = folder.resolve()
    lost = record_problem(folder)
    if lost is not None:
        return _lost_record(folder, lost)
    below = [(c, p) for c in sorted(_subfolders(folder)) if (p := record_problem(c)) is not None]
    if below:
        named = "; ".join(f"{c.name}: {p}" for c, p in below[:3]) + (
            "; ..." if len(below) > 3 else ""
        )
        return SpecError(
            f"{folder} holds tune_app runs whose {RUN_FILE} is lost or damaged ({named})",
            suggestion=_what_still_works(below[0][0]),
        )
    tune_runs = sorted(
        p for p in [folder, *(c for c in _subfolders(folder))] if _is_tune_experiment(p)
    )
    if folder in tune_runs:
        return SpecError(
            f"{folder} is a Ray Tune experiment folder, not a tune_app run (Tune's state is "
            f"there, no {RUN_FILE}): Ray Tune wrote it without tune_app",
            suggestion=f"read it with Ray Tune: ray.tune.ExperimentAnalysis('{where}')"
            ".dataframe(), or tune_app.load a folder a tune_app run wrote",
        )
    if tune_runs:
        names = ", ".join(p.name for p in tune_runs[:3]) + (", ..." if len(tune_runs) > 3 else "")
        return SpecError(
            f"{folder} holds Ray Tune experiment folders ({names}), not tune_app runs (no "
            f"{RUN_FILE} in them): Ray Tune wrote them without tune_app",
            suggestion=f"read one with Ray Tune: ray.tune.ExperimentAnalysis('{tune_runs[0]}')"
            ".dataframe()",
        )
    if (folder / SPEC_FILE).is_file():
        return SpecError(
            f"{folder} holds no tune_app run: its run was stopped before it began (the spec "
            f"is there, no {RUN_FILE}): nothing ran",
            suggestion=f"run the spec again ({folder / SPEC_FILE} is a copy of it); a new run "
            "writes beside this folder",
        )
    if (folder / RUN_FILE).is_file():
        return SpecError(
            f"{folder / RUN_FILE} is not a tune_app run record (not a JSON object of the "
            "app's keys: another tool's file, or one cut short)",
            suggestion="give a folder a tune_app run wrote, e.g. results/<experiment>",
        )
    foreign = sorted(p.parent.name for p in folder.glob(f"*/{RUN_FILE}"))
    if foreign:
        return SpecError(
            f"{folder} holds no tune_app run: the {RUN_FILE} in {', '.join(foreign[:3])} is not "
            "a tune_app run record (another tool's file, or one cut short)",
            suggestion="give a folder a tune_app run wrote, e.g. results/<experiment>",
        )
    return SpecError(
        f"{folder} holds no tune_app run (no {RUN_FILE} in it or its subfolders)",
        suggestion="give an experiment folder, e.g. results/<experiment>",
    )


# Files only the app writes in a run folder (spec.yaml alone is a run stopped before it began).
_APP_FILES = (RESULTS_FILE, SUMMARY_FILE, FINISHED_FILE, CLONES_FILE)


def record_problem(folder: Path) -> str | None:
    """What is wrong with the run.json of a folder the app ran in (its results, summary or
    journal are there, or its spec copy beside Tune's state), in words: missing, not JSON at
    line N, not an object, none of the app's fields; None where run.json reads as a run, or the
    folder holds none of the app's files (another tool's, or nothing ran)."""
    app_files = [n for n in _APP_FILES if (folder / n).is_file()]
    if not app_files and not ((folder / SPEC_FILE).is_file() and _is_tune_experiment(folder)):
        return None
    record = folder / RUN_FILE
    try:
        data = read_json(record)
    except FileNotFoundError:
        return f"{RUN_FILE} is missing"
    except UnicodeDecodeError:
        return f"{RUN_FILE} is not text (not UTF-8)"
    except json.JSONDecodeError as err:
        return f"{RUN_FILE} is not JSON at line {err.lineno}, column {err.colno} ({err.msg})"
    except ValueError as err:  # nested deeper than the parser goes
        return f"{RUN_FILE} is not JSON that can be read ({err})"
    except OSError as err:
        return f"{RUN_FILE} cannot be read ({err.strerror or err})"
    if not isinstance(data, dict):
        return f"{RUN_FILE} is not a JSON object (a JSON {type(data).__name__})"
    if data and RECORD_FIELDS.isdisjoint(data):
        return (
            f"{RUN_FILE} is not a tune_app run record (a JSON object naming none of its fields: "
            "experiment, metric, mode, ...)"
        )
    return None


def _lost_record(folder: Path, problem: str) -> SpecError:
    present = [n for n in (*_APP_FILES, SPEC_FILE) if (folder / n).is_file()]
    return SpecError(
        f"{folder} is a tune_app run whose record is lost or damaged: {problem}; "
        f"{', '.join(present)} {'is' if len(present) == 1 else 'are'} there",
        suggestion=_what_still_works(folder),
    )


def _what_still_works(folder: Path) -> str:
    """What can still be done with a run whose run.json is lost or damaged."""
    results = folder / RESULTS_FILE
    ranked = (folder / SUMMARY_FILE).is_file()
    record = json.dumps(
        {"experiment": folder.name}
        if ranked
        else {"experiment": folder.name, "metric": "<metric>", "mode": "<max|min>"}
    )
    read = (
        f"its results are still in {results}, a JSON object a line "
        f"(pandas.read_json('{results}', lines=True)); "
        if _has_lines(results)
        else ""
    )
    return f"{read}to read it with tune_app, write {folder / RUN_FILE} back as {record}" + (
        " (the rest is read from summary.json)" if ranked else ""
    )


def _subfolders(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if p.is_dir()]
    except OSError:
        return []


def _is_tune_experiment(folder: Path) -> bool:
    """Whether Ray Tune saved an experiment's state in `folder`."""
    return newest_state(folder) is not None or (folder / TUNER_STATE).is_file()


def _by_name(parent: Path, prefer: Callable[[Path], bool] | None) -> Callable[[str], bool] | None:
    return None if prefer is None else lambda name: prefer(parent / name)
