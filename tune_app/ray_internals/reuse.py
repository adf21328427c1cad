"""Tune's actor reuse without killing an actor that is starting: a finished trial's cached actor
goes to a trial still waiting for resources, never to one whose own actor already holds them.

Tune stages many trials at once, each with an actor requested. When a trial ends, its actor is
cached, and the next trial the scheduler picks takes it (`TuneController.
_maybe_reuse_cached_actor`), removing that trial's own actor even when the actor already holds
its CPU and its process is starting. FIFO picks the oldest pending trial, which is the one whose
actor got resources first, so that is the actor removed. Where a trial is shorter than an actor's
start-up (0.05 s against 0.2-2 s), the first actor to start then runs every trial, while each CPU
beside it starts actor after actor that is removed before it runs a trial. Whether a search runs
this way is decided by which actor starts first: 600 trials of 0.05 s with a hand-written Tuner
on 2 CPUs ran at 10.4-11.7 trials/s in one actor's process in 4 of 5 runs, and at 19.8 with two;
with this patch, 19.7-22.4 in two processes in 7 of 7 (benchmarks/README.md, `scale`).

A patch: Tune has no option or hook for which trial takes a cached actor. Without
the attributes it reads, Tune's own choice stands.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from tune_app.ray_internals.replacing import replaced


def _holds_resources(controller: Any, trial: Any) -> bool:
    """Whether `trial` has an actor of its own that already holds its resources (Ray starts the
    actor's process as soon as they are granted)."""
    own = controller._trial_to_actor.get(trial)
    return own is not None and controller._actor_manager.is_actor_started(own)


def _waiting_for_resources(controller: Any, like: Any) -> Any | None:
    """A staged trial wanting `like`'s resources whose actor does not hold them yet, or None."""
    for trial in controller._staged_trials:
        if (
            trial is not like
            and trial.status == "PENDING"
            and trial not in controller._resetting_trials
            and trial.placement_group_factory == like.placement_group_factory
            and not _holds_resources(controller, trial)
        ):
            return trial
    return None


def _keeping_starting_actors(reuse: Any) -> Any:
    def maybe_reuse_cached_actor(controller: Any, trial: Any) -> bool:
        try:
            keep_own = (
                trial not in controller._resetting_trials
                and _holds_resources(controller, trial)
                and controller._actor_cache.has_cached_object(trial.placement_group_factory)
            )
            waiting = _waiting_for_resources(controller, trial) if keep_own else None
        except AttributeError:  # a Tune without these attributes: its own choice
            keep_own = False
        if not keep_own:
            return bool(reuse(controller, trial))
        if waiting is not None:
            reuse(controller, waiting)
        return False  # `trial` runs in its own actor once that has started

    maybe_reuse_cached_actor.__wrapped__ = reuse  # type: ignore[attr-defined]
    return maybe_reuse_cached_actor


@contextlib.contextmanager
def starting_actors_kept() -> Iterator[None]:
    """While this holds, Tune's controllers give a cached actor only to a trial whose own actor
    does not hold resources yet (the module's docstring says why)."""
    from ray.tune.execution.tune_controller import TuneController

    own = _keeping_starting_actors(TuneController._maybe_reuse_cached_actor)
    with replaced(TuneController, "_maybe_reuse_cached_actor", own):
        yield
