"""Every searcher draws inside the domain as Tune defines it (`ray.tune.search.sample`): the right
type, within the bounds (`randint` without its upper bound, `qrandint` with it unless q = 1),
on the grid of q; or `validate` refuses the pairing.

The searchers are built from the table and driven without Ray, as a Tuner drives them:
`set_search_properties`, then `suggest` and the result, each trial in turn.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tune_app import methods, spec
from tune_app.errors import SpecError
from tune_app.plan.make import make_plan
from tune_app.space import KINDS, RULES, Domain, parse_space

from .conftest import user_module

SUGGESTIONS = 12  # a third random, the rest from each model-based searcher's model
WARM_UP = 4


def admits(domain: Domain, value: Any) -> bool:
    """Whether Tune's domain holds `value`, restated from `ray.tune.search.sample` (the float
    samplers draw from [lower, upper): `upper` itself is taken, as Tune's `Float.is_valid`
    takes it, since a searcher that clips to the bounds can land on it)."""
    kind, args = domain.kind, domain.args
    if kind == "choice":  # of its own type: np.True_ or np.int64(1) is not True or 1
        return any(type(value) is type(a) and value == a for a in args)
    integer = RULES[kind].integer
    if integer != (isinstance(value, int) and not isinstance(value, bool)):
        return False
    if not integer and not isinstance(value, float):
        return False
    q = args[2] if len(args) == 3 else None
    if q is not None and not math.isclose(value / q, round(value / q), abs_tol=1e-9):
        return False
    if kind in ("randn", "qrandn"):
        return math.isfinite(value)
    lower, upper = args[0], args[1]
    if kind in ("randint", "lograndint") or (integer and q == 1):
        return lower <= value < upper
    return lower - 1e-12 * abs(lower) <= value <= upper + 1e-12 * abs(upper)


def _multiples(q: float, low: int, high: int) -> st.SearchStrategy[list[float]]:
    """[lower, upper, q], both bounds multiples of q (Tune refuses others for floats), lower
    between low * q and high * q."""
    first = st.integers(low, high)
    return first.flatmap(lambda k: st.integers(k + 1, k + 60).map(lambda m: [k * q, m * q, q]))


def _mapping(kind: str) -> st.SearchStrategy[Any]:
    """An argument list for one kind: random bounds, narrow spans included."""
    qs = st.sampled_from([0.1, 0.25, 1e-3, 0.5, 1, 2])
    integer_bounds = st.integers(-50, 50).flatmap(
        lambda lo: st.tuples(st.just(lo), st.integers(lo + 1, lo + 120))
    )
    log_integer_bounds = st.integers(1, 60).flatmap(
        lambda lo: st.tuples(st.just(lo), st.integers(lo + 1, lo + 2000))
    )
    args: dict[str, st.SearchStrategy[Any]] = {
        "uniform": st.tuples(st.floats(-100, 100), st.floats(1e-3, 100)).map(
            lambda t: [t[0], t[0] + t[1]]
        ),
        "loguniform": st.tuples(st.floats(-6, 2), st.floats(0.1, 4)).map(
            lambda t: [10 ** t[0], 10 ** (t[0] + t[1])]
        ),
        "quniform": qs.flatmap(lambda q: _multiples(q, -50, 50)),
        "qloguniform": qs.flatmap(lambda q: _multiples(q, 1, 50)),
        "randint": integer_bounds.map(list),
        "lograndint": log_integer_bounds.map(list),
        "qrandint": st.tuples(integer_bounds, st.integers(1, 12)).map(lambda t: [*t[0], t[1]]),
        "qlograndint": st.tuples(log_integer_bounds, st.integers(1, 12)).map(
            lambda t: [*t[0], t[1]]
        ),
        "randn": st.tuples(st.floats(-10, 10), st.floats(0.01, 10)).map(list),
        "qrandn": st.tuples(st.floats(-10, 10), st.floats(0.1, 10), qs).map(list),
        "choice": st.lists(
            st.one_of(
                st.integers(-3, 3),
                st.booleans(),
                st.floats(-3, 3),
                st.text("ab", max_size=2),
                st.none(),
                st.lists(st.integers(0, 2), min_size=1, max_size=2),
                st.dictionaries(st.sampled_from("ab"), st.integers(0, 2), min_size=1, max_size=2),
            ),
            min_size=1,
            max_size=4,
        ),
    }
    return args[kind]


@st.composite
def domains(draw: st.DrawFn, kind: str) -> Domain:
    args = draw(_mapping(kind))
    try:
        return parse_space({kind: args}, "config.x")
    except SpecError:  # an integer range holding one value, or no multiple of q
        assume(False)
        raise


# Each entry of the table, with a short warm-up so that most suggestions come from the model;
# Optuna's samplers as well, since each samples its distributions its own way.
SETUPS = {
    "grid": ("grid", {}),
    "random": ("random", {}),
    "hyperopt": ("hyperopt", {"n_initial_points": WARM_UP}),
    "optuna": ("optuna", {"n_startup_trials": WARM_UP}),
    "optuna-cmaes": ("optuna", {"sampler": "cmaes", "n_startup_trials": WARM_UP}),
    "optuna-qmc": ("optuna", {"sampler": "qmc"}),
    "bohb": ("bohb", {"min_points_in_model": WARM_UP}),
}
SAMPLED_KINDS = [k for k in KINDS if k != "grid_search"]  # a grid axis is no draw


def test_every_searcher_of_the_table_is_checked():
    assert {name for name, _ in SETUPS.values()} == set(methods.SEARCHERS)


def _loss(domain: Domain, value: Any) -> float:
    """The value itself (or a choice's position), so that a model-based searcher minimising or
    maximising it is drawn to a bound, where the off-by-ones are."""
    if domain.kind == "choice":
        return float(next((i for i, a in enumerate(domain.args) if a == value), -1))
    return float(value)


def draws(setup: str, domain: Domain, mode: str, seed: int, count: int = SUGGESTIONS) -> list:
    """`count` values the searcher suggests for `x`, told each one's loss before the next."""
    from ray.tune.search.variant_generator import generate_variants

    name, options = SETUPS[setup]
    entry = methods.SEARCHERS[name]
    built = entry.options.model_validate({"type": name, **options})
    if entry.generates_variants:  # Tune's variant generator draws each variant with this
        rng = np.random.default_rng(seed)
        space = {"config": {"x": domain.to_tune()}}
        return [
            next(generate_variants(space, random_state=rng))[1]["config"]["x"] for _ in range(count)
        ]
    searcher = entry.build(built, methods.Context(seed=seed))
    searcher.set_search_properties("loss", mode, {"x": domain.to_tune()})
    found = []
    for i in range(count):
        value = searcher.suggest(f"t{i}")["x"]
        result = {"loss": _loss(domain, value), "training_iteration": 1}
        searcher.on_trial_result(f"t{i}", {**result, "hyperband_info": {"budget": 9}})
        searcher.on_trial_complete(f"t{i}", result)
        found.append(value)
    return found


@pytest.fixture(scope="module")
def quadratic(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("domains")
    user_module("quadratic.py", folder)
    return folder


def _refused_by_validate(folder: Path, searcher: str, domain: Domain) -> SpecError:
    text = (
        f"metric: loss\nmode: min\nsearch: {searcher}\nexperiments:\n  e:\n"
        f"    run: quadratic:train\n    num_samples: 2\n"
        f"    config: {json.dumps({'x': {domain.kind: list(domain.args)}})}\n"
    )
    with pytest.raises(SpecError) as info:
        make_plan(spec.loads(text, folder / "spec.yaml"), cpus=2)
    return info.value


@pytest.mark.parametrize("kind", SAMPLED_KINDS)
@pytest.mark.parametrize("setup", SETUPS)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), mode=st.sampled_from(["min", "max"]), seed=st.integers(0, 2**16))
def test_every_searcher_draws_inside_the_domain_or_validate_refuses_it(
    quadratic, setup, kind, data, mode, seed
):
    domain = data.draw(domains(kind), label="domain")
    entry = methods.SEARCHERS[SETUPS[setup][0]]
    refused = entry.refuses(domain) if entry.refuses is not None else None
    if refused is not None:
        err = _refused_by_validate(quadratic, entry.name, domain)
        assert "e.config.x" in str(err) and refused[0] in str(err)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = draws(setup, domain, mode, seed)
    outside = [v for v in found if not admits(domain, v)]
    assert not outside, f"{setup} drew {outside!r} from {domain.describe()}"


# What the searchers drew outside the domain before this was fixed (40 draws each): kept as
# fixed cases, since random bounds rarely hit these exact shapes.
MEASURED = [
    pytest.param("bohb", {"quniform": [0, 10, 0.25]}, id="bohb-quniform-4.1702"),
    pytest.param("bohb", {"qloguniform": [1e-4, 0.1, 1e-4]}, id="bohb-qloguniform-0.0017826"),
    pytest.param("bohb", {"qrandint": [0, 100, 10]}, id="bohb-qrandint-37"),
    pytest.param("bohb", {"qlograndint": [5, 1006, 10]}, id="bohb-qlograndint-45"),
    pytest.param("bohb", {"choice": [True, False]}, id="bohb-choice-np.True_"),
    pytest.param("bohb", {"choice": [1, 1, 2]}, id="bohb-choice-twice-ValueError"),
    pytest.param("hyperopt", {"qrandint": [1, 14, 5]}, id="hyperopt-qrandint-0-and-15"),
    pytest.param("hyperopt", {"qlograndint": [1, 1000, 10]}, id="hyperopt-qlograndint-0"),
    pytest.param("hyperopt", {"qlograndint": [1, 10, 1]}, id="hyperopt-qlograndint-upper"),
    pytest.param("hyperopt", {"choice": [[64, 64], [32]]}, id="hyperopt-choice-tuple"),
    pytest.param("optuna", {"qrandint": [0, 10, 1]}, id="optuna-qrandint-upper"),
    pytest.param("optuna-qmc", {"qrandint": [0, 10, 1]}, id="optuna-qmc-qrandint-upper"),
]


@pytest.mark.parametrize(("setup", "mapping"), MEASURED)
def test_what_a_searcher_drew_outside_its_domain_lies_inside_it(setup, mapping):
    domain = parse_space(mapping, "config.x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = [v for mode in ("min", "max") for v in draws(setup, domain, mode, 0, count=20)]
    outside = [v for v in found if not admits(domain, v)]
    assert not outside, f"{setup} drew {outside!r} from {domain.describe()}"


@pytest.mark.parametrize("setup", ["hyperopt", "bohb", "optuna"])
def test_a_trial_gets_the_constants_as_written_beside_the_drawn_values(setup):
    """HyperOpt gave lists back as tuples, constants too (`layers: [64, 64]` reached the trial
    as (64, 64)); BOHB's suggestion of a value inside a list dropped the list's constants
    (`pair: [choice, 4]` became [2]); Optuna failed on any domain inside a list."""
    from ray import tune
    from ray.tune.utils.util import merge_dicts

    name, options = SETUPS[setup]
    entry = methods.SEARCHERS[name]
    searcher = entry.build(entry.options.model_validate({"type": name}), methods.Context(seed=1))
    space = {
        "x": tune.uniform(0, 1),
        "pair": [tune.choice([[1], [2]]), 4],
        "layers": [64, 64],
        "net": {"act": "relu", "sizes": [[8, 8]]},
        "widths": [tune.uniform(0, 1), 3, {"inner": [tune.randint(1, 4)]}],
        "by_number": {7: tune.choice(["a", "b"]), "8": tune.uniform(2, 3)},
    }
    searcher.set_search_properties("loss", "min", space)
    for i in range(3):
        config = merge_dicts(space, searcher.suggest(f"t{i}"))  # as Tune makes a trial's
        assert type(config["x"]) is float
        assert config["pair"][0] in ([1], [2]) and type(config["pair"][0]) is list
        assert config["pair"][1:] == [4] and type(config["pair"]) is list
        assert config["layers"] == [64, 64] and type(config["layers"]) is list
        assert config["net"] == {"act": "relu", "sizes": [[8, 8]]}
        assert type(config["net"]["sizes"][0]) is list
        assert 0 <= config["widths"][0] <= 1 and config["widths"][1] == 3
        assert config["widths"][2]["inner"][0] in (1, 2, 3) and type(config["widths"]) is list
        assert config["by_number"][7] in ("a", "b") and 2 <= config["by_number"]["8"] <= 3
        searcher.on_trial_complete(f"t{i}", {"loss": 1.0})
