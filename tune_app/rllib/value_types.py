"""The kind of value each RLlib config key takes, as RLlib declares it, and the check of a spec's
values against it (search-space values one by one).

RLlib's `update_from_dict` sets any value on its config, and a wrong one fails inside every
trial naming no key (`train_batch_size_per_learner: "2000"`: "'<' not supported between
instances of 'int' and 'str'"). A key's kinds are read off RLlib's own declarations when the
snapshot is written (`declared_kinds`, which imports nothing itself): the default's type in a
fresh config (bool, int or float), joined with the annotation of the setter parameters of that
name (`training(lr=...)`), and with a list where the config's own methods validate the key as
a schedule (PPO's `entropy_coeff`, annotated `float`). A key whose declaration says nothing a
YAML value can be checked against (`Any`, a class, a callable, an unresolved name) has no entry
and takes anything.
"""

from __future__ import annotations

import inspect
import math
import re
import typing
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from tune_app.errors import SpecError
from tune_app.resources import finer_than_ray
from tune_app.rllib.keys import AlgorithmKeys
from tune_app.rllib.tables import SIZING_KEYS
from tune_app.scoring import finite
from tune_app.space import RULES, Domain, whole_number

# The kinds a YAML value can be, each with how a message names it. "number" takes an int too;
# a bool is none of the numbers (YAML's true is not 1).
WORDS = {
    "int": "a whole number",
    "number": "a number",
    "bool": "true or false",
    "text": "text",
    "list": "a list",
    "mapping": "a mapping",
    "null": "null",
}
_BASIC = {bool: "bool", int: "int", float: "number", str: "text", type(None): "null"}
_DEFAULT_KINDS = {**_BASIC, list: "list", tuple: "list", dict: "mapping"}
# Ray takes fractions of a CPU or GPU (`num_cpus=0.5`), which RLlib hands on as they are, though
# RLlib 2.60 annotates some of these keys `int`.
_RESOURCE_AMOUNTS = ("num_cpus_", "num_gpus_")
_LISTS = (list, tuple, set, frozenset, Sequence, Collection, Iterable)
_MAPPINGS = (dict, Mapping)
# A key RLlib hands to `Scheduler.validate` takes a number or a [[timestep, value], ...] schedule,
# whatever its setter's annotation says (RLlib 2.60's PPO: `entropy_coeff: Optional[float]`).
_SCHEDULED = re.compile(r"fixed_value_or_schedule=self\.(\w+)")


class _Anything(Exception):
    """A declaration that admits a value no kind names: the key is not checked."""


def declared_kinds(
    config_cls: type, config: Any, keys: Iterable[str]
) -> dict[str, tuple[str, ...]]:
    """The kinds each key takes, from a fresh `config` of `config_cls` and the annotations of its
    setter methods; keys that take anything are left out."""
    annotations = _setter_annotations(config_cls)
    scheduled = _scheduled(config_cls)
    out: dict[str, tuple[str, ...]] = {}
    for key in keys:
        found = annotations.get(key, []) + annotations.get(f"{key}_", [])  # lambda_ sets lambda
        default = _DEFAULT_KINDS.get(type(getattr(config, key, None)))
        if not found and default not in ("bool", "int", "number"):
            continue  # None, NotProvided, text or a container, and no annotation to go by
        try:
            kinds = set().union(*(_kinds_of(ann) for ann in found))
        except _Anything:
            continue
        kinds |= {default} if default else set()
        kinds |= {"list"} if key in scheduled else set()
        if key.startswith(_RESOURCE_AMOUNTS) and "int" in kinds:
            kinds.add("number")
        if "number" in kinds:
            kinds.discard("int")
        if kinds - {"null"}:
            out[key] = tuple(sorted(kinds))
    return out


def field_kinds(cls: type, prefix: str) -> dict[str, tuple[str, ...]]:
    """The kinds each field of the dataclass `cls` takes, by its annotation, keyed as a sub-key
    of `prefix` (RLlib's DefaultModelConfig: `model_config.fcnet_hiddens`); a field whose
    annotation admits anything is left out. Null passes every field: RLlib documents None for
    fields annotated without it (`fcnet_activation: str`, "'linear' (or None)")."""
    out: dict[str, tuple[str, ...]] = {}
    for name, ann in typing.get_type_hints(cls).items():
        try:
            out[f"{prefix}.{name}"] = tuple(sorted(_kinds_of(ann) | {"null"}))
        except _Anything:
            continue
    return out


def _setter_annotations(config_cls: type) -> dict[str, list[Any]]:
    """Every public method's parameter annotations by parameter name, over the class's MRO
    (an algorithm's `training` adds its own keys to the base class's)."""
    found: dict[str, list[Any]] = {}
    for cls in config_cls.__mro__:
        for attr, func in vars(cls).items():
            if attr.startswith("_") or not inspect.isfunction(func):
                continue
            for param in inspect.signature(func).parameters.values():
                if param.annotation is not inspect.Parameter.empty:
                    found.setdefault(param.name, []).append(_resolve(param.annotation, func))
    return found


def _scheduled(config_cls: type) -> set[str]:
    """The keys the class's own methods (over its MRO) validate as schedules."""
    found: set[str] = set()
    for cls in config_cls.__mro__:
        for func in vars(cls).values():
            if inspect.isfunction(func):
                found.update(_SCHEDULED.findall(inspect.getsource(func)))
    return found


def _resolve(ann: Any, func: Any) -> Any:
    """An annotation written as text, evaluated in its module; one that fails stays text."""
    if isinstance(ann, str):
        try:
            return eval(ann, func.__globals__)  # noqa: S307 - RLlib's own source, not a spec
        except Exception:  # noqa: BLE001 - a name imported only for type checkers
            return ann
    return ann


def _kinds_of(ann: Any) -> set[str]:
    """The kinds an annotation admits; raises _Anything where it admits more than kinds say."""
    if ann in _BASIC:
        return {_BASIC[ann]}
    origin = typing.get_origin(ann) or ann
    if origin is typing.Union or type(ann).__name__ == "UnionType":
        return set().union(*(_kinds_of(a) for a in typing.get_args(ann)))
    if origin is typing.Literal:
        return set().union(*(_kinds_of(type(a)) for a in typing.get_args(ann)))
    if origin is typing.Annotated:
        return _kinds_of(typing.get_args(ann)[0])
    if isinstance(origin, type) and issubclass(origin, _MAPPINGS):
        return {"mapping"}
    if isinstance(origin, type) and origin is not str and issubclass(origin, _LISTS):
        return {"list"}
    raise _Anything(ann)  # Any, a class, a callable, a TypeVar, a name left as text


def check_value(name: str, keys: AlgorithmKeys, target: str, value: Any, path: str) -> None:
    """Refuse a value of `target` (the key RLlib is given, written at `path`) that is not of a
    kind the key takes; each value of a search space is checked as a value, each sub-key of a
    mapping (`model_config`'s) as a key of its own."""
    if isinstance(value, dict):
        for sub, v in value.items():
            check_value(name, keys, f"{target}.{sub}", v, f"{path}.{sub}")
    if target in SIZING_KEYS:
        if not isinstance(value, Domain):  # `resources` refuses a search of a trial's size
            check_size(target, value, path)
        return
    kinds = keys.kinds.get(target)
    if kinds is None:
        return
    key = path.rpartition(".")[2]
    shown = [f"as {target}"] if not path.endswith(f".{target}") else []
    default = keys.defaults.get(target)
    if default is not None:
        shown.append(f"its default is {_text(default)}")
    wanted = " or ".join(word for k, word in WORDS.items() if k in kinds and k != "null")
    takes = f"{name} takes {wanted} here" + (f" ({', '.join(shown)})" if shown else "")
    _check(kinds, value, path, takes, f"{key}: ")


def check_size(key: str, value: Any, path: str) -> None:
    """A key sizing each trial's resources (`tables.SIZING_KEYS`) holds a number of processes (a
    whole number) or of CPUs / GPUs (any number, `num_cpus_per_learner` also "auto"), never below
    0; null takes RLlib's default."""
    if value is None or (key == "num_cpus_per_learner" and value == "auto"):
        return
    whole = not key.startswith(_RESOURCE_AMOUNTS)  # a count of processes
    number = finite(value)
    if number is not None and (problem := finer_than_ray(number)) is not None:
        raise SpecError(f"'{key}' sizes each trial's resources; {problem}", path=path)
    if number is not None and number >= 0 and (not whole or number.is_integer()):
        return
    allowed = "a whole number >= 0" if whole else "a number >= 0"
    if key == "num_cpus_per_learner":
        allowed += ' or "auto"'
    unquoted = (
        _unquoted(("int",) if whole else ("number",), value) if isinstance(value, str) else None
    )
    raise SpecError(
        f"'{key}' sizes each trial's resources; got {value!r}",
        path=path,
        allowed=allowed,
        suggestion=f"write {path.rpartition('.')[2]}: {unquoted}, without quotes"
        if unquoted is not None
        else None,
    )


def _check(kinds: tuple[str, ...], value: Any, path: str, takes: str, spelt: str) -> None:
    if isinstance(value, Domain):
        _check_domain(kinds, value, path, takes)
    elif not _admits(kinds, value):
        raise SpecError(
            f"{takes}, but got {_shown(value)}",
            path=path,
            suggestion=_suggestion(kinds, value, spelt),
        )


def _check_domain(kinds: tuple[str, ...], domain: Domain, path: str, takes: str) -> None:
    """Grid and choice values are checked one by one; a sampler by what Tune draws from it:
    integer samplers draw ints, the others floats (`quniform` too), which a whole-number key
    does not take (RLlib fails on a batch size of 2000.0 as on "2000")."""
    at = f"{path}.{domain.kind}"
    if domain.kind not in RULES:
        for i, v in enumerate(domain.args):
            _check(kinds, v, f"{at}[{i}]", takes, "")
        return
    draws = "int" if RULES[domain.kind].integer else "number"
    if draws in kinds or "number" in kinds:
        return
    raise SpecError(
        f"{takes}, but {domain.kind} draws "
        + ("whole numbers" if draws == "int" else "numbers with fractions, such as 0.5"),
        path=at,
        suggestion="search it with randint: [lower, upper] or qrandint: [lower, upper, q]"
        if "int" in kinds
        else "search it with choice: [...] of the values it takes",
    )


def _admits(kinds: tuple[str, ...], value: Any) -> bool:
    if isinstance(value, bool):
        return "bool" in kinds
    if whole_number(value):
        return "int" in kinds or "number" in kinds
    if isinstance(value, float):
        return "number" in kinds
    if isinstance(value, str):
        return "text" in kinds
    if isinstance(value, list | tuple):
        return "list" in kinds
    if isinstance(value, dict):
        return "mapping" in kinds
    return value is not None or "null" in kinds


def _suggestion(kinds: tuple[str, ...], value: Any, spelt: str) -> str | None:
    """The value written as the key takes it, where the intent is plain."""
    if isinstance(value, str):
        unquoted = _unquoted(kinds, value.strip())
        return f"write {spelt}{unquoted}, without quotes" if unquoted is not None else None
    if isinstance(value, float) and "int" in kinds and value.is_integer():
        return f"write {spelt}{int(value)}"
    if isinstance(value, bool) and "bool" not in kinds:
        return "write a number: YAML's true and false are not numbers"
    return None


def _unquoted(kinds: tuple[str, ...], text: str) -> str | None:
    if "bool" in kinds and text.lower() in ("true", "false"):
        return text.lower()
    try:
        number = float(text.replace("_", ""))
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    if "int" in kinds and number.is_integer():
        return str(int(number))
    return text if "number" in kinds else None


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, list | tuple):
        return f"the list {_text(list(value))}"
    if isinstance(value, dict):
        return f"the mapping {_text(value)}"
    return _text(value)


def _text(value: Any) -> str:
    """A value as YAML writes it (true, null), other values as Python shows them."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)
