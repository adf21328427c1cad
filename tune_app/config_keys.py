"""Config keys that a trial's saved config spells with a leading underscore, and the config read
back with the spec's names.

RLlib's `AlgorithmConfig.update_from_dict` sets these keys as private attributes
(`model_config` as `_model_config`), so that is how Tune saves them with the trial; readers of
a run folder restore the spec's names. A leaf: imports nothing of the app.
"""

from __future__ import annotations

from typing import Any

# The spec's key names that are saved as `_name`.
PRIVATE_KEYS = ("model_config", "env_to_module_connector")


def restore_private_keys(config: dict[str, Any]) -> dict[str, Any]:
    """A trial's config as it was saved, with the spec's key names back (`_x` -> `x` for each of
    PRIVATE_KEYS)."""
    out = dict(config)
    for key in PRIVATE_KEYS:
        if f"_{key}" in out:
            out[key] = out.pop(f"_{key}")
    return out
