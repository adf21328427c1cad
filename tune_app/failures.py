"""Why trials failed: each failure gets a cause (the exception type, a non-finite metric, out of
memory, killed, no result for N s) and its first lines, read from the exception or from Tune's
error.txt, so runs and `analyze` group failures the same way; and a failed trial's one line,
as the progress view prints it."""

from __future__ import annotations

import os
import pickle
import re
import sysconfig
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OUT_OF_MEMORY = "out of memory"
KILLED = "killed"
NON_FINITE = "non-finite metric"

MESSAGE_LINES = 3  # lines of the error kept in summaries and reports

_OOM_TYPES = {"MemoryError", "OutOfMemoryError", "OutOfMemoryException"}
_OOM_TEXT = ("out of memory", "running low on memory", "memory monitor")
_KILLED_TYPES = {
    "ActorDiedError",
    "RayActorError",
    "WorkerCrashedError",
    "NodeDiedError",
    "ActorUnavailableError",
    "LocalRayletDiedError",
}
_KILLED_TEXT = ("actor died unexpectedly", "worker process has died", "worker died", "node died")
_NO_RESULT = re.compile(r"no result for \S+ s")
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)(?::\s|:$|$)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FAILURE_HEADER = re.compile(r"^Failure # \d+ \(occurred at [^)]*\)[ \t]*$", flags=re.M)


@dataclass(frozen=True)
class Failure:
    """One failed trial's cause (what groups it), the first lines of its error, and where in
    the user's code it was raised (`my_train.py:14`), when a traceback says."""

    cause: str
    message: str
    frame: str | None = None


class NoResultError(Exception):
    """A trial reported no result for `result_timeout_s` seconds, so the app ended its process
    (`tune_app.timeouts`). Its message starts with the cause: "no result for N s"."""


def no_result(limit_s: float) -> NoResultError:
    """The error a trial silent for `limit_s` seconds fails with."""
    return NoResultError(
        f"no result for {limit_s:g} s (result_timeout_s), so its process was ended"
    )


def record_failure(
    error_file: str | Path, pickled_file: str | Path | None, error: Exception
) -> None:
    """Make `error` the trial's last failure in the files Tune wrote for it: the body of the last
    "Failure # N" block of its error.txt, and its error.pkl (what Tune's Result.error reads).

    For a failure Tune saw as something else: a process the app ended looks to Tune like any
    dead worker ("killed"), but every reader of these files should name the app's cause."""
    path = Path(error_file)
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    headers = list(_FAILURE_HEADER.finditer(text))
    head = text[: headers[-1].end()] + "\n" if headers else ""
    path.write_text(f"{head}{type(error).__name__}: {error}\n", encoding="utf-8")
    if pickled_file is not None:
        Path(pickled_file).write_bytes(pickle.dumps(error))


def from_exception(error: BaseException | str) -> Failure:
    """The failure of a trial from the exception Tune gives for it.

    A trial's own exception comes wrapped in a RayTaskError whose `cause` is the original. An
    error Tune did not pickle (only Ray's task and actor errors are: a worker that Ray's memory
    monitor killed raises OutOfMemoryError) comes as the text of the trial's error.txt.
    """
    if isinstance(error, str):
        return from_text(error)
    inner = getattr(error, "cause", None)
    if not isinstance(inner, BaseException):
        inner = error
    name = type(inner).__name__
    if name.startswith("RayTaskError(") and name.endswith(")"):
        name = name[len("RayTaskError(") : -1]
    text = str(inner).strip()
    found = classify(f"{name}: {text}" if text else name)
    told = getattr(error, "traceback_str", None)  # Ray's: the worker's traceback, as text
    if not isinstance(told, str):
        told = "".join(traceback.format_exception(inner))
    return _at(found, user_frame(told))


def from_text(text: str) -> Failure:
    """The failure of a trial from Tune's error.txt: its last failure's exception, without the
    traceback."""
    text = _ANSI.sub("", text)
    blocks = _FAILURE_HEADER.split(text)
    last = blocks[-1].strip("\n")
    lines = last.splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith("  File ")]
    if frames:
        after = lines[frames[-1] + 1 :]
        start = next((i for i, line in enumerate(after) if line and not line[0].isspace()), None)
        lines = after[start:] if start is not None else after
    found = classify("\n".join(lines))
    if _CREATION in last and lines:  # raised in the trainable's constructor: say whose
        found = Failure(found.cause, _in_setup(found.message, _constructed(last)))
    return _at(found, user_frame(last))


def _in_setup(message: str, trainable: str) -> str:
    first, *rest = message.splitlines() or [""]
    return "\n".join([f"{first} (in {trainable} set-up)", *rest])


_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)', flags=re.M)
# Code that is not the user's: the standard library, installed packages (Ray, torch, ...) and
# the app itself. A frame there is how the error travelled, not where the user can fix it.
_NOT_USERS = tuple(
    os.path.normpath(p) + os.sep
    for p in {
        *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")),
        str(Path(__file__).resolve().parent),
    }
)


def user_frame(text: str) -> str | None:
    """The innermost frame of the user's code in a traceback, as `file.py:line` (the file's
    name): the last frame outside the standard library, installed packages and the app."""
    found = None
    for match in _FRAME.finditer(_ANSI.sub("", text)):
        path = os.path.normpath(match.group(1))
        if match.group(1).startswith("<") or path.startswith(_NOT_USERS):
            continue
        if {"site-packages", "dist-packages"} & set(Path(path).parts):
            continue
        found = f"{Path(path).name}:{match.group(2)}"
    return found


def _at(failure: Failure, frame: str | None) -> Failure:
    return Failure(failure.cause, failure.message, frame) if frame else failure


_CREATION = "error raised in its creation task"
_RAY_WRAPPERS = {"RayTaskError", "RayActorError", "ActorDiedError", "TuneError"}
_RAISED = re.compile(r"^(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*(?:Error|Exception|Exit))(?::\s.*)?$")


def classify(text: str) -> Failure:
    """Cause and first lines of an error text that starts with `Type: message` (or is a message
    from Ray about a dead worker). An actor that died in its constructor (an RLlib algorithm or
    env runner failing in set-up) is failed by the error its constructor raised, not "killed"."""
    text = _ANSI.sub("", text)
    inner = _creation_error(text)
    if inner is not None:
        return inner
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    message = "\n".join(lines[:MESSAGE_LINES]) or "unknown error"
    found = _EXCEPTION_LINE.match(lines[0]) if lines else None
    name = found.group(1) if found else ""
    silent = _NO_RESULT.search(lines[0]) if name == NoResultError.__name__ else None
    if silent is not None:
        return Failure(silent.group(0), message)
    lowered = text.lower()
    if (
        name in _OOM_TYPES
        or name.endswith("OutOfMemoryError")
        or any(phrase in lowered for phrase in _OOM_TEXT)
    ):
        return Failure(OUT_OF_MEMORY, message)
    if name in _KILLED_TYPES or any(phrase in lowered for phrase in _KILLED_TEXT):
        return Failure(KILLED, message)
    return Failure(name or "unknown error", message)


def _creation_error(text: str) -> Failure | None:
    """The error an actor's constructor raised, from Ray's "died because of an error raised in
    its creation task" text: the last exception line that is not one of Ray's wrappers."""
    at = text.find(_CREATION)
    if at < 0:
        return None
    raised = []
    for line in text[at:].splitlines():
        found = _RAISED.match(line.strip())
        if found and found.group(1) not in _RAY_WRAPPERS:
            raised.append((found.group(1), line.strip()))
    if not raised:
        return None
    name, line = raised[-1]
    return Failure(name, _in_setup(line, _constructed(text[at:])))


# Tune's classes around a trainable, named as the actor Ray created: `tune.with_resources` (which
# the app gives every trial) and a function trainable's. The user's class is in the actor's repr.
_WRAPPERS = {"ResourceTrainable", "ImplicitFunc", "FunctionTrainable", "Trainable"}
# The runner names each experiment's trainable `<name>_<6 hex digits>` (`runner.experiment._tag`).
_EXPERIMENT_TAG = re.compile(r"_[0-9a-f]{6}$")


def _constructed(text: str) -> str:
    """The user's trainable whose constructor failed, from Ray's "creation task" text: its class
    in the actor's repr (`repr=<ray.tune.trainable.util.Missing_5944ae object ...>`), without
    the app's experiment tag, else the actor's class unless that is one of Tune's wrappers."""
    shown = re.search(r"repr=<(?:[\w.]+\.)?(\w+) object", text)
    if shown is not None and shown.group(1) not in _WRAPPERS:
        return _EXPERIMENT_TAG.sub("", shown.group(1))
    actor = re.search(r"ray::(\w+)\.__init__\(\)", text)
    if actor is not None and actor.group(1) not in _WRAPPERS:
        return actor.group(1)
    return "its"


def non_finite(metric: str, value: object, iteration: int) -> Failure:
    """A trial stopped because its metric became NaN or infinite."""
    return Failure(NON_FINITE, f"{metric} = {value} at iteration {iteration}")


def of_trial(trial: Any) -> Failure | None:
    """A failed trial's failure, from the error file Tune wrote for it (None: none to read)."""
    try:
        with open(trial.error_file, encoding="utf-8", errors="replace") as f:
            return from_text(f.read())
    except (OSError, TypeError, AttributeError):
        return None


# What differs between trials failing for one reason: numbers (a seed, a config value, a pid),
# quoted paths and hex ids.
_TRIAL_SPECIFIC = re.compile(r"0x[0-9a-fA-F]+|(?:[\w.~-]*/)+[\w.-]*|\d+(?:\.\d+)?(?:e-?\d+)?")


def alike(failure: Failure) -> tuple[str, str, str | None]:
    """What makes failures the same: their cause (as the summary groups them), the first line
    of the error with trial-specific numbers, paths and ids blanked, and the user's frame."""
    first = failure.message.splitlines()[0] if failure.message else ""
    return failure.cause, _TRIAL_SPECIFIC.sub("#", first), failure.frame


def same_before_results(trials: Sequence[Any]) -> tuple[Failure, int] | None:
    """The failure every failed trial of a run failed with alike, and how many did, when no
    trial reported a result (`TrialOutcome`s: a search that could not set a trial up); else None."""
    if any(t.iterations for t in trials):
        return None
    failed = [f for t in trials if (f := t.failure) is not None]
    if not failed or len({alike(f) for f in failed}) != 1:
        return None
    return failed[0], len(failed)


# ---- a failed trial's one line, as the progress view prints it

MAX_LINE = 200  # characters of a failed trial's line: one terminal line, not a paragraph
_MIN_ERROR = 40  # characters of the error kept before the line's other parts are cut


@dataclass(frozen=True)
class TrialFiles:
    """A failed trial's files: its folder (`parent`/`name`) and the files in it to read."""

    parent: str  # the run folder, as the run's first line named it
    name: str  # the trial's folder in it
    files: tuple[str, ...]  # the names of the error file, then the output's, in that folder

    def text(self, whole: bool = True) -> str:
        """ "; error.txt, stdout in FOLDER": the folder once, relative to the working directory
        when under it; not `whole`, the trial's folder alone (the run's first line says where
        the run folder is)."""
        names = ", ".join(self.files)
        return f"; {names} in {near(f'{self.parent}/{self.name}') if whole else self.name}"


def failure_line(trial: str, failure: Failure | None, params: str, files: TrialFiles | None) -> str:
    """A failed trial's one line, at most MAX_LINE characters: `trial` (`[e] trial abc_00001`),
    its error (the first line: type and message, which is what gets cut to fit), where in the
    user's code, its searched values, and its folder with the files to read there."""
    if failure is None:
        error, at = "see its error file", ""
    else:
        error = failure.message.splitlines()[0] if failure.message else failure.cause
        at = f" at {failure.frame}" if failure.frame else ""
    head = f"{trial} failed: "
    tail = files.text() if files else ""
    need = min(len(error), _MIN_ERROR)  # the error is cut to this before anything else is
    room = MAX_LINE - len(head) - len(at) - len(params) - len(tail)
    if room < need and files is not None:
        tail = files.text(whole=False)
        room = MAX_LINE - len(head) - len(at) - len(params) - len(tail)
    if room < need:
        params = _clip(params, max(0, len(params) - (need - room)))
        room = MAX_LINE - len(head) - len(at) - len(params) - len(tail)
    return _clip(f"{head}{_clip(error, max(room, need))}{at}{params}{tail}", MAX_LINE)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def near(path: str) -> str:
    """`path` relative to the working directory when under it (a URI stays whole)."""
    here = os.getcwd().rstrip(os.sep) + os.sep
    return path[len(here) :] if path.startswith(here) else path
