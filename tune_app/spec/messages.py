"""Pydantic's validation errors as SpecErrors: the key path as the file writes it, the rule and
the value, the allowed keys or values, and a near-miss suggestion.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Annotated, Any, Union

from pydantic import BaseModel, TypeAdapter, ValidationError

from tune_app.errors import SpecError, SpecErrors, did_you_mean
from tune_app.scoring import SCOPES
from tune_app.spec.legacy import ALIASES, LEGACY_KEYS
from tune_app.spec.models import SCHEDULER_NAMES, SEARCHES, ExperimentSpec, TensorBoardSpec


def validate(target: Any, data: Any) -> Any:
    """`data` validated as the type `target`; every error at once, as SpecError(s)."""
    try:
        return TypeAdapter(target).validate_python(data)
    except ValidationError as exc:
        found: dict[str, SpecError] = {}
        for err in exc.errors():
            one = _to_spec_error(target, err)
            found.setdefault(one.message(), one)  # a union reports a key once per member
        errors = list(found.values())
        raise (errors[0] if len(errors) == 1 else SpecErrors(errors)) from None


def _to_spec_error(target: Any, err: Any) -> SpecError:  # noqa: C901
    """One pydantic error as a SpecError: dotted path without union tags, allowed keys, hints."""
    loc = tuple(str(p) for p in err["loc"])
    kind = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        shown, parent = _walk(target, loc[:-1])
        keys = _keys_of(parent)
        known = keys + (list(ALIASES) + list(LEGACY_KEYS) if parent is ExperimentSpec else [])
        return SpecError(
            f"unknown key '{loc[-1]}'",
            path=_join(shown + [loc[-1]]),
            allowed=keys,
            suggestion=did_you_mean(loc[-1], known),
        )
    shown, at = _walk(target, loc)
    path = _join(shown)
    if loc[-1] == "[key]":  # pydantic's loc holds a bad key as it hashes: true as 1
        written = {"True": "true", "False": "false", "None": "null"}.get(repr(value))
        read = repr(value) if written else "a number"
        return SpecError(
            f"a key must be text, but YAML reads {written or value} as {read}",
            path=_join(shown[:-2] + [str(value)]),
            suggestion=f"quote it: '{written or value}':",
        )
    if kind == "missing":
        return SpecError(
            f"the required key '{loc[-1]}' is missing",
            path=_join(shown[:-1]) or None,
            suggestion=f"add '{loc[-1]}:'",
        )
    if kind in ("union_tag_invalid", "literal_error"):
        allowed = _expected(ctx)
        bad = ctx.get("tag", value)
        return SpecError(
            f"'{bad}' is not allowed",
            path=path,
            allowed=allowed,
            suggestion=did_you_mean(str(bad), allowed),
        )
    if kind == "union_tag_not_found":
        return SpecError("needs a 'type' key", path=path, suggestion="write type: <name>")
    if shown and shown[-1] in ("search", "scheduler") and kind.endswith("_type"):
        choices = SEARCHES if shown[-1] == "search" else SCHEDULER_NAMES
        return SpecError(
            f"must be a name or a mapping with a 'type' key, but got {value!r}",
            path=path,
            allowed=choices,
        )
    if kind == "string_pattern_mismatch" and loc[-1] == "scope":
        return SpecError(
            f"'{value}' is not a scope",
            path=path,
            allowed=SCOPES,
            suggestion="last ranks trials by where their curves ended, all by their best value",
        )
    if at is TensorBoardSpec and kind.endswith("_type"):
        return SpecError(
            f"must be a mapping, but got {value!r}",
            path=path,
            allowed=list(TensorBoardSpec.model_fields),
            suggestion="write tensorboard: {include: [timers]}",
        )
    # An `include` or `exclude` list, or one of its patterns.
    if any(_walk(target, loc[:-i])[1] is TensorBoardSpec for i in (1, 2) if len(loc) > i):
        what = "a result key, a group prefix or a glob"
        what += "" if loc[-1].isdigit() else ", or a list of them"
        return SpecError(
            f"must be {what}, but got {value!r}",
            path=path,
            allowed="keys as Tune names them (env_runners/episode_return_mean), group prefixes "
            "(timers), globs (*_timer); no spaces",
        )
    if kind == "string_pattern_mismatch" and loc[-1] == "run":
        return SpecError(
            f"'{value}' is not a trainable name or a module:function reference",
            path=path,
            suggestion="write a registered name (python -m tune_app list), an RLlib "
            "algorithm such as PPO, or package.module:function",
        )
    if kind in _SCALARS:
        return _scalar_error(kind, value, path, loc[-1])
    msg = err["msg"][0].lower() + err["msg"][1:]
    if kind == "value_error":  # the app's own validators: their message says it all
        return SpecError(msg.removeprefix("value error, "), path=path)
    return SpecError(f"{msg}, but got {value!r}", path=path)


# Strict mode's errors for a number or a boolean written as something else: what the key takes.
_SCALARS = {"int_type": "a whole number", "float_type": "a number", "bool_type": "true or false"}


def _scalar_error(kind: str, value: Any, path: str, key: str) -> SpecError:
    """`num_samples: true`, `num_samples: "4"`, `num_samples: 2.5`: the value as written, what
    the key takes, and the spelling that does it where one is plain."""
    wanted = _SCALARS[kind]
    fix = None
    if isinstance(value, bool):
        shown = f"{str(value).lower()} (a boolean)"
    elif isinstance(value, str):
        shown = f"the text {value!r}"
        fix = _unquoted(value, kind)
        fix = f"write {key}: {fix}, without quotes" if fix is not None else None
    else:
        shown = repr(value)
        if isinstance(value, float) and value.is_integer() and kind == "int_type":
            fix = f"write {key}: {int(value)}"
    return SpecError(f"must be {wanted}, but got {shown}", path=path, suggestion=fix)


def _unquoted(text: str, kind: str) -> str | None:
    """`text` as the YAML scalar the key takes, where it reads as one ("4" -> 4)."""
    if kind == "bool_type":
        return text.lower() if text.lower() in ("true", "false") else None
    try:
        number = float(text)
    except ValueError:
        return None
    if kind == "int_type" and not number.is_integer():
        return None
    return str(int(number)) if kind == "int_type" else text.strip()


def _expected(ctx: dict[str, Any]) -> list[str]:
    raw = ctx.get("expected_tags") or ctx.get("expected") or ""
    return [t.strip().strip("'\"") for t in re.split(r",| or ", raw) if t.strip()]


def _join(parts: list[str]) -> str:
    # `expect`'s metrics sit beside max_errored_trials in the file, one level up from the model.
    parts = [
        p for i, p in enumerate(parts) if not (p == "metrics" and i and parts[i - 1] == "expect")
    ]
    return ".".join(parts)


def _walk(target: Any, loc: tuple[str, ...]) -> tuple[list[str], Any]:
    """Follow a pydantic `loc` through the model types; return the path to show and the type."""
    shown: list[str] = []
    t = target
    for part in loc:
        t = _unwrap(t)
        options = _union_members(t)
        if options is not None:
            tagged = [m for m in options if _tag_of(m) == part]
            if tagged:  # a discriminated union's tag: part of pydantic's loc, not of the YAML
                t = tagged[0]
                continue
            t = next((m for m in options if isinstance(m, type) and issubclass(m, BaseModel)), t)
            t = _unwrap(t)
        if isinstance(t, type) and issubclass(t, BaseModel):
            f = t.model_fields.get(part)
            t = f.annotation if f is not None else None
        elif typing.get_origin(t) is dict:
            t = typing.get_args(t)[1]
        else:
            t = None
        shown.append(part)
    t = _unwrap(t)
    return shown, t


def _unwrap(t: Any) -> Any:
    while typing.get_origin(t) is Annotated:
        t = typing.get_args(t)[0]
    members = _union_members(t)
    if members is not None:
        real = [m for m in members if m is not type(None)]
        if len(real) == 1:
            return _unwrap(real[0])
    return t


def _union_members(t: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(t) in (Union, types.UnionType):
        return tuple(_unwrap(m) for m in typing.get_args(t))
    return None


def _tag_of(t: Any) -> str | None:
    if isinstance(t, type) and issubclass(t, BaseModel) and "type" in t.model_fields:
        default = t.model_fields["type"].default
        return default if isinstance(default, str) else None
    return None


def _keys_of(t: Any) -> list[str]:
    t = _unwrap(t)
    return list(t.model_fields) if isinstance(t, type) and issubclass(t, BaseModel) else []
