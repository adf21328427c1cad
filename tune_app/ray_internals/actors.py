"""A running trial's process, ended from the driver: Tune keeps the trial's actor handle in
`Trial.temporary_state.ray_actor` (an attribute of Ray's private `_TemporaryTrialState`).
"""

from __future__ import annotations

from typing import Any

import ray


def kill_trial_actor(trial: Any) -> bool:
    """Kill the process of `trial` (its actor, and with it the actors and tasks it owns: an RLlib
    algorithm's env runners); Tune then sees its task fail with `ActorDiedError` and handles it as
    any dead worker. False when the trial has no live actor."""
    actor = getattr(getattr(trial, "temporary_state", None), "ray_actor", None)
    if actor is None:
        return False
    ray.kill(actor, no_restart=True)
    return True
