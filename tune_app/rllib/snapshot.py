"""The snapshot of accepted keys (`keys.json`) written from the installed RLlib's config
classes (imports RLlib); `python -m tune_app.rllib` refreshes it after an upgrade, and a test
compares the two.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from pathlib import Path
from typing import Any

from tune_app.rllib.algorithm import algorithm_class
from tune_app.rllib.handlers import HANDLERS
from tune_app.rllib.keys import KEYS_FILE, AlgorithmKeys
from tune_app.rllib.tables import (
    ALGORITHMS,
    HONOURED,
    NO_OP_DEFAULTS,
    NO_OPS,
    RENAMED,
    STACK_FLAGS,
)
from tune_app.rllib.value_types import declared_kinds


def live_algorithm_keys(name: str) -> AlgorithmKeys:
    """Read an algorithm's accepted config keys off the installed RLlib's AlgorithmConfig."""
    config_cls = type(algorithm_class(name).get_default_config())
    config = config_cls()
    defaults = {k: v for k, v in config.to_dict().items() if not k.startswith("_")}
    defaults["train_batch_size_per_learner"] = None
    defaults["model_config"] = {}
    ignored = {k: "RLlib's new API stack ignores it" for k in _old_stack_keys(config_cls)}
    for key in [*HONOURED, *RENAMED, *NO_OPS, *NO_OP_DEFAULTS, *STACK_FLAGS]:
        ignored.pop(key, None)
    legacy = [k for k in HANDLERS if k not in ("framework", "replay_buffer_config")]
    for key in [*ignored, *RENAMED, *legacy, *NO_OPS, *NO_OP_DEFAULTS, *STACK_FLAGS]:
        defaults.pop(key, None)
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    model_keys = tuple(f.name for f in dataclasses.fields(DefaultModelConfig))
    return AlgorithmKeys(
        name=name,
        defaults={k: _jsonable(v) for k, v in sorted(defaults.items())},
        ignored=dict(sorted(ignored.items())),
        model_keys=model_keys,
        kinds=declared_kinds(config_cls, config, sorted(defaults)),
    )


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))  # no addresses: stable text


def write_keys_snapshot(path: Path = KEYS_FILE) -> None:
    """Write the snapshot of every algorithm's keys from the installed RLlib."""
    data = {name: dataclasses.asdict(live_algorithm_keys(name)) for name in ALGORITHMS}
    for entry in data.values():
        entry.pop("name")
        entry["model_keys"] = list(entry["model_keys"])
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def _old_stack_keys(config_cls: type) -> set[str]:
    """Attributes RLlib's config classes mark `# @OldAPIStack` or set to DEPRECATED_VALUE."""
    marked = re.compile(r"self\.(\w+)(?:\[[^\]]*\])?\s*=.*#\s*@OldAPIStack")
    deprecated = re.compile(r"self\.(\w+)\s*=\s*DEPRECATED_VALUE")
    keys: set[str] = set()
    for cls in config_cls.__mro__:
        init = vars(cls).get("__init__")
        if inspect.isfunction(init):
            source = inspect.getsource(init)
            keys.update(marked.findall(source), deprecated.findall(source))
    return keys
