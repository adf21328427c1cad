"""SIGTERM and SIGHUP interrupt a run the way Ctrl-C does: Tune's state saved, the summary marked
interrupted, the resume command printed, and exit 128 + the signal's number (143, 129). So does a
failed write of the app's own files inside Tune's loop (`stops_on_write_error`: a full disk).

`timeout`, `docker stop`, Kubernetes and Slurm end a job with SIGTERM, and a closed terminal
sends SIGHUP. Python's default for both ends the process at once: the run exited 1 ("a trial
failed") with neither the summary nor the resume hint. While `as_interrupts` holds, either signal
is handed to whatever handles Ctrl-C at that moment: Tune's own handler while its loop runs (a
graceful stop), else Python's (a KeyboardInterrupt). It is called, not raised as SIGINT: a
process started with SIGINT ignored (`cmd &` in a script) would drop a raised SIGINT, and the
run went on to its end; so `as_interrupts` also gives such a process Python's Ctrl-C handler.

Ray installs SIGTERM handlers of its own while the driver starts or joins it (one exits 15
silently, one prints a C++ stack dump); `ray_internals.startup.signals_left_to_the_driver`
keeps them out, and `reclaim` puts ours back should one get through. A signal while the summary
is written waits for it (`deferred`): the folder is whole, then the run ends as interrupted.

A KeyboardInterrupt raised where Python cannot raise it (in a finalizer, a weakref callback, or
an at-fork hook such as logging's, which runs in the parent after each fork of Ray's start-up)
is printed as "Exception ignored in ..." and dropped, and the run went on to its end. While
`as_interrupts` holds, `sys.unraisablehook` knows the handlers' own KeyboardInterrupt and
delivers its signal again: the run acts on it at the next point where it can.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

SIGNALS = (signal.SIGTERM, signal.SIGHUP)
CTRL_C_EXIT = 130

_received: list[int] = []
_active: list[bool] = []  # as_interrupts holds
_write_errors: list[OSError] = []  # writes of the app's files that failed in this run
_deferred: list[list[int]] = []  # signals held while `deferred` holds
_raised: list[tuple[BaseException, int]] = []  # the last KeyboardInterrupt raised, its signal
_hooks: list[Any] = []  # sys.unraisablehook before as_interrupts
_in_hook: list[bool] = []  # `_unraisable` is running: a signal now would be dropped again

P = ParamSpec("P")
R = TypeVar("R")


def _forward(signum: int, frame: Any) -> None:
    _received.append(signum)
    if _deferred:
        _deferred[-1].append(signum)
        return
    _as_ctrl_c(frame)


def _ctrl_c(signum: int, frame: Any) -> None:
    """SIGINT outside Tune's loop: Python's own behaviour, or deferred like the others."""
    if _deferred:
        _deferred[-1].append(signum)
        return
    _interrupt(signum)


def _as_ctrl_c(frame: Any) -> None:
    """Do what Ctrl-C does now: Tune's handler while its loop runs, else a KeyboardInterrupt."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and handler is not _ctrl_c:
        handler(signal.SIGINT, frame)
    else:
        _interrupt(_received[-1] if _received else signal.SIGINT)


def _interrupt(signum: int) -> None:
    if _in_hook:  # raised here, in the hook, it would be dropped: sent again once it is left
        _send_later(signum)
        return
    error = KeyboardInterrupt()
    _raised[:] = [(error, signum)]
    raise error


def _unraisable(info: Any) -> None:
    """`sys.unraisablehook` while `as_interrupts` holds: the handlers' KeyboardInterrupt,
    dropped where Python could not raise it, has its signal sent again to the main thread a
    moment later, from a thread of its own (raised here, in the hook, it would be dropped
    again), so that it lands in the code that comes next; anything else is printed as before."""
    if not (_raised and info.exc_value is _raised[-1][0]):
        _hooks[-1](info)
        return
    _, signum = _raised.pop()
    _in_hook.append(True)
    try:
        _send_later(signum)
    finally:
        _in_hook.pop()


def _send_later(signum: int) -> None:
    """`signum` to the main thread from a thread of its own, once `_unraisable` has returned."""
    main = threading.main_thread().ident
    assert main is not None

    def send() -> None:
        while _in_hook:
            time.sleep(0.001)
        time.sleep(0.005)  # the hook has returned to the code that comes next
        signal.pthread_kill(main, signum)

    threading.Thread(target=send, name=f"{signal.Signals(signum).name} again", daemon=True).start()


@contextlib.contextmanager
def as_interrupts() -> Iterator[None]:
    """While this holds (in the main thread), SIGTERM and SIGHUP act as Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only; its caller installed the handlers
        return
    outermost = not _active
    if outermost:  # a new run
        _received.clear()
        _write_errors.clear()
        _hooks.append(sys.unraisablehook)
        sys.unraisablehook = _unraisable
    saved = {s: signal.signal(s, _forward) for s in SIGNALS}
    # Python's Ctrl-C handler even where the process began with SIGINT ignored (or another
    # handler the caller set, which comes back at the end).
    saved[signal.SIGINT] = signal.signal(signal.SIGINT, _ctrl_c)
    _active.append(True)
    try:
        yield
    finally:
        _active.pop()
        for s, handler in saved.items():
            signal.signal(s, handler)
        if outermost:
            sys.unraisablehook = _hooks.pop()
            _raised.clear()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """While this holds, SIGTERM, SIGHUP and SIGINT wait: what it guards (the summary) is
    written whole, then the first of them interrupts as it would have (a KeyboardInterrupt)."""
    if not _active or threading.current_thread() is not threading.main_thread():
        yield
        return
    waiting: list[int] = []
    saved = signal.signal(signal.SIGINT, _ctrl_c)  # Tune's, had its loop left it behind
    _deferred.append(waiting)
    try:
        yield
    finally:
        _deferred.pop()
        signal.signal(signal.SIGINT, saved)
    if waiting:
        raise KeyboardInterrupt


def reclaim() -> None:
    """Install the handlers again after something replaced them (`ray.init` does)."""
    if _active and threading.current_thread() is threading.main_thread():
        for s in SIGNALS:
            signal.signal(s, _forward)
        if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
            signal.signal(signal.SIGINT, _ctrl_c)


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
    handler = signal.getsignal(signal.SIGINT)
    tune_listens = callable(handler) and handler not in (signal.default_int_handler, _ctrl_c)
    if first and tune_listens and threading.current_thread() is threading.main_thread():
        _as_ctrl_c(None)


def write_error() -> OSError | None:
    """The first write of the run's own files that failed in Tune's loop, if one did."""
    return _write_errors[0] if _write_errors else None


def forget_write_errors() -> None:
    """A new experiment starts in this process (a Ray worker runs one experiment after another)."""
    _write_errors.clear()
