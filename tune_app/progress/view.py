"""The driver's view of a run's progress: a live table of where each experiment stands on a
terminal (`View`), else a plain line of it now and then (CI logs), and the relay of experiments
run side by side in their own tasks (`Relay`, `ProgressBoard`, `pump`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tune_app import eta

if TYPE_CHECKING:
    from tune_app.progress import Snapshot

# Where the output is no terminal (a CI log, `nohup`), a line of where each experiment stands this
# often, between the lines of trials ending: a long RL trial ends minutes apart. Snapshots come
# every SNAPSHOT_PERIOD_S, so a line is never more than 25.5 s after the last.
PLAIN_PERIOD_S = 25.0


def describe(snap: Snapshot) -> str:
    """One plain line for a snapshot."""
    of = f"/{snap.total}" if snap.total else ""
    parts = [
        f"{snap.done}{of} done, {snap.running} running, {snap.pending} pending, "
        f"{snap.errored} errored"
    ]
    if snap.best is not None:
        parts.append(f"best {snap.metric} = {snap.best:.6g} ({snap.best_params})")
    if snap.front:
        first = snap.point[0][0]
        values = ", ".join(f"{name} = {value:.6g}" for name, value in snap.point)
        parts.append(f"front of {snap.front}, best on {first}: {values} ({snap.best_params})")
    parts.append(f"{eta.clock(snap.elapsed_s)} elapsed")
    left = snap.remaining_s
    if (left is not None or snap.unknown_eta) and snap.done + snap.errored < (snap.total or 0):
        parts.append(eta.UNKNOWN if left is None else f"~{eta.clock(left)} left")
    if snap.budget_s is not None:
        left = max(0.0, snap.budget_s - snap.elapsed_s)
        parts.append(f"{eta.clock(left)} of the {eta.clock(snap.budget_s)} budget left")
    return "; ".join(parts)


@dataclass
class View:
    """The driver's view: a live table on a terminal, else one plain line per finished trial."""

    live: bool
    console: Any = None  # rich Console of the live view (default: stdout)
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    _live: Any = None
    clock: Callable[[], float] = time.monotonic
    _said: float | None = None  # when the last plain line of where things stand was printed

    @classmethod
    def for_stdout(cls) -> View:
        return cls(live=sys.stdout.isatty())

    def __enter__(self) -> View:
        if self.live:
            from rich.live import Live

            self._live = Live(
                self._render(), console=self.console, refresh_per_second=4, transient=False
            )
            self._live.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.update(self._render())
            self._live.stop()
            self._live = None

    def snapshot(self, snap: Snapshot) -> None:
        self.snapshots[snap.experiment] = snap
        if self._live is not None:
            self._live.update(self._render())
        elif not self.live:
            now = self.clock()
            if self._said is None:
                self._said = now
            elif now - self._said >= PLAIN_PERIOD_S:
                self._said = now
                for name, each in self.snapshots.items():
                    print(f"[{name}] {describe(each)}", flush=True)

    def line(self, text: str) -> None:
        if self._live is not None:
            if "failed" in text:  # finished trials show in the table; failures stay visible
                self._live.console.print(text, highlight=False, markup=False)
            return
        print(text, flush=True)

    def _render(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column(style="bold")
        table.add_column()
        for name, snap in self.snapshots.items():  # as Text: a trial's `[/]` is no markup
            table.add_row(Text(name), Text(describe(snap)))
        if not self.snapshots:
            table.add_row("starting", "")
        return table


@dataclass
class Relay:
    """A sink in an experiment's task that forwards to the driver's ProgressBoard actor."""

    board: Any

    def snapshot(self, snap: Snapshot) -> None:
        self.board.snapshot.remote(snap)

    def line(self, text: str) -> None:
        self.board.line.remote(text)


class ProgressBoard:
    """Collects snapshots and lines from experiments' tasks until the driver drains them."""

    def __init__(self) -> None:
        self.snapshots: dict[str, Snapshot] = {}
        self.lines: list[str] = []

    def snapshot(self, snap: Snapshot) -> None:
        self.snapshots[snap.experiment] = snap

    def line(self, text: str) -> None:
        self.lines.append(text)

    def drain(self) -> tuple[list[Snapshot], list[str]]:
        lines, self.lines = self.lines, []
        return list(self.snapshots.values()), lines


def pump(board: Any, view: View) -> None:
    """Move what the board collected into the driver's view."""
    import ray

    snapshots, lines = ray.get(board.drain.remote())
    for text in lines:
        view.line(text)
    for snap in snapshots:
        view.snapshot(snap)
