"""The JSON Schema of a spec file, for editors: the models' own schema plus what the loader
reads before the models see a file (legacy keys, aliases, search spaces in `config`).
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from tune_app.methods import SCHEDULERS, SEARCHERS
from tune_app.space import KINDS, LIST_KINDS, RULES
from tune_app.spec.legacy import ALIASES, LEGACY_KEYS, NO_EFFECT_KEYS
from tune_app.spec.models import NAME_PATTERN, AppSpec, ExperimentSpec


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a spec file, either form, for editors: it accepts what `load` does.

    Pydantic's schema of the models, plus what the loader reads before the models see a file:
    the form chosen by an `experiments` key, experiment names, the `resources` alias and Tune's
    legacy keys, `type` naming a search or scheduler, and the search spaces in `config`.
    """
    defs = TypeAdapter(AppSpec | dict[str, ExperimentSpec]).json_schema()["$defs"]
    names = {"pattern": NAME_PATTERN, "description": "a plain folder name"}
    defs["AppSpec"]["properties"]["experiments"]["propertyNames"] = names
    options = [s.options for s in SEARCHERS.values()] + [s.options for s in SCHEDULERS.values()]
    for model in options:
        # The model's default `type` does not make it optional: the union is chosen by it.
        defs[model.__name__]["required"] = ["type"]
    _renamed_keys(defs)
    resources = defs["ResourcesSpec"]
    for lower in ("cpu", "gpu"):  # Tune's spellings, read by ResourcesSpec._tune_spellings
        upper = lower.upper()
        resources["properties"][upper] = {**resources["properties"][lower], "title": upper}
        resources.setdefault("allOf", []).append({"not": {"required": [lower, upper]}})
    defs["ConfigValue"] = _config_value()
    config = defs["ExperimentSpec"]["properties"]["config"]
    config["additionalProperties"] = {"$ref": "#/$defs/ConfigValue"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "tune_app spec",
        "anyOf": [
            {"$ref": "#/$defs/AppSpec"},
            {
                "title": "classic form: every top-level key names an experiment",
                "type": "object",
                "not": {"required": ["experiments"]},  # that key makes a file the app form
                "propertyNames": names,
                "additionalProperties": {"$ref": "#/$defs/ExperimentSpec"},
            },
        ],
        "$defs": defs,
    }


def _renamed_keys(defs: dict[str, Any]) -> None:
    """Add ALIASES and LEGACY_KEYS to the experiment with their targets' schemas, each one
    excluding its target, as `legacy.translate_legacy` reads them."""
    experiment = defs["ExperimentSpec"]
    keys = experiment["properties"]
    exclusive = []
    for alias, key in ALIASES.items():
        keys[alias] = {**keys[key], "title": alias, "description": f"alias of {key}"}
        exclusive.append({"not": {"required": [alias, key]}})
    for old, shown in LEGACY_KEYS.items():
        new = shown.split(".")
        target: dict[str, Any] = experiment
        for part in new:
            if "$ref" in target:
                target = defs[target["$ref"].rsplit("/", 1)[-1]]
            target = target["properties"][part]
        keys[old] = {
            **target,
            "title": old,
            "description": f"legacy Tune key, read as {shown}",
            "deprecated": True,
        }
        clash: dict[str, Any] = {"required": [old, new[0]]}
        if len(new) > 1:
            clash["properties"] = {new[0]: {"required": [new[-1]]}}
        exclusive.append({"not": clash})
    for old, why in NO_EFFECT_KEYS.items():
        keys[old] = {"title": old, "description": f"legacy Tune key with no effect: {why}"}
        keys[old]["deprecated"] = True
    experiment["allOf"] = exclusive


def _config_value() -> dict[str, Any]:
    """A `config` value: a constant, or a one-key search-space mapping `space.parse_space`
    reads (its arguments checked), with mappings and lists walked as it walks them."""
    kinds: dict[str, dict[str, Any]] = {
        kind: {"type": "array", "minItems": 1, "description": f"{kind}: [a, b, ...]: {doc}"}
        for kind, doc in LIST_KINDS.items()
    }
    for kind, rule in RULES.items():
        number = "integer" if rule.integer else "number"
        kinds[kind] = {
            "type": "array",
            "prefixItems": [{"type": number, "title": param} for param in rule.params],
            "minItems": len(rule.params),
            "maxItems": len(rule.params),
            "description": f"{kind}: [{', '.join(rule.params)}]: {rule.doc}",
        }
    return {
        "description": "a constant, or a search space: a mapping of one key, one of "
        + ", ".join(KINDS),
        "allOf": [
            {
                "if": {"type": "object", "required": [kind], "maxProperties": 1},
                "then": {"properties": {kind: args}},
            }
            for kind, args in kinds.items()
        ],
        "additionalProperties": {"$ref": "#/$defs/ConfigValue"},
        "items": {"$ref": "#/$defs/ConfigValue"},
    }
