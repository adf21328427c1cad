"""RLlib's own view of a translated config: the AlgorithmConfig it builds, our key names as the
attributes it sets, and its `validate` run on a representative point (imports RLlib).
"""

from __future__ import annotations

from typing import Any

from tune_app.config_keys import PRIVATE_KEYS
from tune_app.errors import SpecError, error_line
from tune_app.rllib.algorithm import algorithm_class
from tune_app.rllib.code import without_code
from tune_app.rllib.handlers import ObservationConnectors
from tune_app.space import representative


def algorithm_config(name: str, config: dict[str, Any]) -> Any:
    """An AlgorithmConfig of `name` from a translated, concrete config dict (as the trial will)."""
    return algorithm_class(name).get_default_config().update_from_dict(to_rllib(config))


def to_rllib(config: dict[str, Any]) -> dict[str, Any]:
    """Our key names to the attribute names `update_from_dict` sets; observations handled as
    the old stack did (`ObservationConnectors`) unless the config says otherwise. A config as
    RLlib saved it reads back with `config_keys.restore_private_keys`."""
    out = dict(config)
    out.setdefault("env_to_module_connector", ObservationConnectors())
    for key in PRIVATE_KEYS:
        if key in out:
            out[f"_{key}"] = out.pop(key)
    return out


def check_with_rllib(name: str, config: dict[str, Any]) -> tuple[dict[str, float], ...]:
    """Have RLlib's own `validate` check a representative point of `config` (imports RLlib);
    returns the trial's bundles as RLlib sizes them."""
    point = representative(config)
    try:
        request = algorithm_class(name).default_resource_request(to_rllib(without_code(point)))
    except (ValueError, TypeError, KeyError) as err:
        raise SpecError(f"{name} refuses this config: {error_line(err)}", path="config") from None
    return tuple(
        {k: float(v) for k, v in bundle.items() if v} or {"CPU": 0.0} for bundle in request.bundles
    )
