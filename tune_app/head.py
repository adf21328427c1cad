"""The Ray head watched while a run is on it: a head (its GCS) that stops answering ends the run
with its summary written and the resume command, instead of Ray's own line and exit 1.

Ray has no event for a lost GCS, and nothing to catch: every process of the cluster retries it
for `RAY_gcs_rpc_server_reconnect_timeout_s` (60 s by default), then terminates itself from C++
("Failed to connect to GCS within 60 seconds ... The program will terminate"), exit 1. Meanwhile
the driver's main thread is stuck in whichever call of Tune's loop asks the GCS (a placement
group's table, an actor's removal), so no signal handler of Python's runs either. So a thread
knocks on the GCS's port (the address Ray's public runtime context gives) once a second, and
when it stays unreachable for half of that window calls `on_lost` with the failure found,
which has the other half to write what it must and end the process. A head that comes back
sooner (a GCS with fault tolerance restarting) is never noticed.

A head going away kills the trials' actors on its node at once, and Tune, seconds later, fails
them as if by their own code (ActorDiedError): with `max_failures: 0` the search ended as a
failed one (exit 1) long before the watch's grace, and resume did not run them again. So each
trial failure first asks `lost_with_head`, which ends the run as the watch would when the head
is lost at that moment (its GCS unreachable, or this driver's node dead by the GCS's word),
before the failure is recorded anywhere: Tune's saved state still has the trial running.

With several experiments, each is driven by a Ray actor of its own, which watches the head too:
a trial of its failing with the head ends it at once (`leave`), and the run's driver, finding
an experiment's driver gone, asks `lost_with_head` and ends the run for all of them.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NoReturn

from tune_app.command import resume_command
from tune_app.errors import TuneFailure
from tune_app.saved_state import earlier_wall_time, saved_summary

if TYPE_CHECKING:
    from tune_app.plan.types import Plan

# Ray's own setting (read from the environment by every Ray process as it starts).
RECONNECT_ENV = "RAY_gcs_rpc_server_reconnect_timeout_s"
RECONNECT_DEFAULT_S = 60.0
PROBE_PERIOD_S = 1.0
_watching: HeadWatch | None = None  # this process's watch, for `lost_with_head`


def grace_s() -> float:
    """How long the GCS may be unreachable before the head is taken as lost: half of Ray's
    reconnect window (30 s of the default 60 s), the other half left to write the summary."""
    try:
        window = float(os.environ.get(RECONNECT_ENV, RECONNECT_DEFAULT_S))
    except ValueError:
        window = RECONNECT_DEFAULT_S
    return max(2 * PROBE_PERIOD_S, window / 2)


class HeadWatch:
    """Knocks on `address` (host:port) every PROBE_PERIOD_S; unreachable for `grace` seconds in
    a row, it calls `on_lost` (in its own thread) once."""

    def __init__(
        self, address: str, on_lost: Callable[[TuneFailure], None], grace: float | None = None
    ) -> None:
        host, _, port = address.rpartition(":")
        self.address = address
        self._target = (host.strip("[]"), int(port))
        self._on_lost = on_lost
        self.grace = grace_s() if grace is None else grace
        self._done = threading.Event()
        self._once = threading.Lock()  # held by the caller of `on_lost`, which ends the process
        self._thread = threading.Thread(target=self._watch, name="ray head watch", daemon=True)

    def reachable(self) -> bool:
        try:
            with socket.create_connection(self._target, timeout=PROBE_PERIOD_S):
                return True
        except OSError:
            return False

    def lost_now(self) -> TuneFailure | None:
        """The failure, if the head is lost at this moment: its GCS unreachable, or this
        process's node dead by the GCS's word (a head stopped raylet first, as `ray stop` does)."""
        if not self.reachable():
            return TuneFailure.head_lost(self.address)
        import ray

        here = ray.get_runtime_context().get_node_id()
        if any(node["NodeID"] == here and node["Alive"] for node in ray.nodes()):
            return None
        return TuneFailure.node_lost(self.address)

    def lost(self, failure: TuneFailure) -> None:
        """Call `on_lost` once; a second caller waits for the first (which ends the process)."""
        with self._once:
            if not self._done.is_set():
                self._done.set()
                self._on_lost(failure)

    def _watch(self) -> None:
        since: float | None = None
        while not self._done.wait(PROBE_PERIOD_S):
            if self.reachable():
                since = None
                continue
            now = time.monotonic()
            since = now if since is None else since
            if now - since >= self.grace:
                self.lost(TuneFailure.head_lost(self.address))
                return

    def start(self) -> HeadWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._done.set()


@contextlib.contextmanager
def watched(address: str | None, on_lost: Callable[[TuneFailure], None]) -> Iterator[None]:
    """While this holds, the head at `address` is watched (None or empty: nothing to watch)."""
    if not address:
        yield
        return
    global _watching
    _watching = HeadWatch(address, on_lost).start()
    try:
        yield
    finally:
        _watching.stop()
        _watching = None


def lost_with_head() -> None:
    """A trial (or an experiment's driver) failed: if the watched head is lost now, the run ends
    as for a lost head (no return) before the failure is recorded; it died with the cluster."""
    watch = _watching
    if watch is not None and (failure := watch.lost_now()) is not None:
        watch.lost(failure)


def leave(failure: TuneFailure) -> NoReturn:
    """`on_lost` in an experiment's own driver (an actor): it ends at once, nothing recorded,
    for the run's driver to end the run (`end_for_lost_head`, which writes the summaries)."""
    os._exit(failure.exit_code)


def end_for_lost_head(
    plan: Plan, began: float, given: str | None, failure: TuneFailure
) -> NoReturn:
    """The Ray head was lost (`failure`, found by `HeadWatch`): each started experiment's
    summary from the state Tune saved last, one line with the resume command (with `given`, the
    run's --address), and the process ended with TuneFailure's code, as Ray would end it moments
    later with 1. The main thread cannot be asked to unwind: it waits on the GCS inside Tune's
    loop."""
    started = [ep for ep in plan.experiments if ep.folder.started]
    summaries = []
    for ep in started:
        earlier, finished = earlier_wall_time(ep)
        if not finished:  # one that ended before the head went keeps its summary
            summaries.append(saved_summary(ep, earlier + time.monotonic() - began))
    failure.summaries = [s for s in summaries if s is not None]
    failure.resumed_by(resume_command([e.location for e in started], given) if started else None)
    sys.stdout.flush()
    print(f"error: {failure}", file=sys.stderr, flush=True)
    os._exit(failure.exit_code)
