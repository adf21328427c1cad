"""The app's exceptions: one base class, and the messages users read when something is wrong."""

from __future__ import annotations

import difflib
import errno
import os
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Self


class TuneAppError(Exception):
    """Base class of every error the CLI turns into a message and an exit code (2 by default)."""

    exit_code = 2


class SpecError(TuneAppError):
    """A spec file (or a command-line argument standing in for one) is wrong.

    Carries where (file and dotted key path), what (rule and actual value), what is allowed and a
    suggestion, so the one-line message tells the user how to fix it.
    """

    def __init__(
        self,
        what: str,
        *,
        file: str | None = None,
        path: str | None = None,
        allowed: Iterable[str] | str | None = None,
        suggestion: str | None = None,
        multiline: bool = False,
    ) -> None:
        self.what = what
        self.multiline = multiline
        self.file = file
        self.path = path
        self.allowed = _as_text(allowed)
        self.suggestion = suggestion
        super().__init__(self.message())

    def with_file(self, file: str) -> SpecError:
        """Return the same error located in `file` (the loader knows the file, validators don't)."""
        if self.file is None:
            self.file = file
            self.args = (self.message(),)
        return self

    def under(self, prefix: str) -> SpecError:
        """Return the same error with its key path placed under `prefix` (an experiment's path)."""
        self.path = f"{prefix}.{self.path}" if self.path else prefix
        self.args = (self.message(),)
        return self

    def message(self) -> str:
        path = clip(self.path, MAX_PATH_CHARS) if self.path else None
        where = ": ".join(part for part in (self.file, path) if part)
        what = self.what if self.multiline else clip(self.what, MAX_PART_CHARS)
        text = f"{where}: {what}" if where else what
        if self.allowed:
            text += f"; allowed: {clip(self.allowed, MAX_ALLOWED_CHARS)}"
        if self.suggestion:
            text += f"; {clip(self.suggestion, MAX_PART_CHARS)}"
        # One line: control characters from the user's values (a key holding "\n") are shown
        # escaped, so they cannot break or forge lines of the message.
        return text if self.multiline else text.translate(_ESCAPES)

    def __str__(self) -> str:
        return self.message()


class SpecErrors(SpecError):
    """Several problems found in one pass over a spec: the message is one line per problem."""

    def __init__(self, errors: list[SpecError]) -> None:
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.what, file=first.file, path=first.path)

    def with_file(self, file: str) -> SpecError:
        for err in self.errors:
            err.with_file(file)
        self.file = self.file or file
        self.args = (self.message(),)
        return self

    def under(self, prefix: str) -> SpecError:
        for err in self.errors:
            err.under(prefix)
        self.path = self.errors[0].path
        self.args = (self.message(),)
        return self

    def message(self) -> str:
        return "\n".join(err.message() for err in self.errors)


class RunStopped(TuneAppError):
    """A run stopped before its end for a cause neither the input's nor a trial's, Tune's state
    saved where it could be, so `resume` continues it once the cause is gone. Callers act on it
    alike: they print the summary so far (`summaries`, `result`) and say how to resume
    (`resumed_by`). Each kind says what stopped it (`stopped_by`) and what to do next (`then`); the
    message is one line of both."""

    def __init__(self, reason: Any, resume: str | None = None, summaries: Any = ()) -> None:
        self.reason = reason
        self.resume = resume  # the command that continues the run; None when nothing ran yet
        self.summaries = list(summaries)  # RunSummary of each experiment, when all got one
        self.result: Any = None  # the api's RunResult of those summaries, for printing
        super().__init__(self.message())

    def resumed_by(self, command: str | None) -> Self:
        """The same error, saying how to continue the run (None: nothing ran, run it again)."""
        self.resume = command
        self.args = (self.message(),)
        return self

    def stopped_by(self) -> str:
        """What stopped the run."""
        raise NotImplementedError

    def then(self) -> str:
        """What to do now: with `resume`, fix the cause and resume; without, run it again."""
        raise NotImplementedError

    def message(self) -> str:
        return f"{self.stopped_by()}; {self.then()}".translate(_ESCAPES)

    def __str__(self) -> str:
        return self.message()

    def __reduce__(self) -> tuple[Any, ...]:
        # Raised in an experiment's own Ray actor, it travels back to the driver by pickle.
        return (type(self), (self.reason, self.resume, self.summaries))


class StorageError(RunStopped):
    """Writing the run's own files failed (a full disk, a quota, a folder made read-only). The
    run was stopped as Ctrl-C stops it, its state saved where the storage allowed, so it can be
    resumed once the cause is fixed.

    Exit 74, sysexits' EX_IOERR ("an error occurred while doing I/O on some file"): neither a
    failed trial (1) nor bad input (2), and a job script can tell it from an interruption (130,
    143) to free space and resume rather than give up.
    """

    exit_code = 74

    def __init__(self, error: OSError, resume: str | None = None, summaries: Any = ()) -> None:
        self.error = error
        super().__init__(error, resume, summaries)

    def stopped_by(self) -> str:
        return _failed(self.error)

    def then(self) -> str:
        fix = _STORAGE_FIXES.get(self.error.errno or 0, "fix the storage")
        if self.resume is None:
            return f"nothing ran: {fix}, then run it again"
        return f"the run stopped with its state saved: {fix}, then {self.resume}"


class WriteError(TuneAppError):
    """A file the app writes for the user (a report and its figures, an exported spec, a JUnit
    file) could not be written: a full disk, a read-only folder. Nothing half-written is left
    (each is written under a temporary name and renamed). Exit 74, as a run's StorageError."""

    exit_code = 74

    def __init__(self, error: OSError) -> None:
        self.error = error
        fix = _STORAGE_FIXES.get(error.errno or 0, "fix the storage")
        super().__init__(
            f"{_failed(error)}; nothing was written: {fix} (or write elsewhere), then run the "
            "command again"
        )


class TuneFailure(RunStopped):
    """The run stopped for a cause that is neither a trial's (a trial's error fails that trial
    alone) nor the input's: the Ray head (its GCS) was lost, or Tune's own loop raised. The state
    Tune saved last is kept and the summary marks the run interrupted, so `resume` continues
    from there.

    Exit 75, sysexits' EX_TEMPFAIL ("a temporary failure ... the user is invited to retry"):
    the search is not known to be bad, so not 1 (a failed trial, an unmet expect), and a job
    script can tell it from both and resume, as it frees space and resumes after 74.
    """

    exit_code = 75

    def __init__(self, cause: str, resume: str | None = None, summaries: Any = ()) -> None:
        self.cause = cause
        super().__init__(cause, resume, summaries)

    @classmethod
    def head_lost(cls, address: str) -> TuneFailure:
        """The Ray head at `address` stopped answering while Tune's loop ran."""
        return cls(f"the Ray head (GCS) at {address} stopped answering")

    @classmethod
    def node_lost(cls, address: str) -> TuneFailure:
        """The Ray head at `address` answers that this driver's node is dead."""
        return cls(f"the Ray head (GCS) at {address} reports this driver's Ray node dead")

    @classmethod
    def loop_raised(cls, error: BaseException, summaries: Any = ()) -> TuneFailure:
        """Tune's own loop raised `error`: its type and first line name the cause."""
        first = first_line(error)
        what = f"{type(error).__name__}: {first}" if first else type(error).__name__
        return cls(f"Tune's own loop failed ({clip(what, MAX_PART_CHARS)})", None, summaries)

    def stopped_by(self) -> str:
        return self.cause

    def then(self) -> str:
        if self.resume is None:
            return "nothing was saved to resume: run it again"
        return f"the state is saved. Continue with: {self.resume}"


def _failed(err: OSError) -> str:
    """A failed write in words: its file, what the system said and its errno."""
    where = f"{os.fsdecode(err.filename)}: " if err.filename is not None else ""
    number = f" (errno {err.errno})" if err.errno is not None else ""
    return f"{where}{err.strerror or str(err)}{number}"


_STORAGE_FIXES = {
    errno.ENOSPC: "free space",
    errno.EDQUOT: "free space or raise the quota",
    errno.EROFS: "make the file system writable",
    errno.EACCES: "make the folder writable",
    errno.EPERM: "make the folder writable",
}


class Collector:
    """Gathers the SpecErrors of independent checks, so one pass reports every problem."""

    def __init__(self) -> None:
        self.errors: list[SpecError] = []

    @contextmanager
    def check(self) -> Iterator[None]:
        """Run a check; its SpecError (or several) is kept instead of raised."""
        try:
            yield
        except SpecErrors as err:
            self.errors.extend(err.errors)
        except SpecError as err:
            self.errors.append(err)

    def raise_any(self) -> None:
        """Raise what was gathered: one error as itself, several as SpecErrors."""
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise SpecErrors(self.errors)


# A message shows the user's values, which a hostile or broken spec can make megabytes long: each
# part of a message is cut to these lengths, keeping both ends (where a value's difference shows).
MAX_PART_CHARS = 400
MAX_PATH_CHARS = 200
MAX_ALLOWED_CHARS = 1_000


def first_line(text: object) -> str:
    """The first line of `text` (an error, a YAML problem), stripped; "" where it is blank. Of a
    traceback (a TuneError's text is one), the last: the error, not "Traceback (...):"."""
    lines = str(text).strip().splitlines()
    if lines and lines[0].startswith("Traceback (most recent call last)"):
        lines = lines[-1:]
    return lines[0].rstrip() if lines else ""


def error_line(err: BaseException) -> str:
    """An exception's first line, or its type's name where its text is blank."""
    return first_line(err) or type(err).__name__


def clip(text: str, limit: int) -> str:
    """`text`, or its two ends with the number of characters left out between them."""
    if len(text) <= limit:
        return text
    keep = (limit - 30) // 2
    return f"{text[:keep]} ...({len(text) - 2 * keep:,} characters)... {text[-keep:]}"


# What a terminal acts on, or shows as other text, in text a command prints from a spec or a
# run's files (a folder received from someone may hold an escape sequence in a trial's error or a
# value): C0 and C1 controls but the line breaks and tabs of a layout, and the bidirectional
# overrides.
_SHOWN = {
    c: ascii(chr(c))[1:-1]
    for c in [*range(32), *range(127, 160), 0x61C, 0x200E, 0x200F, *range(0x202A, 0x202F)]
    + [*range(0x2066, 0x206A)]
    if chr(c) not in "\n\t"
}
# An error's one line: the same, and its line breaks and tabs too.
_ESCAPES = {**_SHOWN, ord("\n"): "\\n", ord("\t"): "\\t"}


def printable(text: str) -> str:
    """`text` as a command prints it: what a terminal would act on shown escaped (`\x1b`)."""
    return text.translate(_SHOWN)


def _as_text(allowed: Iterable[str] | str | None) -> str | None:
    if allowed is None or isinstance(allowed, str):
        return allowed
    return ", ".join(str(a) for a in allowed)


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A 'did you mean X?' hint for a near-miss of `word` among `choices`, or None.

    A choice that is `word` in another case (`Cartpole-v1` -> `CartPole-v1`, not the namespaced
    `phys2d/CartPole-v1`) is what was meant, and is the only hint. Next, a choice that is `word`
    under a group (`episode_return_mean` -> `env_runners/episode_return_mean`, `lr` ->
    `optim.lr`) is the only hint (shortest path first): a similar-looking key beside it
    (`episode_len_mean`) would mislead. Otherwise prefixes count first (`grace` ->
    `grace_period`), then difflib's similarity, case kept (lowercased, `ALE/Fake-v5` comes near
    `Walker2d-v5`).
    """
    word, options = str(word), [str(c) for c in choices]
    low = word.lower()
    same = [c for c in options if c.lower() == low]
    grouped = sorted(
        (c for c in options if c.lower().endswith((f"/{low}", f".{low}"))),
        key=lambda c: (len(c), c),
    )
    if same or grouped:
        return "did you mean " + " or ".join(repr(c) for c in (same or grouped)[:3]) + "?"
    prefixed = [c for c in options if len(low) >= 3 and c.lower().startswith(low)]
    close = difflib.get_close_matches(word, options, n=3, cutoff=0.6)
    picks = list(dict.fromkeys(prefixed + close))[:3]
    if not picks:
        return None
    return "did you mean " + " or ".join(repr(c) for c in picks) + "?"


def import_failure(err: BaseException) -> str:
    """An import's failure in one short text: its type, its first line and where it was raised
    (`RuntimeError: broken install (at cmaes/__init__.py:3)`), the frame deepest in the
    imported code (importlib's own frames left out); a SyntaxError's own file and line."""
    text = str(err.msg) if isinstance(err, SyntaxError) else str(err)
    first = first_line(text)
    what = clip(f"{type(err).__name__}: {first}" if first else type(err).__name__, MAX_PART_CHARS)
    if isinstance(err, SyntaxError) and err.filename:
        file, line = err.filename, err.lineno
    else:
        frames = [
            f for f in traceback.extract_tb(err.__traceback__) if "importlib" not in f.filename
        ]
        if not frames:
            return what
        file, line = frames[-1].filename, frames[-1].lineno
    return f"{what} (at {_short_file(file)}:{line})"


def _short_file(file: str) -> str:
    """A source file as a reader finds it: under the working directory, relative to it; in an
    installed package, from its package folder (`cmaes/__init__.py`); else its last two parts."""
    path = os.path.abspath(file)
    here = os.getcwd().rstrip(os.sep) + os.sep
    if path.startswith(here):
        return path[len(here) :]
    for marker in ("site-packages", "dist-packages"):
        if f"{os.sep}{marker}{os.sep}" in path:
            return path.split(f"{os.sep}{marker}{os.sep}", 1)[1]
    return os.sep.join(path.split(os.sep)[-2:])
