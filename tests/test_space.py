"""Search-space mappings: parsed without Ray, translated to the very domains Tune builds."""

from __future__ import annotations

import numpy as np
import pytest
from ray import tune

from tune_app.errors import SpecError
from tune_app.space import (
    Domain,
    grid_size,
    outer_domains,
    parse_space,
    place_at,
    representative,
    searched_paths,
    to_tune,
    value_at,
)

# (spec mapping, the Tune domain a user would write by hand)
MAPPINGS = [
    pytest.param({"choice": [16, 32, 64]}, tune.choice([16, 32, 64]), id="choice"),
    pytest.param({"uniform": [-1.0, 2.0]}, tune.uniform(-1.0, 2.0), id="uniform"),
    pytest.param({"quniform": [0, 10, 0.5]}, tune.quniform(0, 10, 0.5), id="quniform"),
    pytest.param({"loguniform": [1e-4, 1e-1]}, tune.loguniform(1e-4, 1e-1), id="loguniform"),
    pytest.param(
        {"qloguniform": [1e-3, 1, 1e-3]}, tune.qloguniform(1e-3, 1, 1e-3), id="qloguniform"
    ),
    pytest.param({"randint": [0, 10]}, tune.randint(0, 10), id="randint"),
    pytest.param({"qrandint": [0, 100, 5]}, tune.qrandint(0, 100, 5), id="qrandint"),
    pytest.param({"lograndint": [1, 1000]}, tune.lograndint(1, 1000), id="lograndint"),
    pytest.param({"qlograndint": [1, 1000, 10]}, tune.qlograndint(1, 1000, 10), id="qlograndint"),
    pytest.param({"randn": [0.0, 2.0]}, tune.randn(0.0, 2.0), id="randn"),
    pytest.param({"qrandn": [1.0, 3.0, 0.25]}, tune.qrandn(1.0, 3.0, 0.25), id="qrandn"),
]


@pytest.mark.parametrize("mapping, expected", MAPPINGS)
def test_mapping_samples_like_the_tune_domain(mapping, expected):
    ours = to_tune(parse_space({"x": mapping}, "config"))["x"]
    assert type(ours) is type(expected)
    assert type(ours.sampler) is type(expected.sampler)
    a = ours.sample(size=200, random_state=np.random.default_rng(7))
    b = expected.sample(size=200, random_state=np.random.default_rng(7))
    assert np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize(
    ("mapping", "form"),
    [
        pytest.param({"qrandint": [1, 14, 5]}, ("qrandint", (5, 10, 5)), id="onto-the-grid"),
        pytest.param({"qrandint": [-7, 7, 5]}, ("qrandint", (-5, 5, 5)), id="negative"),
        pytest.param({"qrandint": [0, 10, 1]}, ("randint", (0, 10)), id="q-1"),
        pytest.param({"qlograndint": [1, 1006, 10]}, ("qlograndint", (10, 1000, 10)), id="log"),
        pytest.param({"qlograndint": [1, 10, 1]}, ("lograndint", (1, 10)), id="log-q-1"),
        pytest.param({"qrandint": [0, 100, 10]}, ("qrandint", (0, 100, 10)), id="on-the-grid"),
        pytest.param({"uniform": [0, 1]}, ("uniform", (0, 1)), id="float"),
    ],
)
def test_tune_is_given_the_same_domain_in_the_form_every_searcher_reads(mapping, form):
    """Optuna and HyperOpt read a q = 1 upper bound as included, and HyperOpt rounds from bounds
    off the grid; Tune's sampler draws the same values from both forms."""
    domain = parse_space(mapping, "c")
    assert domain.tune_form() == form
    ((kind, args),) = mapping.items()
    rng = np.random.default_rng(0)
    written = getattr(tune, kind)(*args).sample(size=3000, random_state=rng)
    given = domain.to_tune().sample(size=3000, random_state=rng)
    if kind != "uniform":
        assert set(np.asarray(written).tolist()) == set(np.asarray(given).tolist())


def test_grid_search_becomes_tune_grid():
    space = to_tune(parse_space({"a": {"grid_search": [1, 2, 3]}}, "config"))
    assert space == {"a": tune.grid_search([1, 2, 3])}


def test_randint_excludes_upper_and_qrandint_includes_it_for_q_over_1():
    rng = np.random.default_rng(0)
    excl = to_tune(parse_space({"randint": [0, 3]}, "c")).sample(size=2000, random_state=rng)
    incl = to_tune(parse_space({"qrandint": [0, 4, 2]}, "c")).sample(size=2000, random_state=rng)
    assert set(np.asarray(excl).tolist()) == {0, 1, 2}
    assert set(np.asarray(incl).tolist()) == {0, 2, 4}


def test_nested_mappings_and_lists_are_walked():
    raw = {
        "model": {"layers": [{"width": {"choice": [8, 16]}}, 4], "act": "relu"},
        "lr": {"loguniform": [1e-4, 1e-2]},
        "pair": {"grid_search": [[1, 2], [3, 4]]},
        "const": {"name": "x", "values": [1, 2]},
    }
    space = parse_space(raw, "config")
    assert isinstance(space["model"]["layers"][0]["width"], Domain)
    assert space["model"]["act"] == "relu"
    assert space["const"] == {"name": "x", "values": [1, 2]}
    assert searched_paths(space) == ["model.layers[0].width", "lr", "pair"]
    assert grid_size(space) == 2


@pytest.mark.parametrize(
    "raw, count",
    [
        pytest.param(
            {"a": {"grid_search": [1, 2, 3]}, "b": {"grid_search": [1, 2]}}, 6, id="cross"
        ),
        pytest.param({"a": {"uniform": [0, 1]}}, 1, id="no-grid"),
        pytest.param({"a": {"grid_search": [{"b": {"grid_search": [1, 2]}}, 5]}}, 3, id="nested"),
    ],
)
def test_grid_size(raw, count):
    assert grid_size(parse_space(raw, "config")) == count


BAD = [
    pytest.param({"uniform": [2, 1]}, "config.x.uniform", "lower < upper", id="uniform-order"),
    pytest.param({"uniform": [1]}, "config.x.uniform", "takes 2 arguments", id="uniform-arity"),
    pytest.param({"uniform": "0..1"}, "config.x.uniform", "takes 2 arguments", id="uniform-str"),
    pytest.param({"loguniform": [0, 1]}, "config.x.loguniform", "lower > 0", id="log-zero"),
    pytest.param({"randint": [0.5, 3]}, "config.x.randint", "must be integers", id="randint-float"),
    pytest.param({"randint": [True, 3]}, "config.x.randint", "must be integers", id="randint-bool"),
    pytest.param({"quniform": [0, 1, 0]}, "config.x.quniform", "q > 0", id="q-zero"),
    pytest.param({"randn": [0, -1]}, "config.x.randn", "sd > 0", id="sd-negative"),
    pytest.param(
        {"qrandint": [1, 4, 5]},
        "config.x.qrandint",
        "no multiple of q=5 lies in [1, 4]",
        id="q-none",
    ),
    pytest.param(
        {"randint": [0, 1]}, "config.x.randint", "it holds one value, 0 (upper excluded)", id="one"
    ),
    pytest.param(
        {"qlograndint": [3, 7, 5]}, "config.x.qlograndint", "it holds one value, 5:", id="q-one"
    ),
    pytest.param(
        {"randint": [0, 10**23]}, "config.x.randint", "must fit in 64 bits", id="int-too-wide"
    ),
    pytest.param(
        {"uniform": [-1e308, 1e308]}, "config.x.uniform", "upper - lower must be", id="too-wide"
    ),
    pytest.param({"a.b": {"choice": [1, 2]}}, "config.x.a.b", "would not read back", id="dot"),
    pytest.param({"c[0]": [{"randint": [0, 4]}]}, "config.x.c[0]", "would not", id="index"),
    pytest.param({True: {"grid_search": [1, 2]}}, "config.x.True", "would not", id="bool-key"),
    pytest.param({"choice": []}, "config.x.choice", "non-empty list", id="choice-empty"),
    pytest.param(
        {"choice": [1, {"uniform": [0, 1]}]}, "config.x.choice", "must be constants", id="choice-of"
    ),
    pytest.param(
        {"choice": [{"uniform": [1]}]}, "config.x.choice[0].uniform", "takes 2", id="choice-bad"
    ),
    pytest.param({"grid_search": 3}, "config.x.grid_search", "non-empty list", id="grid-scalar"),
    pytest.param({"gridsearch": [1, 2]}, "config.x", "did you mean 'grid_search'", id="near-miss"),
]


@pytest.mark.parametrize("mapping, path, words", BAD)
def test_bad_mapping_names_its_path(mapping, path, words):
    with pytest.raises(SpecError) as info:
        parse_space({"x": mapping}, "config")
    assert info.value.path == path
    assert words in str(info.value)


CONFIG = {"lr": 0.1, "layers": [0.5, 3, {"inner": [7]}], "by": {7: "a", "8": "b"}, "n": None}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        pytest.param("lr", 0.1, id="key"),
        pytest.param("layers[0]", 0.5, id="list-index"),
        pytest.param("layers[2].inner[0]", 7, id="nested"),
        pytest.param("by.7", "a", id="integer-key"),
        pytest.param("by.8", "b", id="digit-text-key"),
        pytest.param("n", None, id="none-value"),
        pytest.param("layers[3]", "missing", id="index-past-the-end"),
        pytest.param("lr.x", "missing", id="below-a-number"),
        pytest.param("layers.0", "missing", id="key-on-a-list"),
        pytest.param("absent", "missing", id="absent"),
    ],
)
def test_a_searched_path_reads_the_value_outer_domains_named(path, value):
    assert value_at(CONFIG, path, "missing") == value


def test_every_path_outer_domains_writes_reads_and_places_its_value():
    space = parse_space(
        {"a": {"uniform": [0, 1]}, "l": [{"choice": [1, 2]}, 3, {"k": [{"randint": [0, 4]}]}]},
        "config",
    )
    paths = [p for p, _ in outer_domains(space)]
    assert paths == ["a", "l[0]", "l[2].k[0]"]
    config = representative(space)
    for i, path in enumerate(paths):
        assert place_at(config, path, f"v{i}")
        assert value_at(config, path) == f"v{i}"
    assert config == {"a": "v0", "l": ["v1", 3, {"k": ["v2"]}]}
    assert not place_at(config, "l[5]", 1) and not place_at(config, "a.b", 1)
