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
from tune_app.rllib.value_types import declared_kinds, field_kinds


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
        kinds={
            **declared_kinds(config_cls, config, sorted(defaults)),
            **field_kinds(DefaultModelConfig, "model_config"),
        },
        docs=key_docs(config_cls, set(defaults)),
    )


# A setter of AlgorithmConfig (`training()`, `env_runners()`, ...) says so in its Returns.
_SETTER = "This updated AlgorithmConfig object"
_ARG = re.compile(r"(\w+)(?: \([^)]*\))?:\s*(.*)")
# A sentence ends at ". " before a capital, not inside "e.g. " or "i.e. ".
_SENTENCE_END = re.compile(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.!?])\s+(?=[A-Z`(\[])")
MAX_DOC_CHARS = 160


def key_docs(config_cls: type, keys: set[str]) -> dict[str, str]:
    """Each key's first sentence from the `Args:` of the config class's setters' docstrings (a
    subclass's own before its base's). A parameter documents the key of its name, or of its
    name spelt as the setter stores it: `lambda_` -> `lambda`, `callbacks(on_episode_end=)` ->
    `callbacks_on_episode_end`, `callbacks_class` -> `callbacks`."""
    docs: dict[str, str] = {}
    for cls in config_cls.__mro__:
        for setter, method in vars(cls).items():
            doc = inspect.getdoc(method) if inspect.isfunction(method) else None
            if not doc or _SETTER not in doc:
                continue
            for name, text in _args(doc).items():
                spelt = (name, name.rstrip("_"), f"{setter}_{name}", name.removesuffix("_class"))
                key = next((k for k in spelt if k in keys), None)
                if key is not None and text:
                    docs.setdefault(key, _first_sentence(text))
    return dict(sorted(docs.items()))


def _args(doc: str) -> dict[str, str]:
    """A Google-style docstring's `Args:` section: parameter -> its text on one line."""
    found: dict[str, list[str]] = {}
    lines = doc.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Args:"), None)
    if start is None:
        return {}
    base = len(lines[start]) - len(lines[start].lstrip())
    current: list[str] | None = None
    for line in lines[start + 1 :]:
        indent = len(line) - len(line.lstrip())
        if line.strip() and indent <= base:
            break  # the next section (Returns:)
        entry = _ARG.fullmatch(line.strip()) if indent == base + 4 else None
        if entry is not None:
            current = found.setdefault(entry.group(1), [])
            current.append(entry.group(2))
        elif current is not None and line.strip():
            current.append(line.strip())
    return {name: " ".join(parts).strip() for name, parts in found.items()}


def _first_sentence(text: str) -> str:
    first = _SENTENCE_END.split(" ".join(text.split()), maxsplit=1)[0]
    return first if len(first) <= MAX_DOC_CHARS else first[: MAX_DOC_CHARS - 3].rstrip() + "..."


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))  # no addresses: stable text


def write_keys_snapshot(path: Path = KEYS_FILE) -> None:
    """Write the snapshot of every algorithm's keys from the installed RLlib."""
    data = {name: dataclasses.asdict(live_algorithm_keys(name)) for name in ALGORITHMS}
    for entry in data.values():
        del entry["name"]  # the key it is filed under
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
