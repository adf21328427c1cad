"""The snapshot of each algorithm's accepted config keys (`keys.json`), read without importing
RLlib; `snapshot` writes it from the installed RLlib.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

KEYS_FILE = Path(__file__).with_name("keys.json")


@dataclass(frozen=True)
class AlgorithmKeys:
    """What an algorithm's config accepts, and the keys RLlib would silently ignore."""

    name: str
    defaults: dict[str, Any]  # every accepted key with its default (JSON; others as repr text)
    ignored: dict[str, str]  # key -> why it is ignored, what to use instead
    model_keys: tuple[str, ...]  # accepted sub-keys of model_config
    # key (`model_config.<sub-key>` too) -> the kinds of value it takes (`value_types.WORDS`),
    # as RLlib declares them; a key absent takes anything
    kinds: dict[str, tuple[str, ...]]
    # key -> what it is for: the first sentence RLlib's own docstrings give it (its config
    # setters' `Args:`); a key absent has none
    docs: dict[str, str]


@cache
def algorithm_keys(name: str) -> AlgorithmKeys:
    """An algorithm's accepted keys from the snapshot of RLlib's configs (no RLlib import)."""
    data = json.loads(KEYS_FILE.read_text())[name]
    return AlgorithmKeys(
        name=name,
        defaults=data["defaults"],
        ignored=data["ignored"],
        model_keys=tuple(data["model_keys"]),
        kinds={k: tuple(v) for k, v in data["kinds"].items()},
        docs=data["docs"],
    )
