"""Searchers that are handed each searched value by index and give back the value itself: a
wrapper around Tune's model-based searchers, whose converters sample otherwise than the domain
says.

- ConfigSpace hands a choice's values back as numpy scalars (np.int64, np.str_, np.True_,
  which `is True` is not) and refuses a value listed twice; HyperOpt's pyll hands lists back
  as tuples, constants included (`layers: [64, 64]` reached the trial as (64, 64)); TuneBOHB's
  suggestion of a value inside a list dropped the list's constants (`pair: [choice, 4]`
  became [2]). So a choice is searched as the index of its value, and a suggestion is the
  space as written with each domain replaced by its value.
- TuneBOHB drops q ("TuneBOHB does not support quantization"; ConfigSpace 1.x has no q and
  hpbandster refuses ordinal hyperparameters): qrandint [0, 100, 10] drew 37, quniform [0, 10,
  0.25] 4.1702, qloguniform [1e-4, 0.1, 1e-4] 0.0017826, off the grid in 27 to 40 of 40
  draws. We quantize rather than refuse: BOHB searches a quantized range as the integer range
  of its grid indices k, the value being k * q, as Tune's own sampler draws quantized integers.
  The model learns on the same axis (k is the value divided by q; ConfigSpace scales every
  range to [0, 1] anyway): over 30 seeds of 40 trials on a quadratic, the best loss had the
  same median with quniform [0, 1, 0.01] as with uniform [0, 1] (0.0095), and 0.024 with
  qloguniform [1e-4, 0.1, 1e-4] against 0.022 with loguniform.
- Tune's converters name a value by joining its path with "/", which fails on a list index
  (OptunaSearch: "sequence item 1: expected str instance, int found" for `layers: [{uniform:
  [0, 1]}, 3]`), and unflatten a suggestion into dicts only. So each searcher is handed a
  space of nested dicts keyed by the path's parts as text, holding the searched values alone;
  the suggestion is read back at those keys and put into the space as written.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ray import tune
from ray.tune.search import Searcher
from ray.tune.search.sample import Categorical, Domain, Float, Integer, LogUniform, Quantized
from ray.tune.search.variant_generator import parse_spec_vars

from tune_app.ray_internals.wrapping import WrapsSearcher
from tune_app.space import same_value


@dataclass(frozen=True)
class _Searched:
    """One searched value at `path`: the searcher's own value, or an integer index k into a
    choice's `values`, or onto the grid of `q` (the value is k * q). `name` is where the
    searcher is handed it."""

    path: tuple[Any, ...]
    name: tuple[str, ...] = ()
    values: tuple[Any, ...] | None = None
    q: float | None = None
    integer: bool = False

    def value(self, drawn: Any) -> Any:
        if self.values is not None:
            return self.values[int(drawn)]
        if self.q is None:
            return drawn
        v = int(drawn) * self.q
        return int(v) if self.integer else float(v)

    def handed(self, value: Any) -> Any:
        """What the searcher is handed for `value` (the inverse of `value`): a choice's index,
        a quantized value's grid index, or the value itself."""
        if self.values is not None:
            return next(i for i, v in enumerate(self.values) if same_value(v, value))
        return value if self.q is None else round(value / self.q)


def _by_index(path: tuple[Any, ...], domain: Domain, quantized: bool) -> tuple[Any, _Searched]:
    """The domain the searcher is handed in place of `domain`, and how its value maps back."""
    if isinstance(domain, Categorical):
        values = tuple(domain.categories)
        return tune.choice(list(range(len(values)))), _Searched(path, values=values)
    sampler = domain.get_sampler()
    if not quantized or not isinstance(sampler, Quantized):
        return domain, _Searched(path)
    if not isinstance(domain, Float | Integer):  # Tune quantizes numbers only
        return domain, _Searched(path)
    q, integer = sampler.q, isinstance(domain, Integer)
    first: int
    last: int
    if integer:  # bounds moved in onto the grid; upper excluded for q = 1 (Tune's rule)
        first = math.ceil(domain.lower / q)
        last = int(domain.upper // q) - (1 if q == 1 else 0)
    else:  # Tune refuses float bounds that are not multiples of q
        first, last = round(domain.lower / q), round(domain.upper / q)
    make = tune.lograndint if isinstance(sampler.get_sampler(), LogUniform) else tune.randint
    return make(first, last + 1), _Searched(path, q=q, integer=integer)


def _at(config: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        config = config[key]
    return config


def _named(config: Any, path: tuple[Any, ...]) -> tuple[str, ...]:
    """Where the searcher is handed the value at `path` of `config`: its parts as text, a list
    index as "[i]" and a key of digits quoted, since TuneBOHB unflattens a part of digits into
    a list (and asserts the list holds every index before it)."""
    names = []
    for key in path:
        text = f"[{key}]" if isinstance(config, list) else str(key)
        names.append(f"'{text}'" if text.isdigit() else text)
        config = config[key]
    return tuple(names)


def _dotted(config: Any, path: tuple[Any, ...]) -> str:
    """The path as `space.outer_domains` writes it: keys joined by ".", a list index "[i]"."""
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(config, list) else f"{'.' if text else ''}{key}"
        config = config[key]
    return text


def handed_points(
    config: dict[str, Any],
    earlier: Sequence[dict[str, Any]],
    quantized: bool = False,
    flat: bool = False,
) -> list[dict[str, Any]]:
    """Earlier configurations (each its searched values by path) as a searcher inside
    `SearchesByIndex` on Tune's space `config` is handed them (warm start): under its text keys,
    a choice by its value's index and, with `quantized`, a quantized range by its grid index;
    with `flat`, the keys joined by "/", as Tune's OptunaSearch and TuneBOHB name values."""
    searched = []
    for path, domain in parse_spec_vars(config)[1]:
        how = replace(_by_index(path, domain, quantized)[1], name=_named(config, path))
        searched.append((_dotted(config, path), how))
    points = []
    for values in earlier:
        point: dict[str, Any] = {}
        for dotted, how in searched:
            if flat:
                point["/".join(how.name)] = how.handed(values[dotted])
            else:
                _put(point, how.name, how.handed(values[dotted]))
        points.append(point)
    return points


def _put(space: dict[str, Any], names: tuple[str, ...], value: Any) -> None:
    for name in names[:-1]:
        space = space.setdefault(name, {})
    space[names[-1]] = value


class SearchesByIndex(WrapsSearcher):
    """Around a Tune searcher: it is handed the searched values alone, under text keys, choices
    (and, with `quantized`, quantized ranges) as index ranges; each suggestion is the space as
    written with every domain replaced by its value.

    The space must come through `set_search_properties`, as a Tuner passes it.
    """

    def __init__(self, searcher: Searcher, quantized: bool = False) -> None:
        super().__init__(searcher)
        self.quantized = quantized
        self.written: dict[str, Any] = {}
        self.searched: tuple[_Searched, ...] = ()

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: dict[str, Any], **spec: Any
    ) -> bool:
        handed: dict[str, Any] = {}
        searched = []
        for path, domain in parse_spec_vars(config)[1]:
            domain_handed, how = _by_index(path, domain, self.quantized)
            how = replace(how, name=_named(config, path))
            _put(handed, how.name, domain_handed)
            searched.append(how)
        accepted = bool(self.searcher.set_search_properties(metric, mode, handed, **spec))
        if accepted:
            self.written, self.searched = copy.deepcopy(config), tuple(searched)
        return accepted

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        drawn = self.searcher.suggest(trial_id)
        if not isinstance(drawn, dict):  # None (wait) or Searcher.FINISHED
            return drawn
        config = copy.deepcopy(self.written)
        for how in self.searched:
            _at(config, how.path[:-1])[how.path[-1]] = how.value(_at(drawn, how.name))
        return config

    def get_state(self) -> dict:
        return {"written": self.written, "searched": self.searched}

    def set_state(self, state: dict) -> None:
        self.written, self.searched = state["written"], state["searched"]
