"""RLlib algorithms by name: config keys checked, legacy spellings carried to the new API stack,
bundles computed, results cleaned.

RLlib's `AlgorithmConfig.update_from_dict` accepts any key, maps only some legacy ones and
silently ignores the rest; this module makes each legacy key a translation with one warning, or
an error saying why nothing on the new stack does what it asked. Keys are checked against a
snapshot of each algorithm's config (`rllib_keys.json`, compared with the installed RLlib by the
tests), so `validate` never imports RLlib; `run` also has RLlib's own `validate` check the
config before Ray starts.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from tune_app.config_keys import PRIVATE_KEYS
from tune_app.contract import AUTO_METRICS
from tune_app.errors import Collector, SpecError, did_you_mean
from tune_app.rllib_metrics import RETURN_MEAN, SMOOTHED_LEN, SMOOTHED_RETURN
from tune_app.scoring import finite
from tune_app.space import Domain, representative, whole_number
from tune_app.spec import Experiment

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
    "MAML": "no algorithm in RLlib 2.60",
    "MBMPO": "no algorithm in RLlib 2.60",
    "Dreamer": "DreamerV3 (not run by this app)",
    "AlphaZero": "no algorithm in RLlib 2.60",
    "SlateQ": "no algorithm in RLlib 2.60",
    "LinUCB": "no algorithm in RLlib 2.60",
    "LinTS": "no algorithm in RLlib 2.60",
    "CRR": "CQL or MARWIL (offline RL, not run by this app)",
    "DT": "no algorithm in RLlib 2.60",
}

# The default metric: the mean return of the last 100 episodes, as RLlib's old
# episode_reward_mean was (see rllib_metrics); RLlib 2.60's own key averages one iteration.
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
    "episodes, as the old key was; RLlib 2.60's env_runners/episode_return_mean averages only "
    "one iteration's episodes",
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
        "RLlib 2.60's IMPALA and APPO always correct off-policy samples with "
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
    "log_sys_usage": "system usage is not part of RLlib 2.60's results",
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
# SAC's old per-network model configs; the new stack builds both from one model_config.
SAC_MODEL_CONFIGS = ("q_model_config", "policy_model_config", "Q_model", "policy_model")
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

# Config overrides for --smoke: one env runner, tiny batches, where the algorithm has the key.
SMOKE = {
    "train_batch_size": 256,
    "train_batch_size_per_learner": 256,
    "minibatch_size": 64,
    "num_epochs": 1,
    "num_steps_sampled_before_learning_starts": 100,
    "min_sample_timesteps_per_iteration": 100,
    "evaluation_num_env_runners": 0,
    "evaluation_duration": 1,
}
# Smoke caps: the spec's (or RLlib's default) value, at most this. IMPALA and APPO iterate for
# at least 10 s by default.
SMOKE_AT_MOST = {"num_env_runners": 1, "num_learners": 0, "min_time_s_per_iteration": 1}
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


def algorithm_class(name: str) -> Any:
    """The Algorithm class named `name` (imports RLlib)."""
    cls = getattr(importlib.import_module(ALGORITHMS[name]), name)
    # RLlib logs a notice about its new API stack for every config it builds; the plan says it.
    # Set after the import: importing RLlib sets its logger's level.
    logging.getLogger("ray.rllib").setLevel(logging.ERROR)
    return cls


def app_algorithm(name: str) -> Any:
    """The algorithm as trials run it: RLlib's class whose results have their no-data NaNs
    dropped and the smoothed episode returns added (see `rllib_metrics`)."""
    from tune_app import rllib_metrics

    base = algorithm_class(name)

    def step(self: Any) -> dict[str, Any]:
        result = super(cls, self).step()  # type: ignore[arg-type]
        smoother = self.__dict__.get("_app_smoother")
        if smoother is None:
            window = self.config.metrics_num_episodes_for_smoothing
            smoother = self.__dict__["_app_smoother"] = rllib_metrics.Smoother(window)
        return smoother.update(rllib_metrics.drop_no_data(result))

    # Same name as RLlib's class: Tune names trials and folders after it.
    cls = type(name, (base,), {"step": step, "__module__": __name__, "__qualname__": name})
    return cls


# ---- the accepted keys ------------------------------------------------------------------------

KEYS_FILE = Path(__file__).with_name("rllib_keys.json")


@dataclass(frozen=True)
class AlgorithmKeys:
    """What an algorithm's config accepts, and the keys RLlib would silently ignore."""

    name: str
    defaults: dict[str, Any]  # every accepted key with its default (JSON; others as repr text)
    ignored: dict[str, str]  # key -> why it is ignored, what to use instead
    model_keys: tuple[str, ...]  # accepted sub-keys of model_config


@cache
def algorithm_keys(name: str) -> AlgorithmKeys:
    """An algorithm's accepted keys from the snapshot of RLlib's configs (no RLlib import)."""
    data = json.loads(KEYS_FILE.read_text())[name]
    return AlgorithmKeys(
        name=name,
        defaults=data["defaults"],
        ignored=data["ignored"],
        model_keys=tuple(data["model_keys"]),
    )


def live_algorithm_keys(name: str) -> AlgorithmKeys:
    """Read an algorithm's accepted config keys off the installed RLlib's AlgorithmConfig."""
    config_cls = type(algorithm_class(name).get_default_config())
    defaults = {k: v for k, v in config_cls().to_dict().items() if not k.startswith("_")}
    defaults["train_batch_size_per_learner"] = None
    defaults["model_config"] = {}
    ignored = {k: "RLlib's new API stack ignores it" for k in _old_stack_keys(config_cls)}
    for key in [*HONOURED, *RENAMED, *NO_OPS, *NO_OP_DEFAULTS, *STACK_FLAGS]:
        ignored.pop(key, None)
    legacy = [k for k in _HANDLERS if k not in ("framework", "replay_buffer_config")]
    for key in [*ignored, *RENAMED, *legacy, *NO_OPS, *NO_OP_DEFAULTS, *STACK_FLAGS]:
        defaults.pop(key, None)
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    model_keys = tuple(f.name for f in dataclasses.fields(DefaultModelConfig))
    return AlgorithmKeys(
        name=name,
        defaults={k: _jsonable(v) for k, v in sorted(defaults.items())},
        ignored=dict(sorted(ignored.items())),
        model_keys=model_keys,
    )


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))  # no addresses: stable text


def write_keys_snapshot(path: Path = KEYS_FILE) -> None:
    """Write the snapshot of every algorithm's keys from the installed RLlib."""
    data = {name: dataclasses.asdict(live_algorithm_keys(name)) for name in ALGORITHMS}
    for entry in data.values():
        entry.pop("name")
        entry["model_keys"] = list(entry["model_keys"])
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def _old_stack_keys(config_cls: type) -> set[str]:
    """Attributes RLlib's config classes mark `# @OldAPIStack` or set to DEPRECATED_VALUE."""
    marked = re.compile(r"self\.(\w+)(?:\[[^\]]*\])?\s*=.*#\s*@OldAPIStack")
    deprecated = re.compile(r"self\.(\w+)\s*=\s*DEPRECATED_VALUE")
    keys: set[str] = set()
    for cls in config_cls.__mro__:
        init = vars(cls).get("__init__")
        if inspect.isfunction(init):
            source = inspect.getsource(init)
            keys.update(marked.findall(source), deprecated.findall(source))
    return keys


# ---- translation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Translated:
    """An RLlib experiment's config after translation, with one warning per change."""

    config: dict[str, Any]
    warnings: tuple[str, ...]


@dataclass
class _Translation:
    """The state of one config's translation: what is written, warned and wrong so far."""

    name: str
    keys: AlgorithmKeys
    given: dict[str, Any]
    gym_env: bool
    out: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # new key path -> the key written

    def put(self, target: str, value: Any, path: str, note: str | None = None) -> None:
        """Set `target` (dotted: a sub-key) from the key at `path`, warning unless it is new."""
        top, _, sub = target.partition(".")
        if sub:
            value = {sub: value}
        written = self.sources.get(target)
        if written is not None and written != path:
            raise SpecError(
                f"'{path.removeprefix('config.')}' and '{written.removeprefix('config.')}' both "
                f"set {target}",
                path=path,
                suggestion="keep one of them",
            )
        self.sources[target] = path
        if note is not None:
            self.warnings.append(f"{path}: {note}")
        _merge(self.out, top, value)


def translate_config(name: str, config: Any, *, gym_env: bool = True) -> Translated:
    """Check every config key against the algorithm's config; carry legacy keys to the new stack.

    Raises SpecError (paths relative to the experiment), all problems at once, for an unknown
    key, a key the new stack would ignore, or a legacy key with no equivalent. `gym_env` says
    whether the env is a gymnasium id (a `horizon` becomes its max_episode_steps).
    """
    if not isinstance(config, dict):
        raise SpecError(f"an RLlib config must be a mapping, got {config!r}", path="config")
    t = _Translation(name=name, keys=algorithm_keys(name), given=config, gym_env=gym_env)
    errors = Collector()
    # New-stack keys first, so that a legacy key setting the same thing is reported against it.
    ordered = sorted(config, key=is_legacy)
    for key in ordered:
        with errors.check():
            _translate_key(t, key, config[key], f"config.{key}")
    errors.raise_any()
    _check_n_step(t)
    _fragments_for_n_step(t)
    return Translated(config=t.out, warnings=tuple(t.warnings))


def _check_n_step(t: _Translation) -> None:
    """DQN's and SAC's n_step: a whole number of steps, or a [low, high] range drawn from per
    episode; RLlib 2.60 takes anything else and fails inside the trial."""
    n_step = t.out.get("n_step")
    if t.name not in ("DQN", "SAC") or n_step is None or _searched(n_step):
        return
    pair = isinstance(n_step, list) and len(n_step) == 2 and all(map(whole_number, n_step))
    if (whole_number(n_step) and n_step >= 1) or (pair and 1 <= n_step[0] <= n_step[1]):
        return
    raise SpecError(
        f"n_step is {n_step!r}",
        path="config.n_step",
        allowed="a whole number >= 1, or [low, high] with 1 <= low <= high",
    )


def _searched(value: Any) -> bool:
    return isinstance(value, Domain)


def _fragments_for_n_step(t: _Translation) -> None:
    """RLlib 2.60 refuses DQN and SAC fragments shorter than n_step, which the old stack took:
    the fragments grow to n_step, with a warning. A [low, high] range goes to RLlib as the tuple
    its configs take (SAC then compares a fragment with its high end; a list it compares whole,
    and fails). DQN compares a numeric fragment with the whole range and fails, so with a range
    a fragment up to its high end is read as "auto" (DQN's default: the high end), a longer one
    is refused."""
    if t.name not in ("DQN", "SAC"):
        return
    fragment = t.out.get("rollout_fragment_length")
    n_step = t.out.get("n_step", t.keys.defaults.get("n_step"))
    if isinstance(n_step, list):  # [low, high], as _check_n_step let it through
        n_step = t.out["n_step"] = tuple(n_step)
    steps = n_step[1] if isinstance(n_step, tuple) else n_step
    if not whole_number(fragment) or not whole_number(steps):
        return
    if t.name == "DQN" and isinstance(n_step, tuple):
        if fragment > steps:
            raise SpecError(
                f"RLlib 2.60's DQN cannot check rollout_fragment_length {fragment} against an "
                f"n_step range {list(n_step)} (it fails comparing a number with the range)",
                path="config.rollout_fragment_length",
                suggestion=f"write rollout_fragment_length: auto (n_step's high end, {steps}), "
                "or one n_step",
            )
        t.out["rollout_fragment_length"] = "auto"
        if fragment < steps:
            t.warnings.append(
                f"config.rollout_fragment_length: {fragment} is shorter than n_step's high end "
                f"{steps}, which RLlib 2.60 refuses; read as auto ({steps})"
            )
        return
    if fragment < steps:
        t.out["rollout_fragment_length"] = steps
        t.warnings.append(
            f"config.rollout_fragment_length: {fragment} is shorter than n_step {steps}, which "
            f"RLlib 2.60 refuses; read as {steps}"
        )


def is_legacy(key: str) -> bool:
    """Whether `key` is an old-stack key the app translates (renamed, handled or a no-op)."""
    return key in RENAMED or key in _HANDLERS or key in NO_OPS or key in NO_OP_DEFAULTS


def _translate_key(t: _Translation, key: str, value: Any, path: str) -> None:
    keys = t.keys
    if key in _HANDLERS:
        _HANDLERS[key](t, value, path)
    elif key in RENAMED:
        new = RENAMED[key]
        if key == "evaluation_num_episodes":
            t.out.setdefault("evaluation_duration_unit", "episodes")
        if new.startswith("replay_buffer_config") and "replay_buffer_config" not in keys.defaults:
            raise _no_key(t, key, path)
        t.put(new, value, path, f"legacy RLlib key, read as {new}")
    elif key in RENAMED_FOR and RENAMED_FOR[key][0] == t.name:
        new = RENAMED_FOR[key][1]
        t.put(new, value, path, f"legacy RLlib key, read as {new}")
    elif key in NO_OPS:
        dropped = " (its search is dropped: every value ran the same)" if _searched(value) else ""
        t.warnings.append(
            f"{path}: legacy RLlib key with no effect on the new stack ({NO_OPS[key]}){dropped}"
        )
    elif key in NO_OP_DEFAULTS:
        default, why = NO_OP_DEFAULTS[key]
        if value != default:
            raise SpecError(
                f"'{key}: {value!r}' has no equivalent on RLlib's new API stack ({why})",
                path=path,
                suggestion=f"remove it (only {key}: {default!r} is accepted, as a no-op)",
            )
        t.warnings.append(f"{path}: legacy RLlib key left at its old default; no effect ({why})")
    elif key in STACK_FLAGS:
        _stack_flag(t, key, value, path)
    elif key in keys.ignored:
        raise SpecError(
            f"'{key}' would be silently ignored by {t.name} on RLlib's new API stack, and has no "
            "equivalent there",
            path=path,
            suggestion=keys.ignored[key],
        )
    elif key == "model_config":
        t.put("model_config", _check_model_keys(value, keys, path), path)
    elif key in keys.defaults or key in EXTRA_KEYS:
        t.put(key, value, path)
    else:
        raise _no_key(t, key, path)


def check_mutated_key(name: str, key: str, path: str) -> None:
    """A key PBT or PB2 mutates is written into the trial's config as named, after the spec was
    translated: it must be one the algorithm reads under that name."""
    keys = algorithm_keys(name)
    if key in keys.defaults or key in EXTRA_KEYS:
        return
    if key in keys.ignored:
        raise SpecError(
            f"'{key}' would be silently ignored by {name} on RLlib's new API stack",
            path=path,
            suggestion=keys.ignored[key],
        )
    if is_legacy(key):
        new = RENAMED.get(key)
        raise SpecError(
            f"'{key}' is a legacy RLlib key, read only when the spec is loaded: mutated as named, "
            "it would change nothing",
            path=path,
            suggestion=f"mutate {new}" if new else "mutate a key of `tune_app list " + name + "`",
        )
    raise SpecError(
        f"{name} has no config key '{key}': a mutation of it would change nothing",
        path=path,
        allowed=f"the {len(keys.defaults)} keys `tune_app list {name}` prints",
        suggestion=did_you_mean(key, keys.defaults) or did_you_mean(key, RENAMED),
    )


def _no_key(t: _Translation, key: str, path: str) -> SpecError:
    known = t.keys.defaults
    return SpecError(
        f"{t.name} has no config key '{key}'",
        path=path,
        allowed=f"the {len(known)} keys `tune_app list {t.name}` prints",
        suggestion=did_you_mean(key, known)
        or did_you_mean(key, RENAMED)
        or "RLlib would silently ignore it",
    )


def _merge(out: dict[str, Any], key: str, value: Any) -> None:
    if key in out and isinstance(out[key], dict) and isinstance(value, dict):
        out[key] = {**out[key], **value}
    else:
        out[key] = value


def _mapping(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SpecError(f"must be a mapping, got {value!r}", path=path)
    return value


def _framework(t: _Translation, value: Any, path: str) -> None:
    if value == "torch":
        t.put("framework", value, path)
    elif value in ("tf", "tf2", "tfe"):
        t.put(
            "framework",
            "torch",
            path,
            f"framework '{value}' read as torch (RLlib's new stack is torch)",
        )
    else:
        raise SpecError(
            f"framework {value!r} is not supported", path=path, allowed=("torch", "tf", "tf2")
        )


def _use_pytorch(t: _Translation, value: Any, path: str) -> None:
    note = "legacy RLlib key, read as framework: torch"
    if not value:
        note += " (RLlib's new stack is torch only)"
    t.put("framework", "torch", path, note)


def _stack_flag(t: _Translation, key: str, value: Any, path: str) -> None:
    if value is True:
        t.warnings.append(
            f"{path}: asks for RLlib's new API stack, which is the one the app runs; no effect"
        )
        return
    raise SpecError(
        f"'{key}: {value!r}' asks for RLlib's old API stack, which RLlib 2.60 and this app no "
        "longer run",
        path=path,
        suggestion="remove it; the config then runs on the new API stack",
    )


def _observation_filter(t: _Translation, value: Any, path: str) -> None:
    if value == "NoFilter":
        t.warnings.append(f"{path}: NoFilter is the new stack's default; no effect")
        return
    if value not in ("MeanStdFilter", "ConcurrentMeanStdFilter"):
        raise SpecError(
            f"observation_filter {value!r} has no equivalent on RLlib's new API stack",
            path=path,
            allowed=("MeanStdFilter", "ConcurrentMeanStdFilter", "NoFilter"),
        )
    t.put(
        "env_to_module_connector",
        ObservationConnectors(mean_std_clip=10.0),
        path,
        "legacy RLlib key, read as env_to_module_connector: RLlib's MeanStdFilter connector "
        "(running mean/std of observations, clipped at 10, as the old filter)",
    )


@dataclass(frozen=True)
class ObservationConnectors:
    """Builds the env-to-module connectors that do what the old stack did to observations, on
    each env runner; a picklable value for the trial's config (`env_to_module_connector`).

    The old stack one-hot encoded and flattened Discrete, MultiDiscrete, Tuple and Dict
    observations by default (its preprocessors); the new stack's default models take only Box
    observations ("No default encoder config for obs space=Discrete(16)"), so such an env gets
    RLlib's FlattenObservations. With `mean_std_clip`, `observation_filter: MeanStdFilter`:
    RLlib's MeanStdFilter connector, clipped at that value."""

    mean_std_clip: float | None = None

    def __call__(self, env: Any = None, spaces: Any = None, device: Any = None) -> list[Any]:
        import gymnasium as gym
        from ray.rllib.connectors.env_to_module import FlattenObservations, MeanStdFilter

        connectors: list[Any] = []
        space = _observation_space(env, spaces)
        if not isinstance(space, gym.spaces.Box) and _flattens(space):
            connectors.append(FlattenObservations(multi_agent=False))
        if self.mean_std_clip is not None:
            connectors.append(MeanStdFilter(multi_agent=False, clip_by_value=self.mean_std_clip))
        return connectors

    def __repr__(self) -> str:
        return "MeanStdFilter" if self.mean_std_clip is not None else "FlattenObservations"


def _flattens(space: Any) -> bool:
    """Whether FlattenObservations takes `space`: Box, Discrete and MultiDiscrete leaves in any
    Tuple or Dict (not Text, Graph or Sequence, whose RLlib error is then left to show)."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Dict):
        return all(_flattens(s) for s in space.spaces.values())
    if isinstance(space, gym.spaces.Tuple):
        return all(_flattens(s) for s in space.spaces)
    return isinstance(space, gym.spaces.Box | gym.spaces.Discrete | gym.spaces.MultiDiscrete)


def _observation_space(env: Any, spaces: Any) -> Any:
    """One env's observation space, as RLlib's build_env_to_module_connector finds it."""
    if env is not None:
        return getattr(env, "single_observation_space", getattr(env, "observation_space", None))
    if isinstance(spaces, dict) and "__env_single__" in spaces:
        return spaces["__env_single__"][0]
    return None


def _exploration_config(t: _Translation, value: Any, path: str) -> None:
    value = _mapping(value, path)
    default = EPSILON_GREEDY if t.name == "DQN" else STOCHASTIC_SAMPLING  # the old stack's
    kind = str(value.get("type", default)).rsplit(".", 1)[-1]
    options = {k: v for k, v in value.items() if k != "type"}
    if kind == EPSILON_GREEDY and t.name == "DQN":
        _unknown_sub_keys(options, EPSILON_KEYS, path)
        o = {**EPSILON_KEYS, **options}
        start = int(o["warmup_timesteps"])
        schedule = [[0, o["initial_epsilon"]]]
        if start:
            schedule.append([start, o["initial_epsilon"]])
        schedule.append([start + int(o["epsilon_timesteps"]), o["final_epsilon"]])
        t.put(
            "epsilon",
            schedule,
            path,
            f"legacy RLlib key, read as epsilon: {schedule} (the new stack's linear epsilon "
            "schedule)",
        )
        return
    if kind == STOCHASTIC_SAMPLING and not options.get("random_timesteps"):
        _unknown_sub_keys(options, {"random_timesteps": 0}, path)
        t.warnings.append(
            f"{path}: StochasticSampling is what the new stack does (actions sampled from the "
            "policy's distribution); no effect"
        )
        return
    raise SpecError(
        f"exploration type '{kind}' has no equivalent for {t.name} on RLlib's new API stack",
        path=f"{path}.type",
        suggestion="remove exploration_config"
        + (
            "; DQN's epsilon: [[0, 1.0], [10000, 0.05]] is its epsilon-greedy schedule"
            if t.name == "DQN"
            else ""
        ),
    )


def _unknown_sub_keys(given: dict[str, Any], known: Any, path: str) -> None:
    for key in given:
        if key not in known:
            raise SpecError(
                f"unknown key '{key}'",
                path=f"{path}.{key}",
                allowed=list(known),
                suggestion=did_you_mean(key, known),
            )


def _optimization(t: _Translation, value: Any, path: str) -> None:
    if t.name != "SAC":
        raise _no_key(t, "optimization", path)
    value = _mapping(value, path)
    _unknown_sub_keys(value, SAC_OPTIMIZATION, path)
    for old, new in SAC_OPTIMIZATION.items():
        if old in value:
            t.put(new, value[old], f"{path}.{old}", f"legacy SAC key, read as {new}")


def _sac_model_config(t: _Translation, value: Any, path: str) -> None:
    if t.name != "SAC":
        raise _no_key(t, path.rsplit(".", 1)[-1], path)
    value = _mapping(value, path)
    for sub, v in value.items():
        where = f"{path}.{sub}"
        if sub in MODEL_NO_OPS:
            if v != MODEL_NO_OPS[sub]:
                raise SpecError(
                    f"'{sub}' has no equivalent in the new stack's default SAC module",
                    path=where,
                    suggestion="remove it (custom models are RLModules on the new stack)",
                )
            continue
        new = RENAMED_MODEL_KEYS.get(sub, sub)
        if new not in t.keys.model_keys:
            raise SpecError(
                f"'{sub}' is not a key of RLlib's default model config",
                path=where,
                allowed=t.keys.model_keys,
                suggestion=did_you_mean(sub, t.keys.model_keys),
            )
        target = f"model_config.{new}"
        earlier = t.sources.get(target)
        current = t.out.get("model_config", {}).get(new)
        if earlier is not None and current == v:  # the Q and policy networks agree
            t.warnings.append(f"{where}: legacy SAC key, read as {target} (as {earlier})")
            continue
        if earlier is not None and current != v:
            raise SpecError(
                f"{where} is {v!r} but {earlier.removeprefix('config.')} is {current!r}: the "
                "new stack's SAC builds its policy and Q networks from one model_config",
                path=where,
                suggestion="give both the same value, or set model_config instead",
            )
        t.put(target, v, where, f"legacy SAC key, read as {target} (policy and Q networks)")


def _replay_buffer_config(t: _Translation, value: Any, path: str) -> None:
    if "replay_buffer_config" not in t.keys.defaults:
        raise _no_key(t, "replay_buffer_config", path)
    value = _mapping(value, path)
    for sub, v in value.items():
        where = f"{path}.{sub}"
        if sub == "learning_starts":
            new = "num_steps_sampled_before_learning_starts"
            t.put(new, v, where, f"legacy RLlib key, read as {new}")
        elif sub == "type" and isinstance(v, str) and v.rsplit(".", 1)[-1] in REPLAY_BUFFERS:
            new = REPLAY_BUFFERS[v.rsplit(".", 1)[-1]]
            t.put("replay_buffer_config.type", new, where, f"old buffer class, read as {new}")
        elif sub in REPLAY_KEYS:
            new = REPLAY_KEYS[sub]
            t.put(f"replay_buffer_config.{new}", v, where, f"legacy key, read as {new}")
        elif sub in REPLAY_NO_OPS:
            if v != REPLAY_NO_OPS[sub]:
                raise SpecError(
                    f"'{sub}: {v!r}' has no equivalent in the new stack's episode replay buffers",
                    path=where,
                    suggestion=f"remove it (only {REPLAY_NO_OPS[sub]!r}, the old default, is "
                    "accepted as a no-op)",
                )
            t.warnings.append(f"{where}: old replay option at its default; no effect")
        else:
            t.put(f"replay_buffer_config.{sub}", v, where)


def _prioritized_replay(t: _Translation, value: Any, path: str) -> None:
    if "replay_buffer_config" not in t.keys.defaults:
        raise _no_key(t, "prioritized_replay", path)
    new = "PrioritizedEpisodeReplayBuffer" if value else "EpisodeReplayBuffer"
    t.put(
        "replay_buffer_config.type",
        new,
        path,
        f"legacy RLlib key, read as replay_buffer_config.type: {new}",
    )


def _horizon(t: _Translation, value: Any, path: str) -> None:
    if not t.gym_env:
        raise SpecError(
            "horizon on an env class has no equivalent the app can set",
            path=path,
            suggestion="wrap the env in gymnasium.wrappers.TimeLimit(env, max_episode_steps=N)",
        )
    if value is None or value is False:
        t.warnings.append(f"{path}: no horizon; no effect")
        return
    t.put(
        "env_config.max_episode_steps",
        value,
        path,
        "legacy RLlib key, read as env_config.max_episode_steps (gymnasium's TimeLimit)",
    )


def _model(t: _Translation, value: Any, path: str) -> None:
    """An old `model:` dict as a new-stack `model_config`, refusing sub-keys it would ignore."""
    value = _mapping(value, path)
    t.warnings.append(f"{path}: legacy RLlib key, read as model_config")
    out = {}
    for sub, v in value.items():
        if sub in MODEL_NO_OPS and v == MODEL_NO_OPS[sub]:
            continue
        new = RENAMED_MODEL_KEYS.get(sub, sub)
        if new != sub:
            t.warnings.append(f"{path}.{sub}: legacy model key, read as model_config.{new}")
        out[new] = v
    for sub, v in _check_model_keys(out, t.keys, path).items():
        t.put(f"model_config.{sub}", v, path)


def _check_model_keys(value: Any, keys: AlgorithmKeys, path: str) -> Any:
    if isinstance(value, Domain):
        return value
    if not isinstance(value, dict):
        raise SpecError(f"model_config must be a mapping, got {value!r}", path=path)
    for sub in value:
        if sub not in keys.model_keys:
            raise SpecError(
                f"'{sub}' is not a key of RLlib's default model config; RLlib would ignore it",
                path=f"{path}.{sub}",
                allowed=keys.model_keys,
                suggestion=did_you_mean(sub, keys.model_keys),
            )
    return value


_HANDLERS: dict[str, Callable[[_Translation, Any, str], None]] = {
    "framework": _framework,
    "use_pytorch": _use_pytorch,
    "observation_filter": _observation_filter,
    "exploration_config": _exploration_config,
    "optimization": _optimization,
    "q_model_config": _sac_model_config,
    "policy_model_config": _sac_model_config,
    "Q_model": _sac_model_config,
    "policy_model": _sac_model_config,
    "replay_buffer_config": _replay_buffer_config,
    "prioritized_replay": _prioritized_replay,
    "horizon": _horizon,
    "model": _model,
}


def translate_metric(key: str, where: str) -> tuple[str, str | None]:
    """A result key in the new stack's name, and a warning when it was a legacy name."""
    new = LEGACY_METRICS.get(key)
    if new is None:
        return key, None
    note = f" ({SMOOTHED_NOTE[new]})" if new in SMOOTHED_NOTE else ""
    return new, f"{where}: legacy RLlib metric '{key}', read as '{new}'{note}"


def check_metric(key: str, where: str, name: str) -> None:
    """Refuse a top-level result key RLlib never reports; grouped keys are checked at run time."""
    if key in RESULT_KEYS or key.startswith(RESULT_GROUPS) or "/" in key:
        return
    known = [*RESULT_KEYS, METRIC, RETURN_MEAN, *LEGACY_METRICS]
    raise SpecError(
        f"'{key}' is not a result key of {name}",
        path=where,
        allowed=(*RESULT_KEYS, "env_runners/...", "learners/...", "evaluation/..."),
        suggestion=did_you_mean(key, known)
        or did_you_mean(f"env_runners/{key}", known)
        or f"episode returns are {METRIC} (last 100 episodes) and {RETURN_MEAN} (one iteration)",
    )


# ---- RLlib's own view of a config -------------------------------------------------------------


def algorithm_config(name: str, config: dict[str, Any]) -> Any:
    """An AlgorithmConfig of `name` from a translated, concrete config dict (as the trial will)."""
    cls = algorithm_class(name)
    return cls.get_default_config().update_from_dict(to_rllib(config))


def to_rllib(config: dict[str, Any]) -> dict[str, Any]:
    """Our key names to the attribute names `update_from_dict` sets; observations handled as
    the old stack did (`ObservationConnectors`) unless the config says otherwise. A config as
    RLlib saved it reads back with `config_keys.restore_private_keys`."""
    out = dict(config)
    out.setdefault("env_to_module_connector", ObservationConnectors())
    for key in PRIVATE_KEYS:
        if key in out:
            out[f"_{key}"] = out.pop(key)
    return out


def check_with_rllib(name: str, config: dict[str, Any]) -> tuple[dict[str, float], ...]:
    """Have RLlib's own `validate` check a representative point of `config` (imports RLlib);
    returns the trial's bundles as RLlib sizes them."""
    point = representative(config)
    try:
        request = algorithm_class(name).default_resource_request(to_rllib(point))
    except (ValueError, TypeError, KeyError) as err:
        raise SpecError(f"{name} refuses this config: {_first_line(err)}", path="config") from None
    return tuple(
        {k: float(v) for k, v in bundle.items() if v} or {"CPU": 0.0} for bundle in request.bundles
    )


def _first_line(err: BaseException) -> str:
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    return lines[0] if lines else type(err).__name__


# ---- resources --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resources:
    """A trial's placement group as RLlib sizes it, with the parts named for messages."""

    bundles: tuple[dict[str, float], ...]
    main: float  # CPUs of the main process (it trains when there are no learners)
    env_runners: int
    cpus_per_env_runner: float
    eval_env_runners: int
    learners: int
    cpus_per_learner: float

    @property
    def cpus(self) -> float:
        return sum(b.get("CPU", 0.0) for b in self.bundles)


_COUNTS = (  # keys that count processes: whole numbers
    "num_env_runners",
    "num_learners",
    "evaluation_num_env_runners",
    "num_aggregator_actors_per_learner",
)


def _check_count(key: str, value: Any, where: str) -> None:
    """A resource-sizing key holds a number of processes (a whole number) or of CPUs / GPUs
    (any number, `num_cpus_per_learner` also "auto"), never below 0; null takes RLlib's default."""
    if value is None or (key == "num_cpus_per_learner" and value == "auto"):
        return
    whole = key in _COUNTS
    number = finite(value)
    if number is not None and number >= 0 and (not whole or number.is_integer()):
        return
    allowed = "a whole number >= 0" if whole else "a number >= 0"
    if key == "num_cpus_per_learner":
        allowed += ' or "auto"'
    raise SpecError(
        f"'{key}' sizes each trial's resources; got {value!r}",
        path=f"{where}.{key}",
        allowed=allowed,
    )


def resources(name: str, config: dict[str, Any]) -> Resources:
    """The trial's bundles from `config` and the algorithm's defaults, as RLlib 2.60's
    `default_resource_request` computes them (tests compare the two), without importing RLlib."""
    for key in RESOURCE_KEYS:
        if isinstance(config.get(key), Domain):
            raise SpecError(
                f"'{key}' sizes each trial's resources and cannot be searched",
                path=f"config.{key}",
                suggestion="write one experiment per value instead",
            )
    defaults = algorithm_keys(name).defaults
    evaluation = config.get("evaluation_config") or {}
    if not isinstance(evaluation, dict):
        raise SpecError(
            f"a mapping of config keys for evaluation, got {evaluation!r}",
            path="config.evaluation_config",
        )
    for key in (*RESOURCE_KEYS, "num_aggregator_actors_per_learner"):
        _check_count(key, config.get(key), "config")
    for key in ("num_env_runners", "num_cpus_per_env_runner", "num_gpus_per_env_runner"):
        _check_count(key, evaluation.get(key), "config.evaluation_config")

    def get(key: str) -> Any:
        value = config.get(key, defaults.get(key))
        return value

    learners = int(get("num_learners") or 0)
    gpus_per_learner = float(get("num_gpus_per_learner") or 0)
    per_learner = get("num_cpus_per_learner")
    if per_learner == "auto":
        per_learner = 1 if gpus_per_learner == 0 else 0
    per_learner = float(per_learner)
    main_cpus = float(get("num_cpus_for_main_process") or 0)
    aggregators = int(get("num_aggregator_actors_per_learner") or 0)
    if learners == 0:
        main = {"CPU": max(per_learner, main_cpus), "GPU": gpus_per_learner}
        learner_bundles = [{"CPU": 1.0} for _ in range(aggregators)]
    else:
        main = {"CPU": main_cpus, "GPU": 0.0}
        learner_bundles = [
            {"CPU": per_learner + aggregators, "GPU": gpus_per_learner} for _ in range(learners)
        ]
    runners = int(get("num_env_runners") or 0)
    runner = {
        "CPU": float(get("num_cpus_per_env_runner") or 0),
        "GPU": float(get("num_gpus_per_env_runner") or 0),
    }
    eval_runners = int(evaluation.get("num_env_runners", get("evaluation_num_env_runners")) or 0)
    eval_runner = {
        "CPU": float(evaluation.get("num_cpus_per_env_runner", runner["CPU"]) or 0),
        "GPU": float(evaluation.get("num_gpus_per_env_runner", runner["GPU"]) or 0),
    }
    raw = [main, *[runner] * runners, *[eval_runner] * eval_runners, *learner_bundles]
    bundles = tuple({k: v for k, v in b.items() if v} or {"CPU": 0.0} for b in raw)
    return Resources(
        bundles=bundles,
        main=main["CPU"],
        env_runners=runners,
        cpus_per_env_runner=runner["CPU"],
        eval_env_runners=eval_runners,
        learners=learners,
        cpus_per_learner=per_learner,
    )


# ---- an RLlib experiment of a spec --------------------------------------------------------


def translate_experiment(
    exp: Experiment, warnings: list[str], gym_env: bool
) -> tuple[Experiment, SpecError | None]:
    """The experiment with RLlib's legacy config keys and metric names in new-stack spelling,
    and the config's translation errors (the metric names are translated all the same, so the
    rest of the experiment is checked in the same pass)."""
    where = exp.key_path
    failed: SpecError | None = None
    try:
        translated = translate_config(exp.run, exp.config, gym_env=gym_env)
    except SpecError as err:
        failed = err.under(where)
        translated = Translated(config={}, warnings=())
    config = dict(translated.config)
    config.pop("env", None)  # the EnvRef carries it
    warnings.extend(f"{where}.{w}" for w in translated.warnings)
    if exp.resources is not None and exp.resources.memory:
        raise SpecError(
            "an RLlib algorithm sizes its own processes; memory has no RLlib setting to go to",
            path=f"{where}.resources_per_trial.memory",
            suggestion="remove memory",
        )
    # The spec's simulations and resources are the algorithm's env runners and main process.
    for spec_key, value, key in (
        ("simulations", exp.simulations, "num_env_runners"),
        (
            "simulations",
            exp.simulations is not None and exp.cpu_per_simulation,
            "num_cpus_per_env_runner",
        ),
        ("resources_per_trial", exp.resources and exp.resources.cpu, "num_cpus_for_main_process"),
        ("resources_per_trial", exp.resources and exp.resources.gpu, "num_gpus_per_learner"),
    ):
        if value is None or value is False:
            continue
        if key in config and config[key] != value:
            if failed is not None:
                continue
            raise SpecError(
                f"{spec_key} sets {key} to {value:g}, but config.{key} is {config[key]}",
                path=f"{where}.{spec_key}",
                suggestion="set only one of them",
            )
        config[key] = value

    def metric(key: str, at: str) -> str:
        new, warning = translate_metric(key, f"{where}.{at}")
        if warning:
            warnings.append(warning)
        return new

    stop = {metric(k, f"stop.{k}"): v for k, v in exp.stop.items()}
    expect = exp.expect.model_copy(
        update={"metrics": {metric(k, f"expect.{k}"): v for k, v in exp.expect.metrics.items()}}
    )
    scheduler = exp.scheduler
    time_attr = getattr(scheduler, "time_attr", None)
    if time_attr:
        scheduler = scheduler.model_copy(
            update={"time_attr": metric(time_attr, "scheduler.time_attr")}
        )
    checkpoint = exp.checkpoint
    if checkpoint.checkpoint_score_attribute:
        checkpoint = checkpoint.model_copy(
            update={
                "checkpoint_score_attribute": metric(
                    checkpoint.checkpoint_score_attribute,
                    "checkpoint_config.checkpoint_score_attribute",
                )
            }
        )
    translated_exp = replace(
        exp,
        config=config if failed is None else exp.config,
        stop=stop,
        expect=expect,
        metric=metric(exp.metric, "metric") if exp.metric else None,
        scheduler=scheduler,
        checkpoint=checkpoint,
    )
    return translated_exp, failed


# Spec keys that set an RLlib resource key, legacy names included, for messages.
_RESOURCE_SPELLINGS = {
    "num_env_runners": ("num_env_runners", "num_workers", "num_rollout_workers"),
    "num_learners": ("num_learners", "num_learner_workers"),
    "evaluation_num_env_runners": ("evaluation_num_env_runners", "evaluation_num_workers"),
}


def trial_bundles(
    exp: Experiment, written: Experiment, gym_id: str | None, cpus: float, rllib_checks: bool
) -> tuple[dict[str, float], ...]:
    """The trial's bundles as RLlib sizes them; a trial that cannot fit is refused naming the
    keys the user wrote and what would fit."""
    config = dict(exp.config)
    if gym_id is not None:
        config["env"] = gym_id
    try:
        res = resources(exp.run, config)
        bundles = check_with_rllib(exp.run, config) if rllib_checks else res.bundles
    except SpecError as err:
        raise err.under(exp.key_path) from None
    if res.cpus <= cpus:
        return bundles

    def spelled(key: str, default: Any) -> tuple[str, str]:
        """The key path the user wrote for `key` (or the new name), and how it was set."""
        if key == "num_env_runners" and written.simulations is not None:
            return f"{exp.key_path}.simulations", f"simulations: {written.simulations}"
        given = written.config if isinstance(written.config, dict) else {}
        for name in _RESOURCE_SPELLINGS[key]:
            if name in given:
                return f"{exp.key_path}.config.{name}", f"{name}: {given[name]}"
        return f"{exp.key_path}.config.{key}", f"RLlib's default {key}: {default}"

    parts = [f"{res.main:g} for the main process"]
    if res.env_runners:
        parts.append(f"{res.env_runners} env runners x {res.cpus_per_env_runner:g}")
    if res.eval_env_runners:
        parts.append(f"{res.eval_env_runners} evaluation env runners")
    if res.learners:
        parts.append(f"{res.learners} learners x {res.cpus_per_learner:g}")
    runners_path, runners_how = spelled("num_env_runners", res.env_runners)
    learners_path, learners_how = spelled("num_learners", res.learners)
    runners_key = runners_path.rsplit(".", 1)[-1]
    learners_key = learners_path.rsplit(".", 1)[-1]
    per_runner = res.cpus_per_env_runner
    fixed = res.cpus - res.env_runners * per_runner
    # Without learners the main process trains: it needs max(its CPUs, a learner's).
    fixed_alone = fixed - res.learners * res.cpus_per_learner
    fixed_alone = max(fixed_alone, fixed_alone - res.main + max(res.main, res.cpus_per_learner))

    def most_runners(room: float) -> int:
        return int(room // per_runner) if per_runner else res.env_runners

    def runners_hint(k: int) -> str:
        return f"{runners_key}: {k}" if runners_key != "simulations" else f"simulations: {k}"

    if res.env_runners and most_runners(cpus - fixed) >= 1:
        path, how = runners_path, runners_how
        hint = f"set {runners_hint(most_runners(cpus - fixed))} to fit"
    elif res.learners and most_runners(cpus - fixed_alone) >= 1:
        path, how = learners_path, learners_how
        k = min(res.env_runners or 1, most_runners(cpus - fixed_alone))
        hint = f"set {learners_key}: 0 (the main process then trains) and {runners_hint(k)} to fit"
    elif res.env_runners and fixed <= cpus:
        path, how = runners_path, runners_how
        hint = f"set {runners_hint(0)} to fit (the main process then samples)"
    elif res.learners and fixed_alone <= cpus:
        path, how = learners_path, learners_how
        hint = f"set {learners_key}: 0 (the main process then trains) to fit"
    elif res.eval_env_runners:
        path, how = f"{exp.key_path}.config", "evaluation env runners"
        hint = "set evaluation_num_env_runners: 0 to fit"
    else:
        path, how = f"{exp.key_path}.config", "its main process"
        hint = "lower num_cpus_for_main_process or num_cpus_per_learner"
    raise SpecError(
        f"one {exp.run} trial needs {res.cpus:g} CPUs ({' + '.join(parts)}; {how}) but the "
        f"machine has {cpus:g}",
        path=path,
        suggestion=hint,
    )


def shown_knobs(name: str) -> list[tuple[str, Any]]:
    """The main knobs of an algorithm with their defaults, for `tune_app list`."""
    defaults = algorithm_keys(name).defaults
    return [(k, defaults[k]) for k in SHOWN_KNOBS if k in defaults]


if __name__ == "__main__":  # python -m tune_app.rllib: refresh the snapshot after an upgrade
    write_keys_snapshot()
    print(f"wrote {KEYS_FILE}")
