"""What the commands print around a run and on the way out: the plan's warnings and layouts, a
run's summary and expectations, how to continue an interrupted run, the app's warnings as one
line each. (`console` builds the reports' text.)"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from tune_app import interrupts
from tune_app.errors import RunStopped
from tune_app.ray_internals.versions import UncheckedRayWarning

if TYPE_CHECKING:
    from pathlib import Path

    from tune_app.api import RunResult
    from tune_app.plan.types import Plan


class _WhileRead:
    """stdout that writes nowhere once its reader has gone (`run ... | head -1`, a pager quit):
    a write that raised BrokenPipeError inside Tune's loop failed the trial it reported."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def _gone(self) -> None:  # what is buffered, and all that follows, goes to /dev/null
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def stdout_while_read() -> Iterator[None]:
    """While this holds, what is printed after stdout's reader has gone is dropped, not raised."""
    given = sys.stdout
    sys.stdout = _WhileRead(given)
    try:
        yield
    finally:
        sys.stdout = given


def earlier_runs(plan: Plan) -> list[str]:
    """Notes on results folders that already hold a run: `run` keeps them and writes beside."""
    from tune_app.command import APP
    from tune_app.rundir.location import RunLocation

    out = []
    folders = RunLocation.fresh_all([ep.folder for ep in plan.experiments])
    for ep, fresh in zip(plan.experiments, folders, strict=True):
        if not fresh.same_as(ep.folder):
            out.append(
                f"{ep.experiment.key_path}.storage_path: {ep.location} already holds a run, "
                f"kept: `run` writes {fresh.where}; continue an unfinished one with "
                f"{APP} resume {ep.location}"
            )
    return out


def shown(run: Callable[[], RunResult]) -> int:
    """Print what a run ended with (the summary table, the expectations that failed, how to
    continue it if interrupted) and return its exit code; a run that raised shows what it can.
    `run` is the whole command, its first printed line included: a signal that lands while that
    line is written is an interruption before the run began, as any before the plan is."""
    from tune_app.api import Interrupted, NeverReported

    try:
        result = run()
    except Interrupted:  # before any summary came back: `main` prints the one line
        raise
    except KeyboardInterrupt:  # while the spec was read and planned: no run folder yet
        raise Interrupted([]) from None
    except NeverReported as err:  # what did run first, then the error
        print_result(err.result)
        raise
    except RunStopped as err:  # the summary so far, then the resume line
        if err.result is not None:
            print_result(err.result)
        raise
    print_result(result)
    if result.interrupted_folders:
        stop = Interrupted(result.interrupted_folders, result.address)
        print(interrupted_line(stop), file=sys.stderr)
    return result.exit_code


def evaluated(run: Callable[[], RunResult], found: list[Any], spec_file: Path) -> int:
    """What `evaluate` ends with: its table of each configuration's tuning score beside its
    score over the fresh seeds, the expectations that failed, its exit code. Cut short, no
    table (`resume` prints none either): where its parts are once resumed, then the resume
    line `main` ends with."""
    from tune_app.api import Interrupted
    from tune_app.cli.console import evaluation_text, print_outcomes
    from tune_app.command import APP

    try:
        result = run()
        if result.interrupted_folders:
            raise Interrupted(result.interrupted_folders, result.address)
    except Interrupted as stop:
        if stop.folders:
            print(
                "tune_app: the evaluation was cut short; once resumed (below), "
                f"`{APP} analyze FOLDER` of each folder gives its configuration's score over the "
                f"fresh seeds, and the comments in {spec_file} its tuning score",
                file=sys.stderr,
            )
        raise
    print(evaluation_text(found, result.summaries))
    print_outcomes(result.outcomes)  # the spec's expect holds for each configuration too
    return result.exit_code


def print_result(result: RunResult) -> None:
    from tune_app.cli.console import print_outcomes, print_summaries, same_failures_line

    print_summaries(result.plan, result.summaries)
    print_outcomes(result.outcomes)
    for ep, summary in zip(result.plan.experiments, result.summaries, strict=True):
        line = same_failures_line(ep, summary)
        if line is not None:  # last: the one line a user acts on
            print(f"error: {line}", file=sys.stderr)


def interrupted_line(stop: BaseException) -> str:
    """The one line an interrupted command ends with: how to continue the run, if one began."""
    from tune_app.api import Interrupted, resume_command

    by = interrupts.received() or "SIGINT"
    if isinstance(stop, Interrupted) and stop.folders:
        resume = resume_command(stop.folders, stop.address)
        return f"interrupted ({by}); the state is saved. Continue with: {resume}"
    if isinstance(stop, Interrupted):
        return f"interrupted ({by}) before the run began: nothing was written"
    return f"interrupted ({by})"


def print_plan_warnings(plan: Plan) -> None:
    print_warnings(plan.warnings)


def print_plan_start(plan: Plan) -> None:
    """What a run says once planned: where its results go, its warnings, and each
    experiment's chosen layout."""
    from tune_app.cli.console import results_line

    print(results_line(plan), flush=True)
    print_warnings(plan.warnings)
    print_layouts(plan)


def print_layouts(plan: Plan) -> None:
    from tune_app.plan.describe import layout_lines

    for line in layout_lines(plan):
        print(line, flush=True)


def print_warnings(warnings: Sequence[str]) -> None:
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


def one_line_warnings(python_shows: Callable[..., None]) -> Callable[..., None]:
    """Python's showwarning, except that the app's own warnings print as one `warning:` line
    (Python's form adds the file, line and source of the `warnings.warn` call)."""

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, UncheckedRayWarning):
            print(f"warning: {message}", file=sys.stderr)
        else:
            python_shows(message, category, *args, **kwargs)

    return show
