"""docs/reference/spec.md: every key of both spec forms, from the pydantic models' fields."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, BeforeValidator

from docs.gen.common import HEADER, code, field_rows, first_paragraph, table
from tune_app.methods import Options
from tune_app.spec import legacy, models

HEAD = ("key", "type", "default", "meaning")


def _section(title: str, model: type, intro: str, skip: tuple[str, ...] = ()) -> str:
    doc = first_paragraph(model.__doc__)
    return f"## {title}\n\n{intro}{doc}\n\n" + table(HEAD, field_rows(model, skip))


def _legacy() -> str:
    rows = [[code(old), "read as " + code(new)] for old, new in legacy.LEGACY_KEYS.items()]
    rows += [[code(alias), "an alias of " + code(key)] for alias, key in legacy.ALIASES.items()]
    rows += [[code(old), "dropped: " + why] for old, why in legacy.NO_EFFECT_KEYS.items()]
    return (
        "## Legacy keys and aliases\n\n"
        "Tune's old experiment keys are read with one warning each; keys Ray 2 has nothing "
        "for are dropped with a warning saying why.\n\n" + table(("key", "what happens"), rows)
    )


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    """The spec models a field's type holds (inside unions, lists and mappings); for a value
    validated from another shape (`expect:`), the model of the shape a file writes."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        written = [
            m.json_schema_input_type
            for m in args[1:]
            if isinstance(m, BeforeValidator) and isinstance(m.json_schema_input_type, type)
        ]
        yield from _models_in(written[0] if written else args[0])
    elif args:
        for arg in args:
            yield from _models_in(arg)
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if not issubclass(annotation, Options):
            yield annotation


def nested(model: type[BaseModel], path: str = "") -> list[tuple[str, type[BaseModel]]]:
    """Every model under `model`'s keys, with the key path a file writes it at, depth first."""
    found = []
    extra = model.__annotations__.get("__pydantic_extra__")
    keyed = [(name, f.annotation) for name, f in model.model_fields.items()]
    if isinstance(extra, str):  # postponed annotations: the extra keys' type, resolved; first,
        # so a model also reached under a named key (`expect.smoke`) is documented as a metric's
        keyed.insert(0, ("<metric>", typing.get_type_hints(model)["__pydantic_extra__"]))
    for name, annotation in keyed:
        if name == "experiments":
            continue
        for inner in dict.fromkeys(_models_in(annotation)):
            key = f"{path}{name}"
            found.append((key, inner))
            found += nested(inner, f"{key}.")
    return found


def documented() -> list[type[BaseModel]]:
    """Every model whose fields the page documents."""
    models_ = [models.AppSpec, models.Settings, models.ExperimentSpec]
    for _, model in nested(models.ExperimentSpec):
        if model not in models_:
            models_.append(model)
    return models_


def page() -> str:
    own = tuple(models.Settings.model_fields)
    parts = [
        HEADER,
        "# Spec keys\n\n",
        "A spec file has one of two forms, told apart by a top-level `experiments:` key. In the "
        "**classic form** every top-level key names an experiment, whose keys are those of "
        "[Experiment keys](#experiment-keys). In the **app form** the top level holds the "
        "[file-level keys](#file-level-keys) and `experiments:`; every experiment inherits the "
        "file-level keys and may override them. An unknown key anywhere is an error naming the "
        "allowed keys.\n\n",
        _section(
            "File-level keys",
            models.AppSpec,
            "Every key but `experiments` may also be set in an experiment, whose value wins. ",
        ),
        "\n",
        _section(
            "Experiment keys",
            models.ExperimentSpec,
            "Besides the file-level keys above (except `experiments`). ",
            skip=own,
        ),
    ]
    seen = set()
    for key, model in nested(models.ExperimentSpec):
        if model not in seen:
            seen.add(model)
            parts += ["\n", _section(f"`{key}`", model, "")]
    parts += ["\n", _legacy()]
    return "".join(parts)
