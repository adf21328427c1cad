"""SIGTERM and SIGHUP interrupt a run the way Ctrl-C does: Tune's state saved, the summary marked
interrupted, the resume command printed, and exit 128 + the signal's number (143, 129). So does a
failed write of the app's own files inside Tune's loop (`stops_on_write_error`: a full disk).

`timeout`, `docker stop`, Kubernetes and Slurm end a job with SIGTERM, and a closed terminal
sends SIGHUP. Python's default for both ends the process at once: the run exited 1 ("a trial
failed") with neither the summary nor the resume hint. While `as_interrupts` holds, either signal
is passed on as SIGINT, which Tune's own handler turns into a graceful stop (and which is a
KeyboardInterrupt before Tune has started). `ray.init` installs Ray's own SIGTERM handler in
the driver (it prints a C++ stack dump and ends the process), so `reclaim` puts ours back once
Ray has started.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

SIGNALS = (signal.SIGTERM, signal.SIGHUP)
CTRL_C_EXIT = 130

_received: list[int] = []
_active: list[bool] = []  # as_interrupts holds
_write_errors: list[OSError] = []  # writes of the app's files that failed in this run

P = ParamSpec("P")
R = TypeVar("R")


def _forward(signum: int, frame: object) -> None:
    _received.append(signum)
    signal.raise_signal(signal.SIGINT)


@contextlib.contextmanager
def as_interrupts() -> Iterator[None]:
    """While this holds (in the main thread), SIGTERM and SIGHUP act as Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only; its caller installed the handlers
        return
    if not _active:  # the outermost: a new run
        _received.clear()
        _write_errors.clear()
    saved = {s: signal.signal(s, _forward) for s in SIGNALS}
    _active.append(True)
    try:
        yield
    finally:
        _active.pop()
        for s, handler in saved.items():
            signal.signal(s, handler)


def reclaim() -> None:
    """Install the handlers again after something replaced them (`ray.init` does)."""
    if _active and threading.current_thread() is threading.main_thread():
        for s in SIGNALS:
            signal.signal(s, _forward)


def exit_code() -> int:
    """The exit code of an interrupted run: 128 + the signal that ended it (130 for Ctrl-C)."""
    return 128 + _received[-1] if _received else CTRL_C_EXIT


def received() -> str | None:
    """The name of the signal that interrupted the run (SIGTERM, SIGHUP), if one did."""
    return signal.Signals(_received[-1]).name if _received else None


def stops_on_write_error(hook: Callable[P, R]) -> Callable[P, R | None]:
    """A hook Tune calls in its loop that writes the run's own files (results.jsonl rows, the
    journal, TensorBoard events, clones.jsonl): an OSError from it (a full disk, a folder made
    read-only) ends the run the way Ctrl-C does, saving Tune's state, instead of escaping into
    Tune, which ends the run with its traceback and without saving. `write_error` has it."""

    @functools.wraps(hook)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return hook(*args, **kwargs)
        except OSError as err:
            _stop_for(err)
            return None

    return guarded


def _stop_for(error: OSError) -> None:
    first = not _write_errors
    _write_errors.append(error)
    # Tune's SIGINT handler, installed while its loop runs in the main thread, sets the flag that
    # ends the loop after this step and saves the state, once; a second SIGINT would be a
    # KeyboardInterrupt in the middle of Tune's loop. Outside the loop there is nothing to stop.
    tune_listens = signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    if first and tune_listens and threading.current_thread() is threading.main_thread():
        signal.raise_signal(signal.SIGINT)


def write_error() -> OSError | None:
    """The first write of the run's own files that failed in Tune's loop, if one did."""
    return _write_errors[0] if _write_errors else None


def forget_write_errors() -> None:
    """A new experiment starts in this process (a Ray worker runs one experiment after another)."""
    _write_errors.clear()
