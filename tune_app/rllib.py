"""RLlib algorithms by name: config keys checked, legacy spellings translated, bundles computed.

RLlib's `AlgorithmConfig.update_from_dict` accepts any key, maps only some legacy ones and
silently ignores the rest; this module makes each of those cases a translation with a warning or
an error, before Ray starts. RLlib itself (seconds to import) is imported only when a spec or
`list` needs it.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import logging
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from tune_app.errors import SpecError, did_you_mean
from tune_app.registry import AUTO_METRICS
from tune_app.space import Domain, representative

# Algorithm name -> module of its Algorithm class (the new API stack's torch algorithms).
ALGORITHMS = {
    "PPO": "ray.rllib.algorithms.ppo",
    "APPO": "ray.rllib.algorithms.appo",
    "IMPALA": "ray.rllib.algorithms.impala",
    "DQN": "ray.rllib.algorithms.dqn",
    "SAC": "ray.rllib.algorithms.sac",
}
METRIC, MODE = "env_runners/episode_return_mean", "max"

# Result keys of the old API stack and what the new stack reports instead.
LEGACY_METRICS = {
    "episode_reward_mean": "env_runners/episode_return_mean",
    "episode_reward_max": "env_runners/episode_return_max",
    "episode_reward_min": "env_runners/episode_return_min",
    "episode_len_mean": "env_runners/episode_len_mean",
    "episodes_this_iter": "env_runners/num_episodes",
    "episodes_total": "env_runners/num_episodes_lifetime",
    "timesteps_total": "num_env_steps_sampled_lifetime",
    "num_env_steps_sampled": "num_env_steps_sampled_lifetime",
    "num_env_steps_trained": "learners/__all_modules__/num_env_steps_trained_lifetime",
    "evaluation/episode_reward_mean": "evaluation/env_runners/episode_return_mean",
    "evaluation/episode_reward_max": "evaluation/env_runners/episode_return_max",
    "evaluation/episode_reward_min": "evaluation/env_runners/episode_return_min",
}
for _old, _new in list(LEGACY_METRICS.items()):
    if _old.startswith("episode_"):
        LEGACY_METRICS[f"sampler_results/{_old}"] = _new
        LEGACY_METRICS[f"env_runners/{_old}"] = _new
        LEGACY_METRICS[f"evaluation/sampler_results/{_old}"] = f"evaluation/{_new}"

# Top-level result groups of the new stack; keys inside them appear only once there is data
# (episode returns after the first finished episode, evaluation/ every evaluation_interval).
RESULT_GROUPS = ("env_runners/", "evaluation/", "learners/", "timers/", "fault_tolerance/")
RESULT_KEYS = (
    *AUTO_METRICS,
    "num_env_steps_sampled_lifetime",
    "num_training_step_calls_per_iteration",
)

# Legacy config key -> its new-stack name. The value is carried over unchanged.
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
    "model": "model_config",
}

# Old `model:` sub-keys whose new-stack name differs.
RENAMED_MODEL_KEYS = {
    "post_fcnet_hiddens": "head_fcnet_hiddens",
    "post_fcnet_activation": "head_fcnet_activation",
}

# Keys the new stack ignores although RLlib does not mark them, with what to do instead.
IGNORED = {
    "exploration_config": "the new stack explores through the policy: for DQN set epsilon: "
    "[[0, 1.0], [10000, 0.05]], for PPO remove it",
    "horizon": "set max_episode_steps on the env (gymnasium's TimeLimit) instead",
    "soft_horizon": "set max_episode_steps on the env (gymnasium's TimeLimit) instead",
    "no_done_at_end": "gymnasium's terminated/truncated flags replace it; remove it",
    "observation_filter": "the new stack filters observations with connectors; remove it",
    "buffer_size": "set replay_buffer_config: {capacity: N} instead",
    "_enable_new_api_stack": "only RLlib's new API stack is supported; remove it",
    "enable_rl_module_and_learner": "only RLlib's new API stack is supported; remove it",
    "enable_env_runner_and_connector_v2": "only RLlib's new API stack is supported; remove it",
    "optimizer": "the new stack's Learner builds the optimizer; set lr (and grad_clip) instead",
}

# RLlib marks `train_batch_size` as old-stack, yet the new stack reads it when
# `train_batch_size_per_learner` is not set, so it is honoured, not ignored.
HONOURED = {"train_batch_size"}

# Keys that size the trial's placement group; a search over them would change bundles per trial.
RESOURCE_KEYS = (
    "num_env_runners",
    "num_cpus_per_env_runner",
    "num_gpus_per_env_runner",
    "num_cpus_for_main_process",
    "num_learners",
    "num_cpus_per_learner",
    "num_gpus_per_learner",
)

# Config overrides for --smoke: one env runner, tiny batches, where the algorithm has the key.
SMOKE = {
    "num_env_runners": 1,
    "train_batch_size": 256,
    "train_batch_size_per_learner": 256,
    "minibatch_size": 64,
    "num_epochs": 1,
    "num_steps_sampled_before_learning_starts": 100,
    "min_sample_timesteps_per_iteration": 100,
}

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
)


def is_algorithm(name: str) -> bool:
    """Whether `name` is an RLlib algorithm this app runs (no import)."""
    return name in ALGORITHMS


def algorithm_class(name: str) -> type:
    """The Algorithm class named `name` (imports RLlib)."""
    # RLlib logs a notice about its new API stack for every config it builds; the plan says it.
    logging.getLogger("ray.rllib").setLevel(logging.ERROR)
    return getattr(importlib.import_module(ALGORITHMS[name]), name)


@dataclass(frozen=True)
class AlgorithmKeys:
    """What an algorithm's config accepts, and the keys RLlib would silently ignore."""

    name: str
    defaults: dict[str, Any]  # every accepted key with its default
    ignored: dict[str, str]  # key -> why it is ignored, what to use instead
    model_keys: tuple[str, ...]  # accepted sub-keys of model_config


@cache
def algorithm_keys(name: str) -> AlgorithmKeys:
    """Read an algorithm's accepted config keys off its AlgorithmConfig class."""
    config_cls = type(algorithm_class(name).get_default_config())
    defaults = {k: v for k, v in config_cls().to_dict().items() if not k.startswith("_")}
    defaults["train_batch_size_per_learner"] = None
    defaults["model_config"] = {}
    ignored = {k: "RLlib's new API stack ignores it" for k in _old_stack_keys(config_cls)}
    ignored.update(IGNORED)
    for key in [*HONOURED, *RENAMED]:
        ignored.pop(key, None)
    for key in [*ignored, *RENAMED]:
        defaults.pop(key, None)
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    model_keys = tuple(f.name for f in dataclasses.fields(DefaultModelConfig))
    return AlgorithmKeys(name=name, defaults=defaults, ignored=ignored, model_keys=model_keys)


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


@dataclass(frozen=True)
class Translated:
    """An RLlib experiment's config and names after translation, with one warning per change."""

    config: dict[str, Any]
    warnings: tuple[str, ...]


def translate_config(name: str, config: Any) -> Translated:
    """Check every config key against the algorithm's config; translate legacy spellings.

    Raises SpecError (path relative to the experiment) for an unknown key, an ignored one, or a
    legacy key given together with its new name.
    """
    if not isinstance(config, dict):
        raise SpecError(f"an RLlib config must be a mapping, got {config!r}", path="config")
    keys = algorithm_keys(name)
    out: dict[str, Any] = {}
    warnings: list[str] = []
    for key, value in config.items():
        path = f"config.{key}"
        if key in RENAMED:
            new = RENAMED[key]
            target = new.split(".")[0]
            if target in config:
                raise SpecError(
                    f"legacy key '{key}' and its new name '{target}' are both set",
                    path=path,
                    suggestion=f"keep only {target}",
                )
            if key == "model":
                value = _model_config(value, keys, path, warnings)
            elif "." in new:
                value = {new.split(".")[1]: value}
            if key == "evaluation_num_episodes":
                out.setdefault("evaluation_duration_unit", "episodes")
            warnings.append(f"{path}: legacy RLlib key, read as {new}")
            _merge(out, target, value)
            continue
        if key == "framework":
            value = _framework(value, path, warnings)
        elif key in keys.ignored:
            raise SpecError(
                f"'{key}' would be silently ignored by {name} on RLlib's new API stack",
                path=path,
                suggestion=keys.ignored[key],
            )
        elif key == "model_config":
            value = _check_model_keys(value, keys, path)
        elif key not in keys.defaults:
            raise SpecError(
                f"{name} has no config key '{key}'",
                path=path,
                allowed=f"the {len(keys.defaults)} keys `tune_app list {name}` prints",
                suggestion=did_you_mean(key, keys.defaults)
                or did_you_mean(key, RENAMED)
                or "RLlib would silently ignore it",
            )
        _merge(out, key, value)
    return Translated(config=out, warnings=tuple(warnings))


def _merge(out: dict[str, Any], key: str, value: Any) -> None:
    if key in out and isinstance(out[key], dict) and isinstance(value, dict):
        out[key] = {**out[key], **value}
    else:
        out[key] = value


def _framework(value: Any, path: str, warnings: list[str]) -> str:
    if value == "torch":
        return value
    if value in ("tf", "tf2", "tfe"):
        warnings.append(f"{path}: framework '{value}' read as torch (RLlib's new stack is torch)")
        return "torch"
    raise SpecError(
        f"framework {value!r} is not supported", path=path, allowed=("torch", "tf", "tf2")
    )


def _model_config(value: Any, keys: AlgorithmKeys, path: str, warnings: list[str]) -> Any:
    """An old `model:` dict as a new-stack `model_config`, refusing sub-keys it would ignore."""
    if not isinstance(value, dict):
        raise SpecError(f"model must be a mapping, got {value!r}", path=path)
    out = {}
    for sub, v in value.items():
        new = RENAMED_MODEL_KEYS.get(sub, sub)
        if new != sub:
            warnings.append(f"{path}.{sub}: legacy model key, read as model_config.{new}")
        out[new] = v
    return _check_model_keys(out, keys, path)


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


def translate_metric(key: str, where: str) -> tuple[str, str | None]:
    """A result key in the new stack's name, and a warning when it was a legacy name."""
    new = LEGACY_METRICS.get(key)
    if new is None:
        return key, None
    return new, f"{where}: legacy RLlib metric '{key}', read as '{new}'"


def check_metric(key: str, where: str, name: str) -> None:
    """Refuse a top-level result key RLlib never reports; grouped keys are checked at run time."""
    if key in RESULT_KEYS or key.startswith(RESULT_GROUPS) or "/" in key:
        return
    known = [*RESULT_KEYS, METRIC, *LEGACY_METRICS]
    raise SpecError(
        f"'{key}' is not a result key of {name}",
        path=where,
        allowed=(*RESULT_KEYS, "env_runners/...", "learners/...", "evaluation/..."),
        suggestion=did_you_mean(key, known)
        or did_you_mean(f"env_runners/{key}", known)
        or f"episode returns are {METRIC}",
    )


def algorithm_config(name: str, config: dict[str, Any]) -> Any:
    """An AlgorithmConfig of `name` from a translated, concrete config dict (as the trial will)."""
    cls = algorithm_class(name)
    return cls.get_default_config().update_from_dict(to_rllib(config))


def to_rllib(config: dict[str, Any]) -> dict[str, Any]:
    """Our key names to the attribute names `update_from_dict` sets."""
    out = dict(config)
    if "model_config" in out:
        out["_model_config"] = out.pop("model_config")
    return out


def bundles(name: str, config: dict[str, Any]) -> tuple[dict[str, float], ...]:
    """The trial's placement group as RLlib sizes it: main process (and learners), env runners.

    `config` may hold search domains; a representative point is checked by RLlib's own
    `validate`, so a config RLlib refuses is refused here, before Ray starts.
    """
    for key in RESOURCE_KEYS:
        if isinstance(config.get(key), Domain):
            raise SpecError(
                f"'{key}' sizes each trial's resources and cannot be searched",
                path=f"config.{key}",
                suggestion="write one experiment per value instead",
            )
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


def shown_knobs(name: str) -> list[tuple[str, Any]]:
    """The main knobs of an algorithm with their defaults, for `tune_app list`."""
    defaults = algorithm_keys(name).defaults
    return [(k, defaults[k]) for k in SHOWN_KNOBS if k in defaults]
