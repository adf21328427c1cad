"""Property tests: whatever YAML a user writes, loading and planning it gives a valid plan or the
app's SpecError (one clear message), never another exception."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tune_app.errors import SpecError, SpecErrors
from tune_app.plan.make import make_plan
from tune_app.spec import loads

from .conftest import SEARCH_SPACES

FILE = Path("fuzzed.yaml")

# Words the spec format knows, so generated documents reach deep validation, not only the top.
KEYS = [
    "run", "env", "stop", "config", "resources_per_trial", "num_samples", "metric", "mode",
    "search", "scheduler", "experiments", "seed", "simulations", "cpu_per_simulation",
    "max_failures", "max_concurrent_trials", "checkpoint_config", "checkpoint_freq", "expect",
    "grid_search", "grid", "choice", "uniform", "loguniform", "quniform", "randint", "randn",
    "type", "max_t", "grace_period", "reduction_factor", "training_iteration", "cpu", "gpu",
    "alpha", "beta", "lr", "population", "min", "max", "max_errored_trials", "time_attr",
    "n_initial_points", "episode_return_mean", "mean_accuracy", "e",
]  # fmt: skip
WORDS = [
    "my_func", "es_cartpole", "grid", "random", "hyperopt", "hyperband", "asha", "fifo",
    "median", "max", "min", "mean_accuracy", "CartPole-v1", "x:y", "nosuch:fn", "",
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(WORDS),
    st.text(max_size=12),
)
keys = st.one_of(st.sampled_from(KEYS), st.text(max_size=8), st.integers(-3, 3), st.booleans())
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=25,
)

EXPERIMENT_KEYS = [
    "env", "stop", "config", "resources_per_trial", "num_samples", "metric", "mode", "seed",
    "simulations", "cpu_per_simulation", "max_failures", "max_concurrent_trials",
    "checkpoint_config", "checkpoint_freq", "expect", "search", "scheduler",
]  # fmt: skip
experiments = st.fixed_dictionaries(
    {"run": st.one_of(st.sampled_from(["my_func", "es_cartpole"]), st.text(max_size=10))},
    optional={key: documents for key in EXPERIMENT_KEYS},
)
names = st.one_of(st.sampled_from(["e", "exp_1"]), st.text(max_size=6))
specs = st.one_of(
    st.dictionaries(names, experiments, min_size=1, max_size=2),  # the classic form
    st.fixed_dictionaries(  # the app form
        {"experiments": st.dictionaries(names, experiments, min_size=1, max_size=2)},
        optional={key: documents for key in ["search", "scheduler", "metric", "mode", "seed"]},
    ),
)

# The examples, less RLlib ones (planning those builds an algorithm config: slow for a fuzzer).
EXAMPLES = sorted(p.name for p in SEARCH_SPACES.glob("*.yaml") if "ppo" not in p.name)


def _check(text: str) -> None:
    """Load and plan `text`: a plan or a SpecError naming the file; nothing else may escape."""
    try:
        make_plan(loads(text, FILE), cpus=2)
    except SpecError as err:
        lines = str(err).split("\n")
        # One line per problem, each saying which file.
        assert len(lines) == (len(err.errors) if isinstance(err, SpecErrors) else 1), lines
        for line in lines:
            assert line.startswith(f"{FILE}: "), line


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_any_text_is_a_spec_or_a_spec_error(text):
    _check(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_any_yaml_document_is_a_spec_or_a_spec_error(document):
    _check(yaml.safe_dump(document, allow_unicode=True))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs)
def test_any_spec_shaped_document_is_a_spec_or_a_spec_error(document):
    _check(yaml.safe_dump(document, allow_unicode=True))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(EXAMPLES),
    data=st.data(),
)
def test_examples_with_one_value_replaced_are_a_spec_or_a_spec_error(name, data):
    document = yaml.safe_load((SEARCH_SPACES / name).read_text())
    _check(yaml.safe_dump(_replace_one(document, data), allow_unicode=True))


def _replace_one(document, data):
    """Walk down a random path of `document` and replace what is there with anything."""
    node = document
    while True:
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        if not children:
            break
        key, child = data.draw(st.sampled_from(children))
        if isinstance(child, dict | list) and data.draw(st.booleans()):
            node = child
            continue
        node[key] = data.draw(documents)
        break
    return document


# RLlib's published experiment files (tests/rllib_specs), as other people wrote them.
RLLIB_SPECS = sorted((Path(__file__).parent / "rllib_specs").glob("*.yaml"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(RLLIB_SPECS), data=st.data())
def test_rllib_files_with_one_value_replaced_are_a_spec_or_a_spec_error(path, data):
    _check(yaml.safe_dump(_replace_one(yaml.safe_load(path.read_text()), data), allow_unicode=True))
