"""RLlib config values checked against the kinds each algorithm's config declares (issue 45,
item 4): a value RLlib would fail on inside every trial is refused at `validate`, naming the key;
search-space values are checked one by one; values RLlib takes are never refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import pytest

from tune_app import rllib
from tune_app.errors import SpecError, SpecErrors
from tune_app.rllib.value_types import declared_kinds
from tune_app.space import parse_space

from .conftest import refused


def translate(name: str, config: dict[str, Any]) -> rllib.Translated:
    return rllib.translate_config(name, parse_space(config, "config"))


def number_key_of_its_own(name: str) -> str:
    """A key of `name`'s config that takes only numbers (found from the snapshot of RLlib's
    declarations), one the other algorithms lack where it has one."""
    kinds = rllib.algorithm_keys(name).kinds
    numeric = sorted(k for k, v in kinds.items() if set(v) - {"null"} in ({"int"}, {"number"}))
    others = [rllib.algorithm_keys(n).kinds for n in rllib.ALGORITHMS if n != name]
    own = [k for k in numeric if not all(k in o for o in others)]
    return (own or numeric)[0]


@pytest.mark.parametrize("name", list(rllib.ALGORITHMS))
def test_every_algorithm_refuses_text_at_a_number_key_of_its_own(name, write_spec, cli, tmp_path):
    key = number_key_of_its_own(name)
    default = rllib.algorithm_keys(name).defaults[key]
    text = str(default if default is not None else 2)
    path = write_spec(
        f"e:\n  run: {name}\n  env: CartPole-v1\n"
        f"  config: {{num_learners: 0, num_env_runners: 1, {key}: '{text}'}}\n"
    )
    words = f"spec.yaml: e.config.{key}: {name} takes a", f"but got the text '{text}'"
    refused(cli("validate", path), *words)
    assert list(tmp_path.iterdir()) == [path]  # nothing written


def test_the_issues_example_names_the_key_the_value_and_the_fix():
    with pytest.raises(SpecError) as err:
        translate("PPO", {"train_batch_size_per_learner": "2000"})
    assert str(err.value) == (
        "config.train_batch_size_per_learner: PPO takes a whole number here, but got the text "
        "'2000'; write train_batch_size_per_learner: 2000, without quotes"
    )


@pytest.mark.parametrize(
    ("name", "config", "where", "words"),
    [
        pytest.param(
            "PPO",
            {"train_batch_size": {"grid_search": [1000, "2000"]}},
            "config.train_batch_size.grid_search[1]",
            "whole number here (its default is 4000), but got the text '2000'; write 2000,",
            id="grid-value-text",
        ),
        pytest.param(
            "PPO",
            {"gamma": {"choice": [0.9, "0.99"]}},
            "config.gamma.choice[1]",
            "takes a number here",
            id="choice-value-text",
        ),
        pytest.param(
            "PPO",
            {"minibatch_size": {"uniform": [64, 256]}},
            "config.minibatch_size.uniform",
            "uniform draws numbers with fractions, such as 0.5; search it with randint",
            id="float-sampler-for-whole-number",
        ),
        pytest.param(
            "DQN",
            {"target_network_update_freq": {"quniform": [100, 1000, 100]}},
            "config.target_network_update_freq.quniform",
            "DQN takes a whole number here",
            id="quniform-draws-floats",
        ),
        pytest.param(
            "PPO",
            {"use_gae": {"randint": [0, 2]}},
            "config.use_gae.randint",
            "takes true or false here",
            id="integer-sampler-for-bool",
        ),
        pytest.param(
            "PPO",
            {"num_epochs": 6.0},
            "config.num_epochs",
            "got 6.0; write num_epochs: 6",
            id="float",
        ),
        pytest.param(
            "PPO", {"lr": True}, "config.lr", "takes a number or a list here", id="bool-not-number"
        ),
        pytest.param("PPO", {"use_gae": "yes"}, "config.use_gae", "true or false", id="text-bool"),
        pytest.param(
            "PPO",
            {"entropy_coeff": "0.01"},
            "config.entropy_coeff",
            "PPO takes a number or a list here (its default is 0.0), but got the text '0.01'",
            id="text-for-schedule",
        ),
        pytest.param(
            "PPO",
            {"num_sgd_iter": "6"},
            "config.num_sgd_iter",
            "(as num_epochs, its default is 30), but got the text '6'; write num_sgd_iter: 6,",
            id="legacy-key-checked-as-its-new-name",
        ),
        pytest.param(
            "SAC", {"tau": "0.005"}, "config.tau", "write tau: 0.005, without quotes", id="sac"
        ),
        pytest.param(
            "IMPALA",
            {"vtrace_clip_rho_threshold": [1]},
            "config.vtrace_clip_rho_threshold",
            "but got the list [1]",
            id="list-for-number",
        ),
        # model_config's sub-keys, as RLlib's DefaultModelConfig declares them
        pytest.param(
            "PPO",
            {"model_config": {"fcnet_hiddens": "abc"}},
            "config.model_config.fcnet_hiddens",
            "PPO takes a list here, but got the text 'abc'",
            id="model-config-text-for-list",
        ),
        pytest.param(
            "PPO",
            {"model": {"fcnet_activation": 3}},
            "config.model.fcnet_activation",
            "PPO takes text here (as model_config.fcnet_activation), but got 3",
            id="legacy-model-number-for-text",
        ),
        pytest.param(
            "PPO",
            {"model": {"post_fcnet_hiddens": 64}},
            "config.model.post_fcnet_hiddens",
            "(as model_config.head_fcnet_hiddens), but got 64",
            id="legacy-model-renamed-sub-key",
        ),
        pytest.param(
            "SAC",
            {"q_model_config": {"use_lstm": "yes"}},
            "config.q_model_config.use_lstm",
            "SAC takes true or false here (as model_config.use_lstm)",
            id="sac-model-text-for-bool",
        ),
        pytest.param(
            "PPO",
            {"model_config": {"max_seq_len": {"grid_search": [20, "40"]}}},
            "config.model_config.max_seq_len.grid_search[1]",
            "takes a whole number here, but got the text '40'; write 40,",
            id="model-config-grid-value",
        ),
    ],
)
def test_values_of_the_wrong_kind_are_refused_at_their_key(name, config, where, words):
    with pytest.raises(SpecError) as err:
        translate(name, config)
    assert err.value.path.startswith(where)
    assert words in str(err.value)


@pytest.mark.parametrize(
    ("name", "config"),
    [
        pytest.param("PPO", {"gamma": 1, "lr": 0.001}, id="int-for-float"),
        pytest.param("PPO", {"lr": [[0, 0.001], [100000, 0.0001]]}, id="lr-schedule"),
        pytest.param("PPO", {"evaluation_duration": "auto"}, id="auto-duration"),
        pytest.param("PPO", {"rollout_fragment_length": "auto"}, id="auto-fragment"),
        pytest.param("PPO", {"num_cpus_per_env_runner": 0.5}, id="fraction-of-a-cpu"),
        pytest.param("PPO", {"seed": None, "grad_clip": None}, id="null-where-declared"),
        pytest.param("PPO", {"clip_rewards": True}, id="bool-or-float"),
        pytest.param("PPO", {"minibatch_size": {"randint": [64, 256]}}, id="randint-whole"),
        pytest.param("PPO", {"lr": {"loguniform": [1e-5, 1e-3]}}, id="float-sampler-number"),
        pytest.param("PPO", {"gamma": {"randint": [0, 2]}}, id="int-sampler-number"),
        pytest.param("PPO", {"lr": {"grid_search": [0.001, 0.0003]}}, id="grid"),
        pytest.param("PPO", {"use_gae": {"choice": [True, False]}}, id="choice-bool"),
        pytest.param("SAC", {"target_entropy": "auto"}, id="sac-auto-entropy"),
        pytest.param("DQN", {"n_step": [1, 3]}, id="dqn-n-step-range"),
        pytest.param("DQN", {"epsilon": [[0, 1.0], [10000, 0.05]]}, id="dqn-epsilon-schedule"),
        pytest.param(
            "PPO", {"entropy_coeff": [[0, 0.01], [20000, 0.0]]}, id="ppo-entropy-schedule"
        ),
        pytest.param(
            "PPO", {"entropy_coeff_schedule": [[0, 0.01], [20000, 0.0]]}, id="legacy-schedule-name"
        ),
        pytest.param(
            "PPO",
            {"model_config": {"fcnet_hiddens": [64], "use_lstm": True, "fcnet_activation": None}},
            id="model-config",
        ),
        pytest.param(
            "PPO",
            {"model": {"fcnet_activation": "relu", "fcnet_kernel_initializer": "xavier_normal_"}},
            id="legacy-model-and-a-key-taking-anything",
        ),
    ],
)
def test_values_rllib_takes_are_accepted(name, config):
    translate(name, config)


def test_every_wrong_kind_is_reported_in_one_pass():
    with pytest.raises(SpecErrors) as err:
        translate("PPO", {"lr": "0.001", "num_epochs": "6", "use_gae": 1})
    assert {e.path for e in err.value.errors} == {
        "config.lr",
        "config.num_epochs",
        "config.use_gae",
    }


class _Config:
    """A stand-in AlgorithmConfig: defaults set on the object, setters annotated."""

    def __init__(self) -> None:
        self.batch = 4000
        self.rate = 0.5
        self.flag = True
        self.mode = "auto"
        self.hook = None
        self.size = None
        self.free = None
        self.num_cpus_per_runner = 1
        self.lambda_ = 1.0

    def training(
        self,
        batch: int | None = None,
        mode: int | str = "auto",
        hook: Callable | None = None,
        size: UnknownName | None = None,  # noqa: F821 - imported only for type checkers
        lambda_: float | None = None,
    ) -> None: ...

    def resources(self, num_cpus_per_runner: int | None = None) -> None: ...

    def env(self, flag: Literal[True, False, "x"] = True) -> None: ...

    def validate(self) -> None:  # as RLlib's PPOConfig validates entropy_coeff
        Scheduler.validate(fixed_value_or_schedule=self.rate, setting_name="rate")  # noqa: F821


def test_kinds_are_read_off_the_defaults_and_the_setters_annotations():
    config = _Config()
    keys = ["batch", "rate", "flag", "mode", "hook", "size", "free", "num_cpus_per_runner"]
    assert declared_kinds(_Config, config, [*keys, "lambda"]) == {
        "batch": ("int", "null"),  # the default's int and the annotation's Optional[int]
        "rate": ("list", "number"),  # the default's type; validated as a schedule
        "flag": ("bool", "text"),
        "mode": ("int", "text"),  # a text default with an annotation
        "num_cpus_per_runner": ("null", "number"),  # Ray takes fractions of a CPU
        "lambda": ("null", "number"),  # set through lambda_, as RLlib spells it
    }  # hook (a callable), size (a name left unresolved) and free (no declaration): anything


def test_keys_sizing_a_trial_are_checked_in_the_same_pass_with_their_range():
    with pytest.raises(SpecErrors) as err:
        translate("PPO", {"num_env_runners": "1", "num_cpus_per_env_runner": -1, "lr": "x"})
    messages = {e.path: str(e) for e in err.value.errors}
    assert set(messages) == {
        "config.num_env_runners",
        "config.num_cpus_per_env_runner",
        "config.lr",
    }
    assert (
        "allowed: a whole number >= 0; write num_env_runners: 1, without"
        in messages["config.num_env_runners"]
    )
    assert "got -1; allowed: a number >= 0" in messages["config.num_cpus_per_env_runner"]
