"""`result_buffer`: a trial's process hands the driver up to N results per call, through Tune's
own result buffering (`TUNE_RESULT_BUFFER_LENGTH`, `TUNE_RESULT_BUFFER_MIN_TIME_S`,
`TUNE_RESULT_BUFFER_MAX_TIME_S`, its documented switches). Tune then takes the results one by
one, as if each had come alone: the stopper, the scheduler, the searcher and every callback see
each, in order, and those after a decision to stop the trial are dropped, as Tune does.

Without it Tune asks a trial's actor for one result per call, and a trial that reports as fast as
it can is held to the rate of those calls (about 2 ms of the driver's time each).

The reach: Tune's controller (`TuneController._schedule_trial_train`, Ray 2.55 to 2.60) calls
`Trainable.train_buffered(buffer_length, buffer_time_s)`, whose parameters are `(buffer_time_s,
max_buffer_length)`. The length arrives as the seconds to gather for, and the time Tune works out
(`max(MIN_TIME_S, min(MAX_TIME_S, actor tasks // 10))`) as the most results. No setting puts
them in their places, so the app sets them as they arrive: the length variable to `WINDOW_S`,
both time variables to the number of results. `tests/test_buffering.py` runs Tune's own Tuner
under these settings and fails when a release hands the values over otherwise.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from tune_app.ray_internals.replacing import environment

LENGTH = "TUNE_RESULT_BUFFER_LENGTH"
MIN_TIME = "TUNE_RESULT_BUFFER_MIN_TIME_S"
MAX_TIME = "TUNE_RESULT_BUFFER_MAX_TIME_S"
# How long a call gathers results, in whole seconds (Tune reads the length variable as an int,
# and 1 turns buffering off): a call ends at the first result past it, or at `results`, at a
# reported checkpoint, or at the trial's end.
WINDOW_S = 2


def settings(results: int) -> dict[str, str]:
    """The environment that makes each of a trial's calls hand over up to `results` results,
    gathered until the first result past `WINDOW_S` seconds; 1: one result a call, as Tune's
    length of 1 says whatever the other two."""
    if results < 2:
        return {LENGTH: "1"}
    return {LENGTH: str(WINDOW_S), MIN_TIME: str(results), MAX_TIME: str(results)}


@contextlib.contextmanager
def results_buffered(results: int | None) -> Iterator[None]:
    """While this holds (a Tuner's fit, where Tune reads them), Tune's buffering variables are
    `settings(results)`; None: they are left as the environment has them. Restored afterwards.
    (A resumed fit keeps the buffering its run began with: Tune restores it with its state.)"""
    with environment(settings(results) if results is not None else {}):
        yield
