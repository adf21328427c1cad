"""RLlib algorithms by name: legacy keys and metrics translated, unknown or ignored keys refused,
bundles from the algorithm config, envs by gymnasium id or module:Class, one PPO run via the CLI."""

from __future__ import annotations

import json
import os

import pytest

from tune_app import rllib, spec
from tune_app.cluster import local_pythonpath, runtime_env
from tune_app.errors import SpecError
from tune_app.plan.make import make_plan
from tune_app.space import Domain, value_at

from .conftest import results_of, user_module


def plan_of(write_spec, text):
    return make_plan(spec.load(write_spec(text)), cpus=2, rllib_checks=True)


# Legacy key -> (value given, key and value RLlib gets). The right-hand names are checked
# against the algorithm's own config below, so a rename RLlib drops would fail here.
LEGACY_KEYS = [
    ("num_workers", 1, "num_env_runners", 1),
    ("num_rollout_workers", 1, "num_env_runners", 1),
    ("num_envs_per_worker", 2, "num_envs_per_env_runner", 2),
    ("num_cpus_per_worker", 1, "num_cpus_per_env_runner", 1),
    ("num_cpus_for_driver", 1, "num_cpus_for_main_process", 1),
    ("num_sgd_iter", 6, "num_epochs", 6),
    ("sgd_minibatch_size", 64, "minibatch_size", 64),
    ("lr_schedule", [[0, 0.001], [1000, 0.0001]], "lr", [[0, 0.001], [1000, 0.0001]]),
    ("timesteps_per_iteration", 500, "min_sample_timesteps_per_iteration", 500),
    ("min_iter_time_s", 1, "min_time_s_per_iteration", 1),
    ("metrics_smoothing_episodes", 5, "metrics_num_episodes_for_smoothing", 5),
    ("evaluation_num_workers", 1, "evaluation_num_env_runners", 1),
    ("ignore_worker_failures", True, "ignore_env_runner_failures", True),
    ("recreate_failed_workers", True, "restart_failed_env_runners", True),
    ("num_gpus", 0, "num_gpus_per_learner", 0),
    ("vf_share_layers", True, "model_config", {"vf_share_layers": True}),
    (
        "model",
        {"fcnet_hiddens": [32], "post_fcnet_hiddens": [16]},
        "model_config",
        {"fcnet_hiddens": [32], "head_fcnet_hiddens": [16]},
    ),
]


@pytest.mark.parametrize(("old", "value", "new", "expected"), LEGACY_KEYS)
def test_legacy_key_is_translated_with_one_warning(old, value, new, expected):
    out = rllib.translate_config("PPO", {old: value})
    assert out.config == {new: expected}
    assert len(out.warnings) == 1 + (old == "model")  # the model's renamed sub-key warns too
    assert old in out.warnings[0] and new in out.warnings[0]
    # Each value traced back to the key the spec wrote (where `best` puts a searched value).
    assert out.written and all(
        value_at(out.config, path) == value_at({old: value}, at) for path, at in out.written.items()
    )
    # What we hand RLlib really lands on the setting it names (not silently ignored).
    built = rllib.algorithm_config("PPO", out.config)
    if new == "model_config":
        for k, v in expected.items():
            assert built.model_config[k] == v
    else:
        assert getattr(built, new) == expected


def test_rllib_alone_drops_num_sgd_iter_which_is_why_we_translate():
    from ray.rllib.algorithms.ppo import PPOConfig

    assert PPOConfig().update_from_dict({"num_sgd_iter": 6}).num_epochs != 6


def test_evaluation_num_episodes_sets_the_unit():
    out = rllib.translate_config("PPO", {"evaluation_num_episodes": 3})
    assert out.config == {"evaluation_duration": 3, "evaluation_duration_unit": "episodes"}


@pytest.mark.parametrize("framework", ["tf", "tf2"])
def test_tensorflow_framework_runs_as_torch_with_a_warning(framework):
    out = rllib.translate_config("PPO", {"framework": framework})
    assert out.config == {"framework": "torch"} and "torch" in out.warnings[0]


@pytest.mark.parametrize(
    ("config", "where", "words"),
    [
        ({"lr": 0.1, "num_sgd_itr": 3}, "config.num_sgd_itr", "did you mean 'num_sgd_iter'"),
        ({"minibatch_sise": 64}, "config.minibatch_sise", "did you mean 'minibatch_size'"),
        ({"exploration_config": {"type": "SoftQ"}}, "config.exploration_config.type", "no equiv"),
        ({"buffer_size": 100}, "config.buffer_size", "PPO has no config key"),
        ({"prioritized_replay": True}, "config.prioritized_replay", "PPO has no config key"),
        ({"soft_horizon": True}, "config.soft_horizon", "no equivalent"),
        ({"enable_connectors": False}, "config.enable_connectors", "old API stack"),
        ({"shuffle_sequences": True}, "config.shuffle_sequences", "PPO has no config key"),
        ({"monitor": True}, "config.monitor", "silently ignored"),
        ({"model": {"custom_model": "m"}}, "config.model.custom_model", "default model config"),
        (
            {"model_config": {"fcnet_hidens": [8]}},
            "config.model_config.fcnet_hidens",
            "did you mean 'fcnet_hiddens'",
        ),
        ({"num_workers": 1, "num_env_runners": 1}, "config.num_workers", "both set"),
        ({"framework": "jax"}, "config.framework", "not supported"),
    ],
)
def test_bad_rllib_keys_are_errors(config, where, words):
    with pytest.raises(SpecError) as err:
        rllib.translate_config("PPO", config)
    assert err.value.path == where
    assert words in str(err.value)


def test_algorithm_specific_keys_follow_the_algorithm():
    assert rllib.translate_config("DQN", {"epsilon": [[0, 1.0], [100, 0.1]]}).config
    with pytest.raises(SpecError, match="PPO has no config key 'epsilon'"):
        rllib.translate_config("PPO", {"epsilon": 0.1})


LEGACY_SPEC = """
cartpole-ppo:
  run: PPO
  env: CartPole-v1
  stop: {episode_reward_mean: 150, timesteps_total: 100000}
  checkpoint_freq: 2
  config:
    framework: tf
    num_workers: 1
    num_sgd_iter: {grid_search: [3, 6]}
    train_batch_size: 400
    sgd_minibatch_size: 64
"""


def test_classic_rllib_yaml_plans_with_translated_keys_metrics_and_bundles(write_spec):
    plan = plan_of(write_spec, LEGACY_SPEC)
    (ep,) = plan.experiments
    exp = ep.experiment
    assert exp.stop == {
        "env_runners/episode_return_mean_smoothed": 150,
        "num_env_steps_sampled_lifetime": 100000,
    }
    assert ep.metric == "env_runners/episode_return_mean_smoothed" and ep.mode == "max"
    assert exp.config["num_epochs"] == Domain("grid_search", (3, 6))
    assert exp.config["num_env_runners"] == 1 and "num_workers" not in exp.config
    assert ep.trials == 2
    assert ep.bundles == ({"CPU": 1.0}, {"CPU": 1.0})  # main process + one env runner
    assert exp.checkpoint.checkpoint_frequency == 2
    joined = "\n".join(plan.warnings)
    for old in (
        "checkpoint_freq",
        "framework",
        "num_workers",
        "num_sgd_iter",
        "sgd_minibatch_size",
        "episode_reward_mean",
        "timesteps_total",
    ):
        assert joined.count(f".{old}:") == 1, old


def test_legacy_metric_names_of_several_objectives_and_constraints_are_translated(write_spec):
    text = (
        "metric: [episode_reward_mean, time_total_s]\nmode: [max, min]\n"
        "constraints: {episodes_total: {min: 1}}\nexperiments:\n  e: {run: PPO, env: CartPole-v1}\n"
    )
    plan = plan_of(write_spec, text)
    exp = plan.experiments[0].experiment
    assert [o.name for o in exp.objectives] == [rllib.METRIC, "time_total_s"]
    assert [c.name for c in exp.constraints] == ["env_runners/num_episodes_lifetime"]
    joined = "\n".join(plan.warnings)
    assert "experiments.e.metric[0]: legacy RLlib metric 'episode_reward_mean'" in joined
    assert "experiments.e.constraints.episodes_total: legacy RLlib metric" in joined


def test_simulations_are_env_runners(write_spec):
    plan = plan_of(
        write_spec,
        "e:\n  run: PPO\n  env: CartPole-v1\n  simulations: 1\n  cpu_per_simulation: 0.5\n",
    )
    (ep,) = plan.experiments
    assert ep.experiment.config["num_env_runners"] == 1
    assert ep.bundles == ({"CPU": 1.0}, {"CPU": 0.5})


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ("e:\n  run: PPO\n", "e.env", "needs an env"),
        ("e:\n  run: PPO\n  env: CartPol-v1\n", "e.env", "did you mean 'CartPole-v1'"),
        (
            "e:\n  run: PPO\n  env: CartPole-v1\n  layout: rllib\n",
            "e.config.num_env_runners",
            "needs 3 CPUs (1 for the main process + 2 env runners x 1; RLlib's default "
            "num_env_runners: 2) but the machine has 2; set num_env_runners: 1 to fit; the "
            "fastest layout that fits: num_env_runners: 0, num_envs_per_env_runner: 8",
        ),
        (
            "e:\n  run: IMPALA\n  env: CartPole-v1\n  layout: rllib\n",
            "e.config.num_learners",
            "(1 for the main process + 2 env runners x 1 + 1 learners x 1; RLlib's default "
            "num_learners: 1) but the machine has 2; set num_learners: 0 (the main process then "
            "trains) and num_env_runners: 1 to fit; the fastest layout that fits: "
            "num_env_runners: 1, num_learners: 0 (env runners sample while IMPALA learns)",
        ),
        (
            "e:\n  run: APPO\n  env: CartPole-v1\n  config: {num_workers: 3, num_learners: 0}\n",
            "e.config.num_workers",
            "APPO trial needs 4 CPUs (1 for the main process + 3 env runners x 1; num_workers: "
            "3) but the machine has 2; set num_workers: 1 to fit",
        ),
        (  # what the spec wrote is never suggested again
            "e:\n  run: APPO\n  env: CartPole-v1\n  config: {num_workers: 1, num_learners: 1}\n",
            "e.config.num_learners",
            "set num_learners: 0 (the main process then trains) to fit; the fastest layout that "
            "fits: num_learners: 0 (env",
        ),
        (  # one message, not RLlib's own as well
            "e:\n  run: PPO\n  env: CartPole-v1\n  config: {num_envs_per_worker: 8, "
            "rollout_fragment_length: 200, train_batch_size: 800}\n",
            "e.config.rollout_fragment_length",
            "PPO refuses rollout_fragment_length 200 with num_envs_per_env_runner 8 and "
            "num_env_runners 0: its rounds of sampling, 200 steps in each of 8 envs, overshoot the "
            "train batch (train_batch_size 800) by more than 10% (1600 steps); write "
            "rollout_fragment_length: auto or 100, or fewer envs",
        ),
        (
            "e:\n  run: PPO\n  env: CartPole-v1\n  simulations: 4\n",
            "e.simulations",
            "set simulations: 1 to fit",
        ),
        (
            "e:\n  run: PPO\n  env: CartPole-v1\n"
            "  config: {num_workers: 0, num_learner_workers: 2}\n",
            "e.config.num_learner_workers",
            "set num_learner_workers: 0",
        ),
        (
            "e:\n  run: PPO\n  env: CartPole-v1\n  simulations: 1\n"
            "  stop: {episode_return_mean: 1}\n",
            "e.stop.episode_return_mean",
            "env_runners/episode_return_mean",
        ),
        (  # the key under its group first; not the similar-looking episode_len_mean
            "e:\n  run: PPO\n  env: CartPole-v1\n  metric: episode_return_mean\n  mode: max\n",
            "e.metric",
            "; did you mean 'env_runners/episode_return_mean' or "
            "'evaluation/env_runners/episode_return_mean'?",
        ),
        (
            "e:\n  run: PPO\n  env: CartPole-v1\n  stop: {num_episodes: 50}\n",
            "e.stop.num_episodes",
            "; did you mean 'env_runners/num_episodes'?",
        ),
        (
            "e:\n  run: PPO\n  env: CartPole-v1\n"
            "  config: {num_env_runners: {grid_search: [1, 2]}}\n",
            "e.config.num_env_runners",
            "cannot be searched",
        ),
        (
            "e:\n  run: PPO\n  env: CartPole-v1\n  config: {num_env_runners: [null]}\n",
            "e.config.num_env_runners",
            "got [None]; allowed: a whole number >= 0",
        ),
        (
            "e:\n  run: PPO\n  env: CartPole-v1\n  config: {num_cpus_per_learner: many}\n",
            "e.config.num_cpus_per_learner",
            'allowed: a number >= 0 or "auto"',
        ),
        (
            "e:\n  run: PPO\n  env: CartPole-v1\n"
            "  config: {evaluation_config: {num_env_runners: 0.5}}\n",
            "e.config.evaluation_config.num_env_runners",
            "got 0.5",
        ),
        (
            "e:\n  run: DQN\n  env: CartPole-v1\n  config: {n_step: [null, null]}\n",
            "e.config.n_step",
            "n_step is [None, None]; allowed: a whole number >= 1, or [low, high]",
        ),
        (
            "e:\n  run: SAC\n  env: Pendulum-v1\n  config: {n_step: 0}\n",
            "e.config.n_step",
            "n_step is 0",
        ),
        (
            "e:\n  run: PPO\n  env: CartPole-v1\n  simulations: 2\n"
            "  config: {num_env_runners: 1}\n",
            "e.simulations",
            "set only one",
        ),
        ("e:\n  run: PP0\n", "e.run", "did you mean 'PPO'"),
        (
            "e:\n  run: PPO\n  config: {env: {grid_search: [CartPole-v1, CartPol-v1]}}\n",
            "e.config.env.grid_search[1]",
            "did you mean 'CartPole-v1'",
        ),
        (
            "search: hyperopt\nexperiments:\n  e:\n    run: PPO\n"
            "    config: {env: {grid_search: [CartPole-v1, Pendulum-v1]}, lr: {uniform: [0, 1]}}\n",
            "experiments.e.config.env",
            "hyperopt cannot search a grid_search axis",
        ),
        ("e:\n  run: PPO\n  config: {env: [CartPole-v1]}\n", "e.config.env", "grid_search over"),
        ("e:\n  run: PPO\n  env: {grid: [CartPole-v1]}\n", "e.env", "an env name or {grid_search"),
        (
            "e:\n  run: PPO\n  env: CartPole-v1\n  resources_per_trial: {cpu: 1, memory: 1e9}\n",
            "e.resources_per_trial.memory",
            "no RLlib setting",
        ),
        (
            "e:\n  run: PPO\n  env: {grid_search: [CartPole-v1]}\n  config: {env: CartPole-v1}\n",
            "e.env",
            "env is given twice",
        ),
        ("e:\n  run: PPO\n  env: no_such_module:Env\n", "e.env", "cannot be found"),
    ],
)
def test_bad_rllib_experiments_name_the_key(write_spec, text, where, words):
    with pytest.raises(SpecError) as err:
        plan_of(write_spec, text)
    assert err.value.path == where
    assert words in str(err.value)


ENV_GRID = """
# RLlib's classic way to run one algorithm on several envs: a grid over config.env.
ppo-envs:
  run: PPO
  stop: {training_iteration: 1}
  config:
    env: {grid_search: [CartPole-v1, Pendulum-v1]}
    lr: {grid_search: [0.001, 0.0001]}
    num_workers: 0
    train_batch_size: 200
    sgd_minibatch_size: 50
    num_sgd_iter: 1
"""


@pytest.mark.parametrize("top_level", [False, True])
def test_a_grid_over_envs_is_an_axis_of_the_search(write_spec, top_level):
    text = ENV_GRID
    if top_level:  # the classic form's experiment-level env, as a grid
        text = text.replace("  config:\n    env:", "  env:")
        text = text.replace("    lr:", "  config:\n    lr:")
    (ep,) = plan_of(write_spec, text).experiments
    assert ep.env.kind == "grid" and [e.env for e in ep.env.grid] == ["CartPole-v1", "Pendulum-v1"]
    assert ep.trials == 4 and ep.searched == ("lr", "env")
    from tune_app.tuner import param_space

    space = param_space(ep, ep.env.load())
    assert space["env"] == {"grid_search": ["CartPole-v1", "Pendulum-v1"]}


@pytest.mark.e2e
def test_a_grid_over_envs_runs_a_trial_on_each(ray_session, cli, write_spec, tmp_path):
    text = ENV_GRID.replace("lr: {grid_search: [0.001, 0.0001]}", "lr: 0.001")
    # One env, as RLlib's: 200 steps over 8 envs would end no 200-step Pendulum episode.
    text = text.replace("  run: PPO\n", "  run: PPO\n  layout: rllib\n")
    result = cli("run", write_spec(text), "-q", "--storage-path", tmp_path / "out")
    assert result.code == 0, result.err[-3000:]
    summary = json.loads((tmp_path / "out" / "ppo-envs" / "summary.json").read_text())
    assert summary["counts"] == {"TERMINATED": 2}
    assert sorted(t["params"]["env"] for t in summary["trials"]) == ["CartPole-v1", "Pendulum-v1"]
    # Each trial ran on its own env: Pendulum's returns are negative, CartPole's positive.
    returns = {t["params"]["env"]: t["last"] for t in summary["trials"]}
    assert returns["Pendulum-v1"] < 0 < returns["CartPole-v1"]


@pytest.mark.parametrize(
    ("env", "module", "words"),
    [
        (
            "HalfCheetah-v4",
            "mujoco",
            'MuJoCo is not installed, run `pip install "gymnasium[mujoco]"`',
        ),
        ("LunarLander-v2", "Box2D", "Box2D is not installed"),  # read as LunarLander-v3 first
    ],
)
def test_a_registered_env_whose_package_is_missing_is_refused_before_running(
    write_spec, env, module, words
):
    import importlib.util

    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed here")
    with pytest.raises(SpecError) as err:
        plan_of(write_spec, f"e:\n  run: PPO\n  env: {env}\n  simulations: 1\n")
    assert err.value.path == "e.env" and words in str(err.value)


def test_atari_ids_are_found_once_ale_py_registers_them(write_spec, tmp_path, monkeypatch):
    with pytest.raises(SpecError, match=r"Atari envs need ale-py \(pip install ale-py\)"):
        plan_of(write_spec, "e:\n  run: PPO\n  env: ALE/Fake-v5\n  simulations: 1\n")
    # A stand-in for ale-py: importing it registers its envs, as ale-py's import does.
    (tmp_path / "ale_py.py").write_text(
        "import gymnasium\n"
        "gymnasium.register('ALE/Fake-v5', "
        "entry_point='gymnasium.envs.classic_control.cartpole:CartPoleEnv')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import gymnasium

    monkeypatch.delitem(gymnasium.envs.registry, "ALE/Fake-v5", raising=False)
    try:
        (ep,) = plan_of(
            write_spec, "e:\n  run: PPO\n  env: ALE/Fake-v5\n  simulations: 1\n"
        ).experiments
        assert (ep.env.kind, ep.env.env) == ("gym", "ALE/Fake-v5")
    finally:
        gymnasium.envs.registry.pop("ALE/Fake-v5", None)
        import sys

        sys.modules.pop("ale_py", None)


def test_custom_env_class_beside_the_spec_is_loaded(write_spec, tmp_path, monkeypatch):
    user_module("corridor_env.py", tmp_path, "corridor_env.py")
    # A working directory whose name sorts before the spec's folder: the spec's stays first.
    monkeypatch.chdir(tmp_path.parent)
    plan = plan_of(write_spec, "e:\n  run: PPO\n  env: corridor_env:Corridor\n  simulations: 1\n")
    (ep,) = plan.experiments
    assert ep.env.kind == "class"
    cls = ep.env.load()
    assert cls.__name__ == "Corridor" and cls().action_space.n == 2
    # Its module reaches Ray's workers: on PYTHONPATH first, or shipped to a cluster.
    assert ep.env_modules == ["corridor_env"] and ep.search_path[0] == str(tmp_path)
    assert local_pythonpath(plan).split(os.pathsep)[:2] == [str(tmp_path), str(tmp_path.parent)]
    assert str(tmp_path / "corridor_env.py") in runtime_env(plan)["py_modules"]
    # A name the module never binds is refused before Ray starts, read from its source.
    with pytest.raises(SpecError, match="did you mean 'Corridor'"):
        plan_of(write_spec, "e:\n  run: PPO\n  env: corridor_env:Coridor\n  simulations: 1\n")


PPO_SPEC = """
# A classic RLlib tuned-example, legacy spellings included.
cartpole-ppo:
  run: PPO
  env: CartPole-v1
  stop: {training_iteration: 2, episode_reward_mean: 500}
  config:
    framework: tf
    num_workers: 1
    train_batch_size: 200
    sgd_minibatch_size: 50
    num_sgd_iter: 1
    lr: 0.001  # one trial: grids reach RLlib's config as any value does (test_rllib_translation)
    model: {fcnet_hiddens: [16]}
"""


@pytest.mark.slow  # an in-process run: the second tier
def test_ppo_runs_through_the_cli(ray_session, cli, write_spec, tmp_path):
    # RLlib's one env: the step counts below are the batch exactly (8 vectorized envs may
    # overshoot it by a step or two of the last episodes).
    text = PPO_SPEC.replace("  run: PPO\n", "  run: PPO\n  layout: rllib\n")
    result = cli("run", write_spec(text), "-q", "--storage-path", tmp_path / "out")
    assert result.code == 0, result.err
    for old in ("num_workers", "num_sgd_iter", "sgd_minibatch_size", "episode_reward_mean"):
        assert f"cartpole-ppo.{'stop' if 'episode' in old else 'config'}.{old}" in result.err
    folder = tmp_path / "out" / "cartpole-ppo"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["counts"] == {"TERMINATED": 1}
    assert {t["iterations"] for t in summary["trials"]} == {2}
    assert [t["config"]["lr"] for t in summary["trials"]] == [0.001]
    assert summary["best"]["metric"] > 0
    rows = results_of(folder)
    assert len(rows) == 2
    for row in rows:
        # The translated keys reached RLlib: 200 steps per iteration from one env runner.
        assert row["num_env_steps_sampled_lifetime"] == 200 * row["training_iteration"]
        assert row["env_runners"]["episode_return_mean"] > 0
    # Every legacy metric a stop or metric may name is read as a key PPO's results have.
    from tune_app.rundir.layout import flatten

    keys = set(flatten(rows[-1], "/"))
    targets = {t for t in rllib.LEGACY_METRICS.values() if not t.startswith("evaluation/")}
    assert targets <= keys, targets - keys
    first = [r for r in rows if "config" in r]
    assert {r["config"]["num_epochs"] for r in first} == {1}
    assert {r["config"]["_model_config"]["fcnet_hiddens"][0] for r in first} == {16}


def test_smoke_keeps_a_valid_parallel_evaluation_valid(write_spec):
    """--smoke shrank evaluation to no runner, which RLlib refuses with parallel evaluation."""
    text = (
        "e:\n  run: PPO\n  env: CartPole-v1\n  config:\n    evaluation_interval: 1\n"
        "    evaluation_parallel_to_training: true\n    evaluation_num_env_runners: 2\n"
    )
    plan = make_plan(spec.load(write_spec(text)), cpus=2, smoke=True, rllib_checks=True)
    assert plan.experiments[0].experiment.config["evaluation_num_env_runners"] == 1


def test_the_default_observation_connectors_work_per_agent_on_a_multi_agent_env(tmp_path):
    """The app's default connectors flattened a multi-agent env's observations into one."""
    from tune_app.envs import resolve_env
    from tune_app.rllib.handlers import ObservationConnectors

    user_module("two_cartpoles.py", tmp_path)
    env = resolve_env("two_cartpoles:TwoCartPoles", tmp_path).load()()
    assert ObservationConnectors()(env=env) == []  # Box observations: nothing to flatten
    (filtered,) = ObservationConnectors(mean_std_clip=5.0)(env=env)
    assert filtered._multi_agent
    gym_env = resolve_env("CartPole-v1").load()
    (single,) = ObservationConnectors(mean_std_clip=5.0)(env=__import__("gymnasium").make(gym_env))
    assert not single._multi_agent


@pytest.mark.e2e  # RLlib trains end to end; the first tier keeps test_ppo_runs_through_the_cli
def test_a_multi_agent_env_trains_with_policies_and_a_mapping_function(
    ray_session, cli, write_spec, tmp_path
):
    import json

    user_module("two_cartpoles.py", tmp_path)
    spec = write_spec(
        "ma:\n  run: PPO\n  env: two_cartpoles:TwoCartPoles\n  stop: {training_iteration: 2}\n"
        "  config: {policies: [p0, p1], policy_mapping_fn: 'two_cartpoles:mapping'}\n"
    )
    result = cli("run", spec, "--smoke", "--storage-path", tmp_path / "o", "-q")
    assert result.code == 0, result.err
    summary = json.loads(next((tmp_path / "o").rglob("summary.json")).read_text())
    assert summary["counts"] == {"TERMINATED": 1} and summary["trials"][0]["metric"] > 0
