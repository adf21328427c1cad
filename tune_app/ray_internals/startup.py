"""Starting a local Ray or joining one, and Tune's trial actors on Ray's prestarted workers.

Each helper but `signals_left_to_the_driver` (Python's own signal machinery) patches one private
Ray symbol (listed in `tune_app.ray_internals`), and falls back to Ray's own behaviour when the
symbol is not there.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import ray

# What Tune gives each trial actor as its runtime env (ray.tune.execution.class_cache, checked
# once Tune is imported): a local Ray's workers inherit it instead.
TUNE_TRIAL_ENV = {"PL_DISABLE_FORK": "1"}


@contextlib.contextmanager
def trials_on_prestarted_workers() -> Iterator[None]:
    """Let trial actors start in the workers a local Ray starts with its node.

    Tune gives every trial actor a runtime env of a few environment variables (PL_DISABLE_FORK,
    and AWS keys or Train's settings where the driver has them). No worker Ray prestarted has
    that env, so each trial waited for a fresh worker process: 1.5-2 s before the first result
    on 2 cores. A local Ray's workers inherit the driver's environment, where `_ray_for` set
    Tune's variables before starting Ray: so, while this holds, Tune's actors ask for no runtime
    env of their own. (Also in an experiment's own task: workers inherit the same environment.)
    A patch: Tune has no option for its trial actors' runtime env. Its worth, measured again on
    a 2-core machine at load 7-20 (grid.yaml --smoke, 4 runs each way, alternated): medians
    40.6 s with it, 44.8 s without; paired differences +21.5, -1.0, -3.7, +1.1 s, too noisy to
    drop it on."""
    from ray.tune.execution import class_cache

    if not class_cache.DEFAULT_ENV_VARS.items() <= os.environ.items():
        yield  # Tune now sets more than TUNE_TRIAL_ENV: its actors keep their runtime env
        return
    saved = {
        name: getattr(class_cache, name, None)
        for name in ("DEFAULT_ENV_VARS", "ENV_VARS_TO_PROPAGATE")
    }
    class_cache.DEFAULT_ENV_VARS = {}
    class_cache.ENV_VARS_TO_PROPAGATE = set()
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(class_cache, name, value)


@contextlib.contextmanager
def daemons_in_own_session() -> Iterator[bool]:
    """Start a local Ray's processes (GCS, raylet and the workers they start) in a session of
    their own, so a signal sent to the driver's process group reaches the driver alone, and
    with SIGTERM unblocked (`signals_left_to_the_driver` blocks it in the driver meanwhile).

    `timeout` and Slurm signal the whole process group, and a closed terminal hangs up its
    session: Ray's daemons died with the driver's SIGTERM or SIGHUP (Ray blocks only SIGINT in
    them), and the driver, stopping the run as Ctrl-C does, then lost its GCS ("Failed to
    connect to GCS within 60 seconds") and saved nothing. They still end with the driver:
    `ray.shutdown` stops them, and Ray ties them to the driver's life where the kernel can.
    No hook of Ray's starts its processes otherwise: the class it starts them with is replaced.
    Yields whether it holds (not where Ray has no such class, nor on Windows)."""
    services: Any = getattr(ray._private, "services", None)
    original = getattr(services, "ConsolePopen", None)
    if original is None or sys.platform == "win32":
        yield False
        return

    class InOwnSession(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("start_new_session", True)
            kwargs["preexec_fn"] = functools.partial(_sigterm_unblocked, kwargs.get("preexec_fn"))
            super().__init__(*args, **kwargs)

    services.ConsolePopen = InOwnSession
    try:
        yield True
    finally:
        services.ConsolePopen = original


def _sigterm_unblocked(then: Callable[[], Any] | None) -> None:
    """In a process Ray starts, before it runs: SIGTERM unblocked (a child inherits the
    driver's mask, which blocks it while Ray starts), then Ray's own set-up (`then`)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    if then is not None:
        then()


@contextlib.contextmanager
def node_on_loopback() -> Iterator[None]:
    """Start a local Ray whose node address is 127.0.0.1, so its GCS, raylet, object manager and
    workers listen on loopback only: nothing but this machine uses them, and an open,
    unauthenticated Ray port is how Ray clusters have been taken over.

    Ray binds its servers to the node's address, which it takes from the network on Linux and
    turns any loopback address given (`_node_ip_address`) back into; its single-machine mode
    (`ENABLE_RAY_CLUSTER` off, as on macOS and Windows) uses 127.0.0.1. That mode holds while
    the node starts; its workers are told the address. A patch: `ray.init` has no option for
    it, and its variable (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER) is read once, as Ray is imported."""
    from ray._private import ray_constants

    if not hasattr(ray_constants, "ENABLE_RAY_CLUSTER"):
        yield
        return
    saved = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved


@contextlib.contextmanager
def signals_left_to_the_driver(block: bool = True) -> Iterator[None]:
    """Start or join Ray without Ray taking over the driver's SIGTERM.

    `ray.init` installs a SIGTERM handler that exits 15 with no word, its node one that stops
    the daemons and exits 1, and its core worker a C++ failure handler that prints a stack dump
    for SIGTERM: a job stopped while Ray started ended in one of those, not as an interrupted
    run. While this holds, SIGTERM is blocked in the driver's thread (Python's
    `signal.pthread_sigmask`: one that comes waits); after, the driver's handler of before
    (`tune_app.interrupts`'s, or the caller's) is installed again, over Ray's, and SIGTERM
    unblocked, so one that came meanwhile reaches it. The threads Ray starts meanwhile keep it
    blocked (it is the driver's thread's to handle); the processes it starts unblock it
    (`daemons_in_own_session`; `block` False where it does not hold: Ray's handlers then act on
    a SIGTERM while Ray starts). Off the main thread Python installs no handler: nothing to do."""
    if sys.platform == "win32" or threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.getsignal(signal.SIGTERM)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM} if block else set())
    try:
        yield
    finally:
        if handler is not None:  # None: one installed outside Python, which cannot be put back
            signal.signal(signal.SIGTERM, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
