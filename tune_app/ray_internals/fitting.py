"""The patches that hold while a Tuner fits, entered as one (each module says why it patches)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def patched_while_fitting(local_ray: bool, result_buffer: int | None = None) -> Iterator[None]:
    """Every private reach a fit needs; `local_ray`: this process started the Ray it runs on;
    `result_buffer`: the experiment's (`buffering`)."""
    from tune_app.ray_internals.buffering import results_buffered
    from tune_app.ray_internals.memory import trial_oom_is_actor_death
    from tune_app.ray_internals.placement import deferred_group_removal
    from tune_app.ray_internals.reuse import starting_actors_kept
    from tune_app.ray_internals.startup import trials_on_prestarted_workers
    from tune_app.ray_internals.telemetry import callbacks_tagged_if_imported
    from tune_app.ray_internals.uploads import whole_file_uploads

    with (
        deferred_group_removal(),
        starting_actors_kept(),
        whole_file_uploads(),
        trial_oom_is_actor_death(),
        trials_on_prestarted_workers() if local_ray else contextlib.nullcontext(),
        callbacks_tagged_if_imported(),
        results_buffered(result_buffer),
    ):
        yield
