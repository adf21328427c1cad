"""Legacy RLlib keys carried to the new API stack: for every translated key, the value in the
algorithm's effective config (RLlib's own AlgorithmConfig built from what the app hands it) is
the spec's. Also: the key snapshot matches the installed RLlib, bundles are RLlib's, every
problem of a spec is reported in one pass, and `validate` does not import RLlib."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tune_app import rllib, spec
from tune_app.errors import SpecError, SpecErrors
from tune_app.plan.make import make_plan
from tune_app.rllib.handlers import HANDLERS
from tune_app.rllib.layout import fragment_misfit
from tune_app.space import Domain

from .conftest import ROOT


def built(name, config, gym_env=True):
    """Translate `config` for `name` and build RLlib's AlgorithmConfig from the result."""
    out = rllib.translate_config(name, config, gym_env=gym_env)
    return rllib.algorithm_config(name, out.config), out.warnings


def connector_of(cfg, env=None):
    """The one connector the config's factory builds for `env` (None: spaces unknown)."""
    (connector,) = cfg._env_to_module_connector(env, None, None)
    return connector


# (algorithm, spec config, [(what RLlib ends with, expected)]): each getter reads the built
# AlgorithmConfig, so a translation RLlib would drop fails here.
EFFECTIVE = [
    pytest.param(
        "PPO",
        {"observation_filter": "MeanStdFilter"},
        [
            (lambda c: type(connector_of(c)).__name__, "MeanStdFilter"),
            (lambda c: connector_of(c).clip_by_value, 10.0),
        ],
        id="observation_filter",
    ),
    pytest.param(
        "DQN",
        {
            "exploration_config": {
                "type": "EpsilonGreedy",
                "initial_epsilon": 1.0,
                "final_epsilon": 0.02,
                "epsilon_timesteps": 10000,
            }
        },
        [(lambda c: [list(p) for p in c.epsilon], [[0, 1.0], [10000, 0.02]])],
        id="exploration_config-epsilon-greedy",
    ),
    pytest.param(
        "DQN",
        # As in RLlib's compact-regression-test.yaml: no type, DQN's default EpsilonGreedy
        # (initial 1.0) filling what is left out.
        {"exploration_config": {"epsilon_timesteps": 200000, "final_epsilon": 0.01}},
        [(lambda c: [list(p) for p in c.epsilon], [[0, 1.0], [200000, 0.01]])],
        id="exploration_config-without-type-on-dqn",
    ),
    pytest.param(
        "DQN",
        {"exploration_config": {"type": "EpsilonGreedy", "epsilon_timesteps": 500}},
        [(lambda c: [list(p) for p in c.epsilon], [[0, 1.0], [500, 0.02]])],
        id="exploration_config-partial-on-dqn",
    ),
    pytest.param(
        "SAC",
        {
            "optimization": {
                "actor_learning_rate": 0.005,
                "critic_learning_rate": 0.004,
                "entropy_learning_rate": 0.0001,
            }
        },
        [
            (lambda c: c.actor_lr, 0.005),
            (lambda c: c.critic_lr, 0.004),
            (lambda c: c.alpha_lr, 0.0001),
        ],
        id="sac-optimization",
    ),
    pytest.param(
        "SAC",
        {
            "q_model_config": {"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"},
            "policy_model_config": {"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"},
        },
        [
            (lambda c: c.model_config["fcnet_hiddens"], [64, 64]),
            (lambda c: c.model_config["fcnet_activation"], "tanh"),
        ],
        id="sac-q_model_config-policy_model_config",
    ),
    pytest.param(
        "SAC",
        {"Q_model": {"fcnet_hiddens": [32]}, "policy_model": {"fcnet_hiddens": [32]}},
        [(lambda c: c.model_config["fcnet_hiddens"], [32])],
        id="sac-Q_model-policy_model",
    ),
    pytest.param(
        "SAC",
        {
            "replay_buffer_config": {
                "type": "MultiAgentPrioritizedReplayBuffer",
                "learning_starts": 256,
            }
        },
        [
            (lambda c: c.num_steps_sampled_before_learning_starts, 256),
            (lambda c: c.replay_buffer_config["type"], "PrioritizedEpisodeReplayBuffer"),
        ],
        id="replay_buffer_config-learning_starts-type",
    ),
    pytest.param(
        "DQN",
        {"prioritized_replay": False, "buffer_size": 5000, "prioritized_replay_alpha": 0.5},
        [
            (lambda c: c.replay_buffer_config["type"], "EpisodeReplayBuffer"),
            (lambda c: c.replay_buffer_config["capacity"], 5000),
            (lambda c: c.replay_buffer_config["alpha"], 0.5),
        ],
        id="prioritized_replay-buffer_size-alpha",
    ),
    pytest.param(
        "PPO",
        {"use_pytorch": False},
        [(lambda c: c.framework_str, "torch")],
        id="use_pytorch",
    ),
    pytest.param(
        "SAC",
        {"horizon": 50, "soft_horizon": False, "no_done_at_end": True},
        [(lambda c: c.env_config, {"max_episode_steps": 50})],
        id="horizon",
    ),
    pytest.param(
        "PPO",
        {"min_sample_timesteps_per_reporting": 700, "metrics_smoothing_episodes": 5},
        [
            (lambda c: c.min_sample_timesteps_per_iteration, 700),
            (lambda c: c.metrics_num_episodes_for_smoothing, 5),
        ],
        id="reporting-keys",
    ),
    pytest.param(
        "DQN",
        {"hiddens": [128], "n_step": 3, "rollout_fragment_length": 1},
        [
            (lambda c: c.model_config["head_fcnet_hiddens"], [128]),
            (lambda c: c.rollout_fragment_length, 3),  # RLlib 2.60 refuses fragments < n_step
        ],
        id="dqn-hiddens-n_step",
    ),
    pytest.param(
        "DQN",
        {"n_step": [2, 5], "rollout_fragment_length": 1},
        [
            (lambda c: c.n_step, (2, 5)),  # the tuple RLlib's configs take for a range
            (lambda c: c.rollout_fragment_length, "auto"),  # DQN cannot compare a number
            (lambda c: c.get_rollout_fragment_length(), 5),  # with the range: auto is its end
        ],
        id="dqn-n_step-range",
    ),
    pytest.param(
        "SAC",
        {"n_step": [1, 3], "rollout_fragment_length": 2},
        [(lambda c: c.n_step, (1, 3)), (lambda c: c.rollout_fragment_length, 3)],
        id="sac-n_step-range",
    ),
    pytest.param(
        "PPO",
        {
            "enable_connectors": True,
            "_enable_rl_module_api": True,
            "_enable_learner_api": True,
            "simple_optimizer": True,
        },
        [(lambda c: c.enable_rl_module_and_learner, True)],
        id="new-stack-flags-no-ops",
    ),
]


@pytest.mark.parametrize(("name", "config", "checks"), EFFECTIVE)
def test_translated_keys_reach_the_effective_config(name, config, checks):
    cfg, warnings = built(name, config)
    for getter, expected in checks:
        assert getter(cfg) == expected
    # One warning per legacy key (sub-keys of a translated mapping warn each).
    for key in config:
        if rllib.is_legacy(key):
            assert any(f"config.{key}" in w for w in warnings), key


def test_every_translation_has_an_effective_config_test():
    tested = {key for p in EFFECTIVE for key in p.values[1]}
    handled = set(HANDLERS) - {"model", "framework"}  # those two: tests/test_rllib.py
    assert handled <= tested, handled - tested


def test_a_time_limit_in_env_config_limits_the_env_runners_episodes():
    """RLlib makes gymnasium envs with make_vec(id, **env_config): the horizon is honoured."""
    import gymnasium as gym
    import numpy as np

    env = gym.make_vec("CartPole-v1", num_envs=1, vectorization_mode="sync", max_episode_steps=7)
    env.reset(seed=0)
    for step in range(1, 100):
        _, _, terminated, truncated, _ = env.step(np.array([step % 2]))
        if terminated[0] or truncated[0]:
            break
    assert step == 7 and truncated[0]


def test_observations_the_new_stack_cannot_take_are_flattened_as_the_old_stack_did():
    """FrozenLake's Discrete observations: the old stack one-hot encoded them; the new stack's
    default models have no encoder for them unless FlattenObservations does it."""
    import gymnasium as gym

    frozen = gym.make_vec("FrozenLake-v1", num_envs=1, vectorization_mode="sync")
    cartpole = gym.make_vec("CartPole-v1", num_envs=1, vectorization_mode="sync")
    cfg, _ = built("PPO", {})
    assert type(connector_of(cfg, frozen)).__name__ == "FlattenObservations"
    assert cfg._env_to_module_connector(cartpole, None, None) == []  # a Box: as it is
    filtered, _ = built("PPO", {"observation_filter": "MeanStdFilter"})
    connectors = filtered._env_to_module_connector(frozen, None, None)
    assert [type(c).__name__ for c in connectors] == ["FlattenObservations", "MeanStdFilter"]
    # RLlib's pipeline then gives the module a one-hot Box of FrozenLake's 16 states.
    pipeline = cfg.build_env_to_module_connector(env=frozen, device=None)
    assert pipeline.observation_space.shape == (16,)


@pytest.mark.parametrize(
    ("name", "config", "where", "words"),
    [
        ("APPO", {"vtrace": False}, "config.vtrace", "always correct off-policy"),
        ("DQN", {"noisy": True}, "config.noisy", "no noisy layers"),
        (
            "PPO",
            {"exploration_config": {"type": "EpsilonGreedy"}},
            "config.exploration_config.type",
            "no equivalent for PPO",
        ),
        ("SAC", {"optimization": {"actor_lr": 1}}, "config.optimization.actor_lr", "unknown key"),
        (
            "SAC",
            {
                "q_model_config": {"fcnet_hiddens": [8]},
                "policy_model_config": {"fcnet_hiddens": [16]},
            },
            "config.policy_model_config.fcnet_hiddens",
            "one model_config",
        ),
        ("SAC", {"horizon": 10}, "config.horizon", "TimeLimit"),  # an env class (below)
        ("PPO", {"observation_filter": "Whiten"}, "config.observation_filter", "MeanStdFilter"),
        (
            "SAC",
            {"replay_buffer_config": {"replay_sequence_length": 20}},
            "config.replay_buffer_config.replay_sequence_length",
            "no equivalent",
        ),
        ("PPO", {"_enable_new_api_stack": False}, "config._enable_new_api_stack", "old API"),
        (
            "DQN",
            {"learning_starts": 10, "num_steps_sampled_before_learning_starts": 20},
            "config.learning_starts",
            "both set",
        ),
        (  # the new-stack mapping set whole: its sub-key was replaced by the legacy one unsaid
            "PPO",
            {"model": {"fcnet_hiddens": [64]}, "model_config": {"fcnet_hiddens": [32]}},
            "config.model.fcnet_hiddens",
            "'model.fcnet_hiddens' and 'model_config.fcnet_hiddens' both set",
        ),
        (
            "DQN",
            {"n_step": [2, 5], "rollout_fragment_length": 8},
            "config.rollout_fragment_length",
            "write rollout_fragment_length: auto (n_step's high end, 5)",
        ),
        (  # a search over the whole mapping, shown as the spec wrote it
            "PPO",
            {"model": Domain("grid_search", ({"fcnet_hiddens": [64]}, {"fcnet_hiddens": [16]}))},
            "config.model",
            "mapping ({grid_search: [{'fcnet_hiddens': [64]}, {'fcnet_hiddens': [16]}]}) is not "
            "translated; search the new key whole: model_config: {grid_search: [...]}",
        ),
        (
            "PPO",
            {"exploration_config": Domain("choice", ({"type": "StochasticSampling"},))},
            "config.exploration_config",
            "search its keys one by one: exploration_config: {<key>: {choice: [...]}}",
        ),
    ],
)
def test_legacy_keys_without_an_equivalent_are_refused_saying_why(name, config, where, words):
    with pytest.raises(SpecError) as err:
        rllib.translate_config(name, config, gym_env=where != "config.horizon")
    assert err.value.path == where
    assert words in str(err.value)


def test_all_problems_of_a_config_are_reported_in_one_pass():
    bad = {"num_sgd_itr": 3, "vtrace": False, "lr": 0.1, "monitor": True, "model": {"x": 1}}
    with pytest.raises(SpecErrors) as err:
        rllib.translate_config("PPO", bad)
    paths = {e.path for e in err.value.errors}
    assert paths == {
        "config.num_sgd_itr",
        "config.vtrace",
        "config.monitor",
        "config.model.x",
    }
    assert len(str(err.value).splitlines()) == 4


FIVE_PROBLEMS = """
a:
  run: PPO
  env: CartPol-v1
  config: {num_sgd_itr: 3, monitor: true}
  stop: {episode_reward_mean: 100, nonsense: 1}
b:
  run: my_func
  config: {alpha: 1, betta: 2}
"""


def test_a_spec_with_five_problems_reports_five_lines(write_spec, cli, tmp_path):
    path = write_spec(FIVE_PROBLEMS)
    result = cli("validate", path)
    assert result.code == 2
    lines = [line for line in result.err.splitlines() if line.strip()]
    for where in (
        "a.env",
        "a.config.num_sgd_itr",
        "a.config.monitor",
        "a.stop.nonsense",
        "b.config.betta",
    ):
        assert sum(f": {where}:" in line for line in lines) == 1, (where, lines)
    assert "Traceback" not in result.err
    assert list(tmp_path.iterdir()) == [path]  # nothing written


def test_the_key_snapshot_matches_the_installed_rllib():
    for name in rllib.ALGORITHMS:
        assert rllib.live_algorithm_keys(name) == rllib.algorithm_keys(name), (
            f"{name}: run python -m tune_app.rllib to refresh tune_app/rllib/keys.json"
        )


@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("PPO", {}),
        ("PPO", {"num_env_runners": 1, "num_cpus_per_env_runner": 0.5}),
        ("APPO", {}),
        ("IMPALA", {"num_learners": 0, "num_env_runners": 1}),
        ("DQN", {"evaluation_interval": 1, "evaluation_num_env_runners": 1}),
        ("SAC", {"num_learners": 2, "num_cpus_per_learner": 1}),
        ("PPO", {"num_gpus_per_learner": 1, "num_learners": 0}),
    ],
)
def test_bundles_without_rllib_are_rllibs_own(name, config):
    ours = rllib.resources(name, {**config, "env": "CartPole-v1"}).bundles
    assert ours == rllib.check_with_rllib(name, {**config, "env": "CartPole-v1"})


@pytest.mark.parametrize(
    ("config", "refused"),
    [
        ({"rollout_fragment_length": 200, "num_envs_per_env_runner": 8}, True),
        ({"rollout_fragment_length": 200, "num_envs_per_env_runner": 4}, False),
        ({"rollout_fragment_length": 270}, False),  # 3 rounds: 810, within 10%
        ({"rollout_fragment_length": 300}, True),  # 3 rounds: 900
        (
            {"rollout_fragment_length": 100, "num_env_runners": 2, "num_envs_per_env_runner": 4},
            False,
        ),
        ({"rollout_fragment_length": 100, "num_learners": 2, "num_envs_per_env_runner": 16}, True),
        (
            {"rollout_fragment_length": 50, "train_batch_size_per_learner": 200, "num_learners": 2},
            False,
        ),
        ({"rollout_fragment_length": "auto", "num_envs_per_env_runner": 8}, False),
    ],
)
def test_the_fragment_check_without_rllib_is_rllibs_own(config, refused):
    config = {"train_batch_size": 800, "num_env_runners": 0, **config, "env": "CartPole-v1"}
    assert (fragment_misfit("PPO", config) is not None) is refused
    if refused:
        with pytest.raises(SpecError, match="rollout_fragment_length"):
            rllib.check_with_rllib("PPO", config)
    else:
        rllib.check_with_rllib("PPO", config)


def test_validate_of_an_rllib_spec_does_not_import_rllib():
    code = (
        "import sys; from tune_app.cli import main; "
        "code = main(['validate', 'tests/rllib_specs/sac-pendulum.yaml']); "
        "assert code == 0, code; "
        "loaded = [m for m in sys.modules if m.startswith(('ray.rllib', 'torch'))]; "
        "assert not loaded, loaded[:5]"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_run_has_rllib_check_the_config_before_ray_starts(write_spec):
    text = (
        "e:\n  run: PPO\n  env: CartPole-v1\n  simulations: 1\n"
        "  config: {train_batch_size: 100, minibatch_size: 500}\n"
    )
    path = write_spec(text)
    make_plan(spec.load(path), cpus=2)  # validate: the snapshot knows both keys
    with pytest.raises(SpecError, match="PPO refuses this config") as err:
        make_plan(spec.load(path), cpus=2, rllib_checks=True)
    assert err.value.path == "e.config"


@pytest.mark.parametrize(
    ("run", "words"),
    [
        (
            "PG",
            "no longer has the PG algorithm; allowed: PPO, APPO, IMPALA, DQN, SAC; its place "
            "is taken by PPO",
        ),
        ("A2C", "taken by PPO"),
        ("DDPG", "taken by SAC"),
        ("td3", "no longer has the TD3 algorithm"),
        ("ES", "no longer has the ES algorithm"),
    ],
)
def test_algorithms_rllib_removed_name_their_replacement(write_spec, run, words):
    with pytest.raises(SpecError) as err:
        make_plan(spec.load(write_spec(f"e:\n  run: {run}\n  env: CartPole-v1\n")), cpus=2)
    assert err.value.path == "e.run"
    assert words in str(err.value) and "did you mean" not in str(err.value)
