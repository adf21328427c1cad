"""The JSON Schema `tune_app schema` prints accepts every spec the loader accepts, and refuses
what the loader refuses where a schema can say so: checked with `jsonschema` on the data as the
loader reads it (safe YAML with YAML 1.2 floats). Values are compared as their YAML types: a
string the loader's pydantic models would coerce to a number (`num_samples: '4'`) is left out."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import jsonschema
import pytest

from tune_app import space, spec
from tune_app.errors import SpecError

from .conftest import ROOT, SEARCH_SPACES

FILE = Path("spec.yaml")
SPEC_FILES = sorted(SEARCH_SPACES.glob("*.yaml")) + sorted(
    (ROOT / "tests/rllib_specs").glob("*.yaml")
)


@pytest.fixture(scope="module")
def schema() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(spec.json_schema())


def errors_of(validator: jsonschema.Draft202012Validator, text: str) -> list[str]:
    """What the schema finds wrong with the spec `text`, read as the loader reads it."""
    data = spec.read_yaml_text(text, FILE)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(spec.json_schema())


@pytest.mark.parametrize("path", SPEC_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_spec_file_validates(schema, path):
    spec.load(path)  # the loader takes it
    text, _ = spec.read_yaml(path)
    assert errors_of(schema, text) == []


def _spec_texts_in_tests() -> list[tuple[str, str]]:
    """(where, text) of every string literal in the tests that the loader takes as a spec."""
    found = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        if path.name == Path(__file__).name:
            continue  # this file's own tables are checked below
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            text = node.value if isinstance(node, ast.Constant) else None
            # `{{` marks a str.format template, not YAML.
            if not isinstance(text, str) or "run:" not in text or "{{" in text:
                continue
            try:
                spec.loads(text, FILE)
            except SpecError:
                continue
            found.append((f"{path.name}:{node.lineno}", text))
    return found


TEST_SPECS = _spec_texts_in_tests()


def test_the_tests_feed_the_loader_many_specs():
    assert len(TEST_SPECS) >= 30, [where for where, _ in TEST_SPECS]


@pytest.mark.parametrize(("where", "text"), TEST_SPECS, ids=[w for w, _ in TEST_SPECS])
def test_every_spec_text_the_tests_load_validates(schema, where, text):
    assert errors_of(schema, text) == []


ACCEPTED = [
    pytest.param(
        """
        ppo:
          run: PPO
          env: CartPole-v1
          stop: {training_iteration: 2, env_runners/episode_return_mean: 150}
          num_samples: 2
          resources_per_trial: {cpu: 1, gpu: 0}
          max_failures: -1
          checkpoint_config: {num_to_keep: 2, checkpoint_frequency: 1}
          config: {lr: 0.001, num_workers: 1, model: {fcnet_hiddens: [64, 64]}}
        """,
        id="classic-tune-experiment",
    ),
    pytest.param(
        """
        metric: score
        mode: max
        scope: last-3-avg
        seed: 3
        max_concurrent_trials: 2
        storage_path: out
        search: {type: hyperopt, n_initial_points: 4, gamma: 0.3}
        scheduler: {type: asha, max_t: 9, grace_period: 1, reduction_factor: 3}
        expect: {max_errored_trials: 1, score: {min: 0.5}}
        experiments:
          a: {run: my_func, config: {alpha: {uniform: [0, 1]}}}
          b.2: {run: "pkg.mod:train", mode: min, search: random, scheduler: fifo}
        """,
        id="app-form",
    ),
    pytest.param("search: grid\nscheduler: median\nexperiments: {e: {run: f}}", id="shorthands"),
    pytest.param("metric: null\nmode: null\nexperiments: {e: {run: f}}", id="null-settings"),
    pytest.param("experiments: {experiments: {run: f}}", id="experiment-named-experiments"),
    pytest.param("metric: {run: f}", id="classic-experiment-named-like-a-setting"),
    pytest.param("e: {run: f, resources: {cpu: 2}}", id="resources-alias"),
    pytest.param(
        """
        e:
          run: f
          local_dir: /tmp/old
          checkpoint_freq: 5
          checkpoint_at_end: true
          keep_checkpoints_num: 2
          checkpoint_score_attr: min-loss
          checkpoint_config: {checkpoint_score_order: max}
        """,
        id="legacy-tune-keys",
    ),
    pytest.param(
        """
        e:
          run: PPO
          env: CartPole-v1
          config:
            num_sgd_iter: 3
            sgd_minibatch_size: 64
            lr_schedule: [[0, 0.01], [1000, 0.001]]
            exploration_config: {type: EpsilonGreedy, epsilon_timesteps: 100}
            a_key_no_algorithm_has: 1
        """,
        id="legacy-rllib-and-any-config-keys",
    ),
    pytest.param(
        """
        e:
          run: f
          config:
            a: {grid_search: [1, {uniform: [0, 1]}, [2, 3]]}
            b: {choice: [x, y]}
            c: {loguniform: [1e-5, 1E-2]}
            d: {qrandint: [1, 9, 2]}
            e: [{randn: [0, 1]}, {nested: {qlograndint: [1, 64, 1]}}]
            f: {type: loguniform, lower: 1e-4, upper: 1e-2}
        """,
        id="search-spaces-nested-and-constant-mappings",
    ),
    pytest.param(
        "e: {run: f, stop: {loss: -3e+2, time: 1e4}, config: {lr: 2.5e3}}", id="yaml-1.2-floats"
    ),
    pytest.param(
        "time_budget_s: 3600\nresult_timeout_s: 60\n"
        "experiments: {e: {run: f, time_budget_s: 1.5, result_timeout_s: 2}}",
        id="time-limits",
    ),
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_what_the_loader_accepts_the_schema_accepts(schema, text):
    text = textwrap.dedent(text)
    spec.loads(text, FILE)
    assert errors_of(schema, text) == []


REJECTED = [
    pytest.param("modes: max\nexperiments: {e: {run: f}}", id="unknown-file-level-key"),
    pytest.param("mode: best\nexperiments: {e: {run: f}}", id="wrong-mode"),
    pytest.param("e: {run: f, mode: maximum}", id="wrong-experiment-mode"),
    pytest.param("e: {run: f, num_sample: 2}", id="unknown-experiment-key"),
    pytest.param("e: {env: CartPole-v1}", id="no-run"),
    pytest.param("e: {run: 'os.system(1)'}", id="run-not-a-reference"),
    pytest.param("e: {run: f, num_samples: 0}", id="num-samples-below-1"),
    pytest.param("e: {run: f, scope: last-0-avg}", id="bad-scope"),
    pytest.param("'a b': {run: f}", id="experiment-name-not-a-folder"),
    pytest.param("experiments: {e/f: {run: f}}", id="app-experiment-name-not-a-folder"),
    pytest.param("experiments: {}", id="no-experiments"),
    pytest.param("experiments: {run: f}", id="experiments-holds-no-mapping"),
    pytest.param("experiments: {e: {run: f}}\nother: {run: f}", id="app-form-with-an-experiment"),
    pytest.param("e: f", id="experiment-not-a-mapping"),
    pytest.param(
        "e: {run: f, resources: {cpu: 1}, resources_per_trial: {cpu: 1}}", id="alias-twice"
    ),
    pytest.param("e: {run: f, local_dir: a, storage_path: b}", id="legacy-and-new-key"),
    pytest.param(
        "e: {run: f, checkpoint_freq: 2, checkpoint_config: {checkpoint_frequency: 3}}",
        id="legacy-and-new-nested-key",
    ),
    pytest.param("e: {run: f, resources: {cpus: 1}}", id="unknown-resource"),
    pytest.param("e: {run: f, scheduler: asha2}", id="unknown-scheduler"),
    pytest.param("e: {run: f, scheduler: {max_t: 3}}", id="scheduler-without-type"),
    pytest.param("e: {run: f, scheduler: {type: asha, max_tt: 3}}", id="unknown-scheduler-option"),
    pytest.param(
        "e: {run: f, search: {type: hyperopt, gamma: 1}}", id="search-option-out-of-range"
    ),
    pytest.param("e: {run: f, stop: {x: high}}", id="stop-not-a-number"),
    pytest.param("e: {run: f, config: {x: {grid_search: []}}}", id="empty-grid"),
    pytest.param("e: {run: f, config: {x: {randint: [1, 2.5]}}}", id="randint-float"),
    pytest.param("e: {run: f, config: {x: [{a: {uniform: [0]}}]}}", id="nested-domain-arity"),
    pytest.param("e: {run: f, expect: {score: 3}}", id="expect-metric-not-a-bound"),
    pytest.param("e: {run: f, expect: {max_errored_trials: -1}}", id="expect-negative-count"),
    pytest.param("e: {run: f, expect: {score: {low: 1}}}", id="expect-unknown-bound-key"),
    pytest.param("time_budget_s: 0\nexperiments: {e: {run: f}}", id="time-budget-zero"),
    pytest.param("e: {run: f, result_timeout_s: -1}", id="result-timeout-negative"),
    pytest.param("e: {run: f, result_timeout_s: true}", id="result-timeout-bool"),
    pytest.param("e: {run: f, time_budget_s: '60'}", id="time-budget-text"),
]


@pytest.mark.parametrize("text", REJECTED)
def test_what_the_schema_rejects_the_loader_rejects(schema, text):
    with pytest.raises(SpecError):
        spec.loads(text, FILE)
    assert errors_of(schema, text)


def _args(kind: str) -> list[int]:
    """Arguments that `space` takes for `kind`: bounds above 0, q and sd of 1."""
    if kind in space.LIST_KINDS:
        return [1, 2]
    params = space.RULES[kind].params
    return ([0, 1, 1] if params[0] == "mean" else [1, 4, 1])[: len(params)]


def _domain(kind: str, args: list[int]) -> str:
    return f"e: {{run: f, config: {{x: {{{kind}: {args}}}}}}}"


@pytest.mark.parametrize("kind", space.KINDS)
def test_every_search_space_kind_is_checked_as_the_loader_checks_it(schema, kind):
    """The schema follows `space`'s tables: an argument too many or too few fails both."""
    good = _args(kind)
    spec.loads(_domain(kind, good), FILE)
    assert errors_of(schema, _domain(kind, good)) == []
    wrong = [[]] if kind in space.LIST_KINDS else [[*good, 1], good[:-1]]
    for args in wrong:
        with pytest.raises(SpecError):
            spec.loads(_domain(kind, args), FILE)
        assert errors_of(schema, _domain(kind, args)), args
