"""Search-space translation: the spec's one-key mappings to typed domains, and those to Tune's.

Pure: parsing and checking need no Ray; only `to_tune` imports `ray.tune`, when called.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard

from tune_app.errors import SpecError, did_you_mean
from tune_app.scoring import finite


@dataclass(frozen=True)
class Domain:
    """One searched value: Tune's sampler name (`uniform`, `grid_search`, ...) and its arguments."""

    kind: str
    args: tuple[Any, ...]

    @property
    def is_grid(self) -> bool:
        return self.kind == "grid_search"

    def to_tune(self) -> Any:
        from ray import tune

        if self.is_grid:  # its values may hold domains of their own
            return tune.grid_search([to_tune(v) for v in self.args])
        if self.kind == "choice":
            return tune.choice(list(self.args))
        kind, args = self.tune_form()
        return getattr(tune, kind)(*args)

    def tune_form(self) -> tuple[str, tuple[Any, ...]]:
        """The kind and arguments Tune is given: the same values, written so that every
        searcher's converter reads them as Tune's sampler does.

        Tune's converters for Optuna and HyperOpt keep the upper bound of an integer q = 1,
        which Tune's sampler excludes (Optuna drew 10 in 2 of 40 draws of qrandint [0, 10, 1]),
        and HyperOpt rounds from bounds between multiples of q (it drew 0 in 35 of 40 draws
        of qrandint [1, 14, 5]): so q = 1 is the plain sampler, and the bounds are moved in
        onto the grid, as Tune's sampler moves them.
        """
        if self.kind not in ("qrandint", "qlograndint"):
            return self.kind, self.args
        lo, hi, q = self.args
        if q == 1:
            return self.kind[1:], (lo, hi)
        return self.kind, (-(-lo // q) * q, hi // q * q, q)

    def __repr__(self) -> str:
        """As a spec writes it, for the messages that show a value: {grid_search: [1, 2]}."""
        return f"{{{self.kind}: {list(self.args)!r}}}"

    def describe(self) -> str:
        return f"{self.kind}{list(self.args)}"

    def outside(self, value: Any) -> str | None:
        """Why `value` could not have been drawn from this domain, in words; None: it could.
        Bounds as Tune's sampler keeps them (`tune_form`), a float's upper bound allowed."""
        if self.kind in LIST_KINDS:
            same = any(same_value(v, value) for v in self.args)
            return None if same else f"not one of {list(self.args)}"
        rule = RULES[self.kind]
        if not (whole_number(value) if rule.integer else _number(value)):
            return f"not {'a whole number' if rule.integer else 'a finite number'}"
        kind, args = self.tune_form()
        normal = kind in ("randn", "qrandn")
        lo, hi = (-math.inf, math.inf) if normal else args[:2]
        q = args[2] if len(args) == 3 else None
        shut = kind not in ("randint", "lograndint")  # upper bound included
        if not lo <= value <= hi or (not shut and value == hi):
            return f"outside [{lo}, {hi}{']' if shut else ')'}"
        if q is not None and not math.isclose(value / q, round(value / q), abs_tol=1e-9):
            return f"not a multiple of q = {q}"
        return None


def _number(x: Any) -> bool:
    return finite(x) is not None and isinstance(x, int | float)


def same_value(a: Any, b: Any) -> bool:
    """One value as written and as read back: 1 and 1.0 alike (YAML and JSON may spell a
    number either way), but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b if _number(a) and _number(b) else type(a) is type(b) and a == b


def whole_number(x: Any) -> TypeGuard[int]:
    """Whether `x` is an int (YAML's true and false are not)."""
    return isinstance(x, int) and not isinstance(x, bool)


@dataclass(frozen=True)
class _Rule:
    """How one mapping is written: argument names, which must be integers, and its range checks,
    run in order until one finds a problem (a later one may rely on an earlier: q > 0)."""

    params: tuple[str, ...]
    integer: bool
    checks: tuple[Callable[..., str | None], ...]
    doc: str = ""


def _bounds(lo: Any, hi: Any, *_: Any) -> str | None:
    if not lo < hi:
        return f"lower < upper must hold, but got lower={lo}, upper={hi}"
    # Tune's float samplers draw lower + (upper - lower) * u: an infinite width draws inf.
    if isinstance(hi - lo, float) and not math.isfinite(hi - lo):
        return f"upper - lower must be a finite float, but got lower={lo:g}, upper={hi:g}"
    return None


def _log_bounds(lo: Any, hi: Any, *_: Any) -> str | None:
    if lo <= 0:
        return f"lower > 0 must hold for a log scale, but got lower={lo}"
    return _bounds(lo, hi)


def _positive_q(*args: Any) -> str | None:
    q = args[-1]  # a quantized mapping's last argument
    return f"q > 0 must hold, but got q={q}" if q <= 0 else None


def _positive_sd(mean: Any, sd: Any, *_: Any) -> str | None:
    return f"sd > 0 must hold, but got sd={sd}" if sd <= 0 else None


def _integer_values(lo: int, hi: int, q: int = 1) -> str | None:
    """An integer range must hold two values or more: on none, Tune's sampler fails mid-run;
    one is a constant, on which HyperOpt's TPE (`assert prior_sigma > 0`) and BOHB (ConfigSpace:
    "illegal settings") fail mid-run. Its bounds must fit numpy's int64, as Tune's sampler
    needs them."""
    if not all(-(2**63) <= bound < 2**63 for bound in (lo, hi)):
        return f"the bounds must fit in 64 bits (-2**63 to 2**63 - 1), but got [{lo}, {hi}]"
    first, last = -(-lo // q), (hi - 1 if q == 1 else hi // q)
    if last < first:
        return f"no multiple of q={q} lies in [{lo}, {hi}]"
    if last == first:
        upper = " (upper excluded)" if q == 1 else ""
        return f"it holds one value, {first * q}{upper}: a constant, not a search"
    return None


def _divisible(lo: Any, hi: Any, q: Any) -> str | None:
    """Tune's float quantization needs bounds that are multiples of q (it refuses the rest when
    the trials are made)."""
    for name, bound in (("lower", lo), ("upper", hi)):
        if not math.isfinite(bound / q):
            return (
                f"q={q:g} is too small: the {name} bound {bound:g} is beyond a float's count of it"
            )
        if not math.isclose(bound / q, round(bound / q), abs_tol=1e-9):
            return f"the {name} bound {bound:g} must be a multiple of q={q:g}"
    return None


# Bounds follow Tune: float samplers draw from [lower, upper); `randint` and `lograndint` exclude
# `upper`, while the quantized integer samplers `qrandint` and `qlograndint` include it, except
# for q = 1, where Tune excludes it too.
RULES: dict[str, _Rule] = {
    "uniform": _Rule(("lower", "upper"), False, (_bounds,), doc="float in [lower, upper)"),
    "quniform": _Rule(
        ("lower", "upper", "q"),
        False,
        (_positive_q, _bounds, _divisible),
        doc="float in [lower, upper], rounded to a multiple of q",
    ),
    "loguniform": _Rule(
        ("lower", "upper"),
        False,
        (_log_bounds,),
        doc="float in [lower, upper), uniform in log space",
    ),
    "qloguniform": _Rule(
        ("lower", "upper", "q"),
        False,
        (_positive_q, _log_bounds, _divisible),
        doc="loguniform, rounded to a multiple of q",
    ),
    "randint": _Rule(
        ("lower", "upper"),
        True,
        (_bounds, _integer_values),
        doc="integer in [lower, upper): upper excluded",
    ),
    "qrandint": _Rule(
        ("lower", "upper", "q"),
        True,
        (_positive_q, _bounds, _integer_values),
        doc="integer multiple of q in [lower, upper]: upper included unless q = 1",
    ),
    "lograndint": _Rule(
        ("lower", "upper"),
        True,
        (_log_bounds, _integer_values),
        doc="integer in [lower, upper), uniform in log space: upper excluded",
    ),
    "qlograndint": _Rule(
        ("lower", "upper", "q"),
        True,
        (_positive_q, _log_bounds, _integer_values),
        doc="lograndint rounded to a multiple of q: upper included unless q = 1",
    ),
    "randn": _Rule(("mean", "sd"), False, (_positive_sd,), doc="float from a normal distribution"),
    "qrandn": _Rule(
        ("mean", "sd", "q"),
        False,
        (_positive_sd, _positive_q),
        doc="normal, rounded to a multiple of q",
    ),
}
LIST_KINDS = {
    "grid_search": "every value, crossed with the other grid axes",
    "choice": "one of the values, uniformly",
}
KINDS = tuple(LIST_KINDS) + tuple(RULES)


def parse_space(value: Any, path: str) -> Any:
    """Walk a spec `config`, turning search-space mappings into `Domain`s; other values stay.

    Mappings and lists are walked (Tune resolves domains nested in both); `path` is the key path
    of `value`, used in error messages.
    """
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, args),) = value.items()
            if key in LIST_KINDS or key in RULES:
                return _parse_domain(str(key), args, f"{path}.{key}")
            hint = did_you_mean(str(key), KINDS)
            if hint and isinstance(args, list):
                raise SpecError(
                    f"'{key}' is not a search-space mapping",
                    path=path,
                    allowed=KINDS,
                    suggestion=hint + " (a constant one-key mapping must not hold a list)",
                )
        parsed = {k: parse_space(v, f"{path}.{k}") for k, v in value.items()}
        for k, v in parsed.items():
            if value_at({k: v}, str(k)) is not v and any(True for _ in iter_domains(v)):
                raise SpecError(
                    f"the key {str(k)!r} holds a searched value, but its path would not read "
                    "back (a searched value is found again by its path: names joined by '.', "
                    "list indexes as [i])",
                    path=f"{path}.{k}",
                    allowed="a name without '.', '[' or ']', or a whole number 0 or more",
                )
        return parsed
    if isinstance(value, list):
        return [parse_space(v, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def _parse_domain(kind: str, args: Any, path: str) -> Domain:
    if kind in LIST_KINDS:
        if not isinstance(args, list) or not args:
            raise SpecError(
                f"{kind} needs a non-empty list of values, but got {args!r}",
                path=path,
                suggestion=f"write {kind}: [a, b, c]",
            )
        values = tuple(parse_space(a, f"{path}[{i}]") for i, a in enumerate(args))
        if kind == "choice" and any(True for v in values for _ in iter_domains(v)):
            raise SpecError(
                "choice values must be constants, but one holds a search-space mapping", path=path
            )
        return Domain(kind, values)
    rule = RULES[kind]
    form = f"{kind}: [{', '.join(rule.params)}]"
    if not isinstance(args, list) or len(args) != len(rule.params):
        raise SpecError(
            f"{kind} takes {len(rule.params)} arguments [{', '.join(rule.params)}], "
            f"but got {args!r}",
            path=path,
            suggestion=f"write {form}",
        )
    wanted, test = ("integers", whole_number) if rule.integer else ("numbers", _number)
    if not all(test(a) for a in args):
        raise SpecError(
            f"{kind} arguments must be {wanted}, but got {args!r}",
            path=path,
            suggestion=f"write {form}",
        )
    problem = next(filter(None, (check(*args) for check in rule.checks)), None)
    if problem:
        raise SpecError(f"{kind}: {problem}", path=path, suggestion=f"write {form}: {rule.doc}")
    return Domain(kind, tuple(args))


def outer_domains(space: Any, path: str = "") -> Iterator[tuple[str, Domain]]:
    """The outermost `Domain`s of a parsed space (not values nested in them), with their dotted
    paths relative to the config: the one walk over mappings and lists the helpers below share."""
    if isinstance(space, Domain):
        yield path, space
    elif isinstance(space, dict):
        for k, v in space.items():
            yield from outer_domains(v, f"{path}.{k}" if path else str(k))
    elif isinstance(space, list):
        for i, v in enumerate(space):
            yield from outer_domains(v, f"{path}[{i}]")


# A part of a searched path as `outer_domains` writes it: `[i]` for a list index, else a key.
_PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def _step(node: Any, index: str, key: str) -> tuple[Any, Any]:
    """The container's key for one path part: a list index, or a mapping's key (a key of
    digits also as the integer a YAML mapping may hold); raises LookupError when absent."""
    if index:
        if not isinstance(node, list) or int(index) >= len(node):
            raise LookupError(index)
        return int(index), node[int(index)]
    if isinstance(node, dict):
        for k in (key, int(key)) if key.isdigit() else (key,):
            if k in node:
                return k, node[k]
    raise LookupError(key)


def value_at(config: Any, path: str, default: Any = None) -> Any:
    """The value at a searched path (`model.layers[0]`) of a config, or `default` where the
    config has none: the one reading of the paths `outer_domains` writes."""
    node = config
    try:
        for index, key in _PART.findall(path):
            node = _step(node, index, key)[1]
    except LookupError:
        return default
    return node


def place_at(config: Any, path: str, value: Any) -> bool:
    """Put `value` at a searched path of `config` in place; False where the path is not there."""
    parts = _PART.findall(path)
    node = config
    try:
        for index, key in parts[:-1]:
            node = _step(node, index, key)[1]
        at, _ = _step(node, *parts[-1])
    except LookupError:  # an IndexError too
        return False
    node[at] = value
    return True


def nested(values: dict[str, Any]) -> dict[Any, Any]:
    """Values by searched path as one tree of mappings (a list index as an int key), as Tune
    reads a preset point (`points_to_evaluate`): {"opt.lr": 1, "layers[0]": 2} gives
    {"opt": {"lr": 1}, "layers": {0: 2}}."""
    tree: dict[Any, Any] = {}
    for path, value in values.items():
        parts = [int(index) if index else key for index, key in _PART.findall(path)]
        node = tree
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return tree


def map_domains(space: Any, fn: Callable[[Domain], Any]) -> Any:
    """`space` with every outermost `Domain` replaced by `fn(domain)`; mappings and lists are
    rebuilt, constants kept."""
    if isinstance(space, Domain):
        return fn(space)
    if isinstance(space, dict):
        return {k: map_domains(v, fn) for k, v in space.items()}
    if isinstance(space, list):
        return [map_domains(v, fn) for v in space]
    return space


def iter_domains(space: Any, path: str = "") -> Iterator[tuple[str, Domain]]:
    """Every `Domain` in a parsed space, those nested in grid values too, with their paths."""
    for at, domain in outer_domains(space, path):
        yield at, domain
        if domain.is_grid:
            for i, v in enumerate(domain.args):
                yield from iter_domains(v, f"{at}[{i}]")


def grid_size(space: Any) -> int:
    """Number of configurations the grid axes of a parsed space cross to (1 without grid axes)."""
    return math.prod(
        sum(grid_size(v) for v in d.args) if d.is_grid else 1 for _, d in outer_domains(space)
    )


def searched_paths(space: Any) -> list[str]:
    """Dotted paths of the searched parameters: the outermost domains, not values nested in them."""
    return [path for path, _ in outer_domains(space)]


def to_tune(space: Any) -> Any:
    """The parsed space as Tune's `param_space`: every `Domain` becomes Tune's domain object."""
    return map_domains(space, Domain.to_tune)


def representative(space: Any) -> Any:
    """One concrete config of a parsed space, for checks that need values (never for a trial).

    Grid and choice axes give their first value, every other domain its first argument (a lower
    bound or a mean).
    """
    return map_domains(space, lambda d: representative(d.args[0]))


# A string written as Tune's Python (`tune.loguniform(1e-4, 1e-1)`, `lambda spec: ...`) is a
# constant to Tune as to us: we never evaluate a spec's values.
_TUNE_CALL = re.compile(r"\s*(?:ray\.)?tune\.(\w+)\s*\((.*)\)\s*", re.DOTALL)
_LAMBDA = re.compile(r"\s*lambda\b")
_INSTEAD = "write a search-space mapping such as {choice: [...]}, or compute it in the trainable"


def code_warnings(space: Any, path: str) -> list[str]:
    """One warning for each constant of a parsed space that reads as Tune code: a string such as
    'tune.choice([...])' or 'lambda config: ...', or a `{sample_from: ...}` mapping; each names
    its key path and the mapping to write instead."""
    if isinstance(space, str):
        found = _code_string(space, path)
        return [found] if found else []
    if isinstance(space, dict) and list(space) == ["sample_from"]:
        return [
            f"{path}: {{sample_from: ...}} is a constant mapping: a spec cannot hold a function; "
            + _INSTEAD
        ]
    if isinstance(space, dict):
        return [w for k, v in space.items() for w in code_warnings(v, f"{path}.{k}")]
    if isinstance(space, list):
        return [w for i, v in enumerate(space) for w in code_warnings(v, f"{path}[{i}]")]
    if isinstance(space, Domain) and space.kind in LIST_KINDS:
        at = f"{path}.{space.kind}"
        return [w for i, v in enumerate(space.args) for w in code_warnings(v, f"{at}[{i}]")]
    return []


def _code_string(text: str, path: str) -> str | None:
    call = _TUNE_CALL.fullmatch(text)
    if call is None and not _LAMBDA.match(text):
        return None
    shown = " ".join(text.split())
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    head = f"{path}: '{shown}' is a constant string"
    mapping = _mapping_for(*call.groups()) if call else None
    if mapping is None:
        return f"{head} (a spec's values are never evaluated); {_INSTEAD}"
    leaf = path.rsplit(".", 1)[-1]
    return f"{head}; write {mapping if leaf.endswith(']') else f'{leaf}: {mapping}'}"


def _mapping_for(kind: str, args: str) -> str | None:
    """The mapping for a call of Tune's `kind` with `args` as written, or None for a function
    with no mapping (`sample_from`). Arguments are copied as text, never evaluated; keyword or
    missing ones give the mapping's argument names instead."""
    args = args.strip()
    if kind in LIST_KINDS:
        listed = args.startswith("[") and args.endswith("]")
        return f"{{{kind}: {args if listed else '[a, b, ...]'}}}"
    if kind not in RULES:
        return None
    params = RULES[kind].params
    given = [a.strip() for a in args.split(",")] if args else []
    if len(given) != len(params) or any("=" in a for a in given):
        given = list(params)
    return f"{{{kind}: [{', '.join(given)}]}}"
