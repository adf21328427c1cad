"""The legacy layer's data: RLlib's algorithms by name, old config keys and result names with
what the new API stack reads instead, and the app's RLlib defaults (metric, smoke sizes, shown
knobs). Pure data; imports no RLlib.
"""

from __future__ import annotations

from typing import Any

from tune_app.contract import AUTO_METRICS
from tune_app.ray_internals import TESTED_RAY
from tune_app.rllib.metrics import SMOOTHED_LEN, SMOOTHED_RETURN

# Algorithm name -> module of its Algorithm class (the new API stack's torch algorithms).
ALGORITHMS = {
    "PPO": "ray.rllib.algorithms.ppo",
    "APPO": "ray.rllib.algorithms.appo",
    "IMPALA": "ray.rllib.algorithms.impala",
    "DQN": "ray.rllib.algorithms.dqn",
    "SAC": "ray.rllib.algorithms.sac",
}
# Algorithms of older RLlib releases that 2.60 no longer has, and what took their place.
REMOVED = {
    "PG": "PPO (policy gradients with a clipped objective)",
    "A2C": "PPO",
    "A3C": "PPO (or APPO for asynchronous sampling)",
    "DDPG": "SAC (continuous actions)",
    "TD3": "SAC (continuous actions, twin Q networks)",
    "APEX": "DQN with several env runners",
    "APEX_DQN": "DQN with several env runners",
    "APEX_DDPG": "SAC with several env runners",
    "R2D2": "DQN with model_config: {use_lstm: true}",
    "ES": "the app's own es_cartpole trainable, or PPO",
    "ARS": "the app's own es_cartpole trainable, or PPO",
    "SimpleQ": "DQN",
    "MADDPG": "SAC in a multi-agent config",
    "QMIX": "DQN in a multi-agent config",
    "MAML": f"no algorithm in RLlib {TESTED_RAY}",
    "MBMPO": f"no algorithm in RLlib {TESTED_RAY}",
    "Dreamer": "DreamerV3 (not run by this app)",
    "AlphaZero": f"no algorithm in RLlib {TESTED_RAY}",
    "SlateQ": f"no algorithm in RLlib {TESTED_RAY}",
    "LinUCB": f"no algorithm in RLlib {TESTED_RAY}",
    "LinTS": f"no algorithm in RLlib {TESTED_RAY}",
    "CRR": "CQL or MARWIL (offline RL, not run by this app)",
    "DT": f"no algorithm in RLlib {TESTED_RAY}",
}

# The default metric: the mean return of the last 100 episodes, as RLlib's old
# episode_reward_mean was (see metrics); RLlib 2.60's own key averages one iteration.
METRIC, MODE = SMOOTHED_RETURN, "max"

# Result keys of the old API stack and what the new stack (or the app) reports instead.
LEGACY_METRICS = {
    "episode_reward_mean": SMOOTHED_RETURN,
    "episode_reward_max": "env_runners/episode_return_max",
    "episode_reward_min": "env_runners/episode_return_min",
    "episode_len_mean": SMOOTHED_LEN,
    "episodes_this_iter": "env_runners/num_episodes",
    "episodes_total": "env_runners/num_episodes_lifetime",
    "timesteps_total": "num_env_steps_sampled_lifetime",
    "num_env_steps_sampled": "num_env_steps_sampled_lifetime",
    "num_env_steps_trained": "learners/__all_modules__/num_env_steps_trained_lifetime",
    # Older spellings of the same counts (Ray 1.x's info/ group; agent steps are env steps with
    # the one agent the app runs).
    "timesteps_this_iter": "env_runners/num_env_steps_sampled",
    "agent_timesteps_total": "num_env_steps_sampled_lifetime",
    "num_steps_sampled": "num_env_steps_sampled_lifetime",
    "num_agent_steps_sampled": "num_env_steps_sampled_lifetime",
    "info/num_steps_sampled": "num_env_steps_sampled_lifetime",
    "info/num_env_steps_sampled": "num_env_steps_sampled_lifetime",
    "info/num_agent_steps_sampled": "num_env_steps_sampled_lifetime",
    "num_steps_trained": "learners/__all_modules__/num_env_steps_trained_lifetime",
    "num_agent_steps_trained": "learners/__all_modules__/num_env_steps_trained_lifetime",
    "info/num_steps_trained": "learners/__all_modules__/num_env_steps_trained_lifetime",
    "info/num_env_steps_trained": "learners/__all_modules__/num_env_steps_trained_lifetime",
    "info/num_agent_steps_trained": "learners/__all_modules__/num_env_steps_trained_lifetime",
    "evaluation/episode_reward_mean": "evaluation/env_runners/episode_return_mean",
    "evaluation/episode_reward_max": "evaluation/env_runners/episode_return_max",
    "evaluation/episode_reward_min": "evaluation/env_runners/episode_return_min",
}
for _old, _new in list(LEGACY_METRICS.items()):
    if _old.startswith("episode_"):
        LEGACY_METRICS[f"sampler_results/{_old}"] = _new
        LEGACY_METRICS[f"env_runners/{_old}"] = _new
        LEGACY_METRICS[f"evaluation/sampler_results/{_old}"] = (
            f"evaluation/{_new}" if not _new.endswith("_smoothed") else f"evaluation/{_old}"
        )
SMOOTHED_NOTE = {
    SMOOTHED_RETURN: "the mean return of the last metrics_num_episodes_for_smoothing (100) "
    f"episodes, as the old key was; RLlib {TESTED_RAY}'s env_runners/episode_return_mean "
    "averages only one iteration's episodes",
    SMOOTHED_LEN: "the mean length of the last metrics_num_episodes_for_smoothing (100) episodes",
}

# Top-level result groups of the new stack; keys inside them appear only once there is data
# (episode returns after the first finished episode, evaluation/ every evaluation_interval).
RESULT_GROUPS = ("env_runners/", "evaluation/", "learners/", "timers/", "fault_tolerance/")
RESULT_KEYS = (
    *AUTO_METRICS,
    "num_env_steps_sampled_lifetime",
    "num_training_step_calls_per_iteration",
)

# Legacy config key -> its new-stack name (a dotted name: a sub-key). The value is unchanged.
RENAMED = {
    "num_workers": "num_env_runners",
    "num_rollout_workers": "num_env_runners",
    "num_envs_per_worker": "num_envs_per_env_runner",
    "num_cpus_per_worker": "num_cpus_per_env_runner",
    "num_gpus_per_worker": "num_gpus_per_env_runner",
    "custom_resources_per_worker": "custom_resources_per_env_runner",
    "num_cpus_for_driver": "num_cpus_for_main_process",
    "num_cpus_for_local_worker": "num_cpus_for_main_process",
    "num_gpus": "num_gpus_per_learner",
    "num_learner_workers": "num_learners",
    "num_cpus_per_learner_worker": "num_cpus_per_learner",
    "num_gpus_per_learner_worker": "num_gpus_per_learner",
    "num_sgd_iter": "num_epochs",
    "sgd_minibatch_size": "minibatch_size",
    "lr_schedule": "lr",  # the new stack takes a [[timestep, value], ...] schedule as `lr`
    "entropy_coeff_schedule": "entropy_coeff",
    "learning_starts": "num_steps_sampled_before_learning_starts",
    "timesteps_per_iteration": "min_sample_timesteps_per_iteration",
    "min_sample_timesteps_per_reporting": "min_sample_timesteps_per_iteration",
    "min_train_timesteps_per_reporting": "min_train_timesteps_per_iteration",
    "min_time_s_per_reporting": "min_time_s_per_iteration",
    "min_iter_time_s": "min_time_s_per_iteration",
    "metrics_smoothing_episodes": "metrics_num_episodes_for_smoothing",
    "evaluation_num_workers": "evaluation_num_env_runners",
    "evaluation_num_episodes": "evaluation_duration",  # with evaluation_duration_unit: episodes
    "ignore_worker_failures": "ignore_env_runner_failures",
    "recreate_failed_workers": "restart_failed_env_runners",
    "recreate_failed_env_runners": "restart_failed_env_runners",
    "num_consecutive_worker_failures_tolerance": "num_consecutive_env_runner_failures_tolerance",
    "worker_health_probe_timeout_s": "env_runner_health_probe_timeout_s",
    "worker_restore_timeout_s": "env_runner_restore_timeout_s",
    "delay_between_worker_restarts_s": "delay_between_env_runner_restarts_s",
    "max_num_worker_restarts": "max_num_env_runner_restarts",
    "validate_workers_after_construction": "validate_env_runners_after_construction",
    "vf_share_layers": "model_config.vf_share_layers",
    "buffer_size": "replay_buffer_config.capacity",
    "replay_buffer_size": "replay_buffer_config.capacity",
    "prioritized_replay_alpha": "replay_buffer_config.alpha",
    "prioritized_replay_beta": "replay_buffer_config.beta",
}
# Renames that only some algorithms have a target for.
RENAMED_FOR = {"hiddens": ("DQN", "model_config.head_fcnet_hiddens")}

# Old `model:` sub-keys whose new-stack name differs.
RENAMED_MODEL_KEYS = {
    "post_fcnet_hiddens": "head_fcnet_hiddens",
    "post_fcnet_activation": "head_fcnet_activation",
}
# Old model sub-keys that only ever held their defaults in published configs.
MODEL_NO_OPS: dict[str, Any] = {
    "custom_model": None,
    "custom_model_config": {},
    "custom_action_dist": None,
}

# Old replay buffer class names and the new stack's episode buffers that replace them.
REPLAY_BUFFERS = {
    "ReplayBuffer": "EpisodeReplayBuffer",
    "MultiAgentReplayBuffer": "EpisodeReplayBuffer",
    "PrioritizedReplayBuffer": "PrioritizedEpisodeReplayBuffer",
    "MultiAgentPrioritizedReplayBuffer": "PrioritizedEpisodeReplayBuffer",
}
REPLAY_KEYS = {"prioritized_replay_alpha": "alpha", "prioritized_replay_beta": "beta"}
# Old replay-buffer options with their old defaults: the default is a no-op, anything else has
# no equivalent in the new stack's episode buffers.
REPLAY_NO_OPS = {
    "storage_unit": "timesteps",
    "replay_sequence_length": 1,
    "replay_burn_in": 0,
    "replay_zero_init_states": True,
    "replay_mode": "independent",
    "worker_side_prioritization": False,
    "prioritized_replay_eps": 1e-6,
    "replay_batch_size": None,
}

# Keys the new stack has no use for and whose old default changed nothing: accepted with a
# warning when they hold that default, refused (with the reason) otherwise.
NO_OP_DEFAULTS: dict[str, tuple[Any, str]] = {
    "soft_horizon": (False, "episodes are never continued across a horizon on the new stack"),
    "noisy": (False, "the new stack's DQN module has no noisy layers"),
    "worker_side_prioritization": (False, "replay priorities are computed by the learner"),
    "replay_proportion": (0.0, "the new stack's IMPALA does not mix in replayed samples"),
    "replay_buffer_num_slots": (0, "the new stack's IMPALA does not mix in replayed samples"),
    "compress_observations": (False, "the new stack's replay buffers store episodes as they are"),
    "sample_async": (False, "env runners sample synchronously on the new stack"),
    "remote_worker_envs": (False, "sub-envs run inside their env runner on the new stack"),
    "_disable_preprocessor_api": (False, "the new stack has no preprocessors"),
    "vtrace": (
        True,
        f"RLlib {TESTED_RAY}'s IMPALA and APPO always correct off-policy samples with "
        "V-trace; use PPO for a surrogate loss without it",
    ),
}
# Keys of the old stack's machinery that mean nothing on the new stack, whatever their value.
NO_OPS = {
    "simple_optimizer": "the new stack's Learner always updates the same way",
    "eager_tracing": "a TensorFlow option; the new stack is torch",
    "eager_max_retraces": "a TensorFlow option; the new stack is torch",
    "tf_session_args": "a TensorFlow option; the new stack is torch",
    "local_tf_session_args": "a TensorFlow option; the new stack is torch",
    "log_sys_usage": f"system usage is not part of RLlib {TESTED_RAY}'s results",
    "synchronize_filters": "connector states are synchronised by the new stack itself",
    "preprocessor_pref": "the new stack has no preprocessors",
    "collect_metrics_timeout": "the new stack collects metrics every iteration",
    "metrics_episode_collection_timeout_s": "the new stack collects metrics every iteration",
    "always_attach_evaluation_results": "evaluation results appear when an evaluation ran",
    "no_done_at_end": "gymnasium envs mark a time-limit end as truncated (not terminated), "
    "which the new stack bootstraps",
    "learner_queue_size": "a queue of the old stack's learner thread",
    "learner_queue_timeout": "a queue of the old stack's learner thread",
    "num_multi_gpu_tower_stacks": "an option of the old stack's multi-GPU loader",
    "num_accs": "an option of the old stack's multi-GPU loader (num_multi_gpu_tower_stacks)",
    "minibatch_buffer_size": "an option of the old stack's learner thread",
    "_disable_execution_plan_api": "the new stack always runs training_step()",
    "vtrace_drop_last_ts": "the new stack's V-trace uses every timestep",
}
# Flags that choose RLlib's API stack: the new stack is what the app runs, so True is a no-op
# and False (asking for the old stack) cannot be honoured.
STACK_FLAGS = (
    "enable_connectors",
    "_enable_rl_module_api",
    "_enable_learner_api",
    "_enable_new_api_stack",
    "enable_rl_module_and_learner",
    "enable_env_runner_and_connector_v2",
)
# SAC's old optimization: sub-keys and the new stack's learning rates.
SAC_OPTIMIZATION = {
    "actor_learning_rate": "actor_lr",
    "critic_learning_rate": "critic_lr",
    "entropy_learning_rate": "alpha_lr",
}
# Old exploration_config types: the new stack's behaviour that matches, when one does.
STOCHASTIC_SAMPLING = "StochasticSampling"
EPSILON_GREEDY = "EpsilonGreedy"
# DQN's own exploration_config on the old stack: a spec's exploration_config was merged into it
# (replacing it only when naming another type), so these fill what a spec leaves out.
EPSILON_KEYS = {
    "initial_epsilon": 1.0,
    "final_epsilon": 0.02,
    "epsilon_timesteps": 10000,
    "warmup_timesteps": 0,
}

# RLlib marks `train_batch_size` as old-stack, yet the new stack reads it when
# `train_batch_size_per_learner` is not set, so it is honoured, not ignored.
HONOURED = {"train_batch_size"}
# Keys our translations write that the snapshot of accepted keys does not list by that name.
EXTRA_KEYS = ("env_to_module_connector", "train_batch_size_per_learner", "model_config")

# Keys that size the trial's placement group; a search over them would change bundles per trial.
RESOURCE_KEYS = (
    "num_env_runners",
    "num_cpus_per_env_runner",
    "num_gpus_per_env_runner",
    "num_cpus_for_main_process",
    "num_learners",
    "num_cpus_per_learner",
    "num_gpus_per_learner",
    "evaluation_num_env_runners",
)
# Keys `resources` checks for kind and range at once: a number of processes or of CPUs / GPUs.
SIZING_KEYS = (*RESOURCE_KEYS, "num_aggregator_actors_per_learner")

# Each algorithm's sampling family, which `layout.FAMILIES` maps to the layout that pays for it:
# PPO samples then trains; APPO and IMPALA learn while runners sample; DQN and SAC replay.
LAYOUT_FAMILY = {
    "PPO": "synchronous",
    "APPO": "asynchronous",
    "IMPALA": "asynchronous",
    "DQN": "off-policy",
    "SAC": "off-policy",
}

# Algorithms whose RLlib 2.60 config refuses rollout fragments that overshoot the train batch
# (`validate_train_batch_size_vs_rollout_fragment_length`, called by PPOConfig.validate alone).
FRAGMENT_CHECKED = ("PPO",)

# Config overrides for --smoke: one env runner, tiny batches, where the algorithm has the key.
SMOKE = {
    "train_batch_size": 256,
    "train_batch_size_per_learner": 256,
    "minibatch_size": 64,
    "num_epochs": 1,
    "num_steps_sampled_before_learning_starts": 100,
    "min_sample_timesteps_per_iteration": 100,
    "evaluation_duration": 1,
}
# Smoke caps: the spec's (or RLlib's default) value, at most this. IMPALA and APPO iterate for
# at least 10 s by default. Evaluation keeps a runner where the spec has one: RLlib refuses
# evaluation_parallel_to_training without one.
SMOKE_AT_MOST = {
    "num_env_runners": 1,
    "num_learners": 0,
    "min_time_s_per_iteration": 1,
    "evaluation_num_env_runners": 1,
}
# IMPALA and APPO cut their train batch into minibatches of whole rollout fragments.
SMOKE_FRAGMENTS = {"rollout_fragment_length": 32}

# Knobs shown by `tune_app list`, where the algorithm has them.
SHOWN_KNOBS = (
    "lr",
    "gamma",
    "train_batch_size",
    "num_env_runners",
    "num_envs_per_env_runner",
    "rollout_fragment_length",
    "num_epochs",
    "minibatch_size",
    "lambda",
    "clip_param",
    "entropy_coeff",
    "vf_loss_coeff",
    "epsilon",
    "n_step",
    "target_network_update_freq",
    "tau",
    "actor_lr",
    "critic_lr",
    "alpha_lr",
)
