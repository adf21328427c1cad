"""Whether a trial has diverged: its metric, or a loss it reports, NaN or infinite. Used alike by
the stopper, the live view, TensorBoard and the run's summary, for every kind of trainable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tune_app.scoring import number


def diverged(flat: Mapping[str, Any], metric: str | Sequence[str] | None) -> tuple[str, Any] | None:
    """The first key of a flattened result showing divergence: the metric (each objective, for a
    search of several), or an RLlib loss (`learners/.../*loss`), NaN or infinite. Call it on
    results whose no-data NaNs were dropped (`rllib.metrics.drop_no_data`, which RLlib trials do
    as they report)."""
    keys = [metric] if isinstance(metric, str) else list(metric or ())
    keys += [k for k in flat if k.startswith("learners/") and k.endswith("loss")]
    for key in keys:
        value = flat.get(key)
        found = number(value)  # a bool or text is no measurement, not a NaN
        if found is not None and not math.isfinite(found):
            return key, value
    return None
