"""A trial whose process Ray's memory monitor killed is a failed trial, not the end of the search.

Ray 2.60 answers a call to an actor that its memory monitor killed with `OutOfMemoryError`,
which is neither a `RayActorError` nor a `RayTaskError`. Tune's actor manager knows only those
two and raises `RuntimeError("Caught unexpected exception: ...")` from inside its loop for any
other, so one trial running out of memory ended the whole search (exit 1, no summary, Ray's
45-line report). While `trial_oom_is_actor_death` holds, that error reaches Tune as
`ActorOutOfMemoryError`, a `RayActorError`: the trial fails (and is retried under
`max_failures`) with the cause "out of memory", and the search goes on.

Private Ray symbol: `ray.air.execution._internal.actor_manager.RayActorManager.
_actor_task_failed` (wrapped while a Tuner fits: Tune has no hook for an actor task's error).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ray.exceptions import OutOfMemoryError, RayActorError

from tune_app.ray_internals.replacing import replaced


class ActorOutOfMemoryError(RayActorError):
    """Ray's memory monitor killed the actor (a trial's process) while it ran a task."""

    def __init__(self, message: str = RayActorError.BASE_ERROR_MSG) -> None:
        # Defaults throughout: Tune pickles a trial's actor error, and an exception is rebuilt
        # from its args (none here) and its __dict__.
        super().__init__(error_msg=message)


@contextlib.contextmanager
def trial_oom_is_actor_death() -> Iterator[None]:
    """While this holds, Tune takes an actor killed for memory as a dead actor."""
    from ray.air.execution._internal.actor_manager import RayActorManager

    original = RayActorManager._actor_task_failed

    def task_failed(self: Any, tracked_actor_task: Any, exception: Exception) -> None:
        if isinstance(exception, OutOfMemoryError):
            exception = ActorOutOfMemoryError(str(exception))
        original(self, tracked_actor_task, exception)

    with replaced(RayActorManager, "_actor_task_failed", task_failed):
        yield
