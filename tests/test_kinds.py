"""Each kind of trainable answers the questions the plan, the runner and the results ask
(`tune_app.kinds.TrainableKind`) as the string tests it replaced did, and no module outside the
kinds tests which kind a trainable is by its name."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT, USER_MODULES
from tune_app.registry import resolve
from tune_app.user_code import user_path

PPO_METRIC = "env_runners/episode_return_mean_smoothed"

TRAITS = {
    "registered": dict(
        name="registered",
        describe="registered: classic Tune example: mean_accuracy = i ** alpha, i grows by beta "
        "per step",
        default_metric=("mean_accuracy", "max"),
        declared_metrics=("mean_accuracy", "timesteps_total"),
        reuses_actors=True,
        sizes_own_placement=False,
        reports_late=False,
        frequent_state_saves=True,
        user_modules=(),
        search_path=(),
    ),
    "function": dict(
        name="function",
        describe="module:function",
        default_metric=(None, None),
        declared_metrics=(),
        reuses_actors=True,
        sizes_own_placement=False,
        reports_late=False,
        frequent_state_saves=True,
        user_modules=("quadratic",),
        search_path=user_path(USER_MODULES),  # a user's function is imported from the spec's folder
    ),
    "rllib": dict(
        name="rllib",
        describe="RLlib algorithm",
        default_metric=(PPO_METRIC, "max"),
        declared_metrics=(),
        reuses_actors=False,
        sizes_own_placement=True,
        reports_late=True,
        frequent_state_saves=False,
        user_modules=(),
        # where module:name code in its config (callbacks, connectors) is found
        search_path=user_path(USER_MODULES),
    ),
}
RUNS = {"registered": "my_func", "function": "quadratic:train", "rllib": "PPO"}


@pytest.mark.parametrize("kind_name", list(TRAITS))
def test_each_kind_answers_its_traits(kind_name):
    kind = resolve(RUNS[kind_name], USER_MODULES).kind
    expected = TRAITS[kind_name]
    assert {trait: getattr(kind, trait) for trait in expected} == expected


@pytest.mark.parametrize(
    "run, config, expected",
    [
        pytest.param("my_func", {"alpha": 2.0}, {"alpha": 0.5, "beta": 1.0}, id="registered"),
        pytest.param("quadratic:train", {"x": 0.1}, {"x": 0.1}, id="function"),
        pytest.param(
            "PPO",
            {"num_env_runners": 4, "lr": 0.1},
            {"num_env_runners": 1, "num_learners": 0, "lr": 0.1, "minibatch_size": 64},
            id="rllib-caps-and-overrides",
        ),
    ],
)
def test_smoke_config_sets_declared_overrides_and_caps(run, config, expected):
    smoke = resolve(run, USER_MODULES).kind.smoke_config(config)
    assert {k: smoke.get(k) for k in expected} == expected


@pytest.mark.parametrize(
    "run, wrapped",
    [
        pytest.param("my_func", False, id="registered"),
        pytest.param("quadratic:train", False, id="function"),
        pytest.param("PPO", True, id="rllib"),
    ],
)
def test_tune_space_is_the_config_but_rllibs_gets_its_connector_under_a_private_key(run, wrapped):
    space = resolve(run, USER_MODULES).kind.tune_space({"lr": 0.1})
    assert ("_env_to_module_connector" in space) is wrapped
    assert space["lr"] == 0.1


@pytest.mark.parametrize(
    "run, key, seen, episodes, note",
    [
        pytest.param("PPO", "env_runners/x", set(), 0.0, "no episode finished", id="rllib-runs"),
        pytest.param("PPO", "env_runners/x", set(), 3.0, None, id="rllib-episodes-ran"),
        pytest.param("PPO", "evaluation/x", {"a"}, 3.0, "no evaluation ran", id="rllib-eval"),
        pytest.param("PPO", "evaluation/x", {"evaluation/y"}, 3.0, None, id="rllib-eval-ran"),
        pytest.param("my_func", "env_runners/x", set(), 0.0, None, id="registered"),
        pytest.param("quadratic:train", "evaluation/x", set(), 0.0, None, id="function"),
    ],
)
def test_only_rllib_notes_keys_that_had_no_chance_to_be_reported(run, key, seen, episodes, note):
    found = resolve(run, USER_MODULES).kind.missing_key_note("metric", key, seen, episodes)
    assert (found is None) is (note is None)
    if note is not None:
        assert note in found and found.startswith(f"metric '{key}'")


# ---- no kind tested by name outside the kinds ----------------------------------------------------

NAMES = r"""["'](?:registered|function|rllib)["']"""
# `x == "rllib"`, `"rllib" != x`, `x in ("rllib", ...)`
KIND_TEST = re.compile(rf"[!=]=\s*{NAMES}|{NAMES}\s*[!=]=|\bin\s*[(\[{{][^)\]}}]*{NAMES}")
# The kinds themselves (tune_app/kinds/, the registry); tune_app/rllib/ is RLlib's own package.
KIND_MODULES = {"registry.py"}


@pytest.mark.parametrize(
    "line",
    [
        'if ep.trainable.kind == "rllib":',
        "is_rllib = ref.kind != 'rllib'",
        'if kind.name == "function":',
        'if "registered" == ref.kind.name:',
        'if ref.kind in ("registered", "function"):',
    ],
)
def test_the_guard_sees_a_kind_tested_by_name(line):
    assert KIND_TEST.search(line)


@pytest.mark.parametrize(
    "line", ['if e.kind == "gym":', 'if domain.kind == "grid_search":', 'what = "a function"']
)
def test_the_guard_leaves_other_kinds_alone(line):
    assert not KIND_TEST.search(line)


def test_no_module_outside_the_kinds_tests_a_kind_by_name():
    package = ROOT / "tune_app"
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] in ("rllib", "kinds") or str(rel) in KIND_MODULES:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if KIND_TEST.search(line):
                found.append(f"tune_app/{rel}:{number}: {line.strip()}")
    assert not found, "ask the trainable's kind (tune_app.kinds) instead:\n" + "\n".join(found)


def test_validate_calls_a_users_class_a_class():
    """What validate's plan says of `run:`, read from the module's source, not imported (a
    function's: TRAITS)."""
    assert resolve("class_trainables:Counter", USER_MODULES).kind.describe == "module:class"


STEP = "    def step(self):\n        return {'s': 1}\n"
SAVING_MODULES = {
    # Tune's Trainable without save_checkpoint: refused at validate, from the source
    "from ray import tune\nclass T(tune.Trainable):\n" + STEP: 2,
    # the name rebound after its class: what it ends as, only the import tells
    "from ray import tune\nclass T(tune.Trainable):\n" + STEP + "T = tune.with_parameters(T)\n": 0,
    # a Trainable of the user's own package, which saves checkpoints itself
    "from base import Trainable\nclass T(Trainable):\n" + STEP: 0,
}


@pytest.mark.parametrize("source", SAVING_MODULES)
def test_validate_judges_checkpoint_keys_from_what_the_source_shows(cli, write_spec, source):
    spec = write_spec(
        "e:\n  run: saver:T\n  metric: s\n  mode: max\n"
        "  checkpoint_config: {checkpoint_at_end: true}\n"
    )
    (spec.parent / "saver.py").write_text(source)
    (spec.parent / "base.py").write_text(
        "from ray import tune\nclass Trainable(tune.Trainable):\n"
        "    def save_checkpoint(self, d):\n        return None\n"
    )
    result = cli("validate", spec)
    assert result.code == SAVING_MODULES[source], result.err
    if result.code:
        assert "does not implement save_checkpoint" in result.err
