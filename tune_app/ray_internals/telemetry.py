"""Tune's usage tag of a run's callbacks, left out where it would import integrations the run does
not use.

`tune.run` tags the callbacks it is given for Ray's usage stats
(`ray.air._internal.usage.tag_callbacks`). To tell its built-in callbacks apart, that tag imports
MLflow's, W&B's, Comet's and Aim's integrations, and with them `mlflow` and `wandb`: about 2.9 s
of every run's and every resume's start on 2 cores (`python -X importtime`: mlflow 2.0 s, wandb
0.85 s), in a run that logs to neither. While `callbacks_tagged_if_imported` holds, Ray tags the
callbacks as before where those integrations are imported already (a run that logs to MLflow
or W&B imported its own), and otherwise the run goes untagged: Ray's usage stats lose that one
tag, nothing the run does changes. A patch: Tune has no option to skip the tag, and the app
always gives Tune callbacks (one given none is not tagged).

Private Ray symbol: `ray.air._internal.usage.tag_callbacks` (replaced while a Tuner fits;
`tune.run` calls it through the module).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from tune_app.ray_internals.replacing import replaced

# The modules `tag_callbacks` imports to name Tune's built-in callbacks.
INTEGRATIONS = (
    "ray.air.integrations.comet",
    "ray.air.integrations.mlflow",
    "ray.air.integrations.wandb",
    "ray.tune.logger.aim",
)


@contextlib.contextmanager
def callbacks_tagged_if_imported() -> Iterator[None]:
    """While this holds, Tune tags a run's callbacks only where that imports nothing new."""
    from ray.air._internal import usage

    original = getattr(usage, "tag_callbacks", None)
    if original is None:
        yield
        return

    def tag_callbacks(callbacks: Any) -> bool:
        return all(name in sys.modules for name in INTEGRATIONS) and bool(original(callbacks))

    with replaced(usage, "tag_callbacks", tag_callbacks):
        yield
