"""The per-key handlers of legacy RLlib keys that need more than a rename, and the state of a
translation they write to (`Translation.put`: one warning per change, a clash named).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tune_app.errors import SpecError, did_you_mean
from tune_app.ray_internals import TESTED_RAY
from tune_app.rllib.keys import AlgorithmKeys
from tune_app.rllib.tables import (
    EPSILON_GREEDY,
    EPSILON_KEYS,
    MODEL_NO_OPS,
    RENAMED,
    RENAMED_MODEL_KEYS,
    REPLAY_BUFFERS,
    REPLAY_KEYS,
    REPLAY_NO_OPS,
    SAC_OPTIMIZATION,
    STOCHASTIC_SAMPLING,
)
from tune_app.space import Domain


@dataclass
class Translation:
    """The state of one config's translation: what is written, warned and wrong so far."""

    name: str
    keys: AlgorithmKeys
    gym_env: bool
    out: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # new key path -> the key written

    def put(self, target: str, value: Any, path: str, note: str | None = None) -> None:
        """Set `target` (dotted: a sub-key) from the key at `path`, warning unless it is new;
        SpecError where another key set it (the mapping holding it too, set whole)."""
        top, _, sub = target.partition(".")
        written = self.sources.get(target)
        if written is None and sub and top in self.sources:  # `model_config: {...}`, then model
            whole = self.out[top]
            if not isinstance(whole, dict):  # a search over the mapping: it would be dropped
                written = self.sources[top]
            elif sub in whole:
                written = f"{self.sources[top]}.{sub}"
        if sub:
            value = {sub: value}
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
        if isinstance(self.out.get(top), dict) and isinstance(value, dict):
            value = {**self.out[top], **value}  # another sub-key of the same key
        self.out[top] = value


def no_key(t: Translation, key: str, path: str) -> SpecError:
    """The error for a key the algorithm does not have, with the nearest name it has."""
    known = t.keys.defaults
    return SpecError(
        f"{t.name} has no config key '{key}'",
        path=path,
        allowed=f"the {len(known)} keys `python -m tune_app list {t.name}` prints",
        suggestion=did_you_mean(key, known)
        or did_you_mean(key, RENAMED)
        or "RLlib would silently ignore it",
    )


def _mapping(value: Any, path: str, new: str | None = None) -> dict[str, Any]:
    """A legacy key's mapping; a search over it whole is written under its `new` key, if any."""
    if isinstance(value, Domain):
        key = path.rpartition(".")[2]
        raise SpecError(
            f"a search over the whole legacy '{key}' mapping ({value!r}) is not translated",
            path=path,
            suggestion=f"search the new key whole: {new}: {{{value.kind}: [...]}}"
            if new
            else f"search its keys one by one: {key}: {{<key>: {{{value.kind}: [...]}}}}",
        )
    if not isinstance(value, dict):
        raise SpecError(f"must be a mapping, got {value!r}", path=path)
    return value


def _framework(t: Translation, value: Any, path: str) -> None:
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


def _use_pytorch(t: Translation, value: Any, path: str) -> None:
    note = "legacy RLlib key, read as framework: torch"
    if not value:
        note += " (RLlib's new stack is torch only)"
    t.put("framework", "torch", path, note)


def stack_flag(t: Translation, key: str, value: Any, path: str) -> None:
    """A flag choosing RLlib's API stack: True is a no-op, False cannot be honoured."""
    if value is True:
        t.warnings.append(
            f"{path}: asks for RLlib's new API stack, which is the one the app runs; no effect"
        )
        return
    raise SpecError(
        f"'{key}: {value!r}' asks for RLlib's old API stack, which RLlib {TESTED_RAY} and this "
        "app no longer run",
        path=path,
        suggestion="remove it; the config then runs on the new API stack",
    )


def _observation_filter(t: Translation, value: Any, path: str) -> None:
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
        agent_spaces = _agent_observation_spaces(env)
        multi_agent = agent_spaces is not None
        if agent_spaces is None:  # one agent
            agent_spaces = [_observation_space(env, spaces)]
        if any(not isinstance(s, gym.spaces.Box) and _flattens(s) for s in agent_spaces):
            connectors.append(FlattenObservations(multi_agent=multi_agent))
        if self.mean_std_clip is not None:
            connectors.append(
                MeanStdFilter(multi_agent=multi_agent, clip_by_value=self.mean_std_clip)
            )
        return connectors

    def __repr__(self) -> str:
        return "MeanStdFilter" if self.mean_std_clip is not None else "FlattenObservations"


@dataclass(frozen=True)
class ConnectorClass:
    """A ConnectorV2 class named at `env_to_module_connector` or `module_to_env_connector`, as
    the builder RLlib calls there: a new piece on each env runner. RLlib calls the key's value
    with (env, spaces[, device]); the class itself, called so, would take the env for its
    observation space. The pipeline sets the piece's input spaces; on a multi-agent env a piece
    that takes `multi_agent` works per agent, as ObservationConnectors' do."""

    cls: Any  # a ConnectorV2 subclass, or RLlib's functools.partial of one

    def __call__(self, env: Any = None, spaces: Any = None, device: Any = None) -> Any:
        if _agent_observation_spaces(env) is not None and "multi_agent" in _parameters(self.cls):
            return self.cls(multi_agent=True)
        return self.cls()

    def __repr__(self) -> str:
        return str(getattr(getattr(self.cls, "func", self.cls), "__name__", self.cls))


def _parameters(cls: Any) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return {}


def required_arguments(cls: Any) -> list[str]:
    """The arguments a connector class needs beyond its input spaces (which the pipeline sets):
    `ConnectorClass` makes it with none."""
    spaces = ("input_observation_space", "input_action_space")
    return [
        name
        for name, p in _parameters(cls).items()
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and name not in spaces
    ]


def _flattens(space: Any) -> bool:
    """Whether FlattenObservations takes `space`: Box, Discrete and MultiDiscrete leaves in any
    Tuple or Dict (not Text, Graph or Sequence, whose RLlib error is then left to show)."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Dict):
        return all(_flattens(s) for s in space.spaces.values())
    if isinstance(space, gym.spaces.Tuple):
        return all(_flattens(s) for s in space.spaces)
    return isinstance(space, gym.spaces.Box | gym.spaces.Discrete | gym.spaces.MultiDiscrete)


def _agent_observation_spaces(env: Any) -> list[Any] | None:
    """Each agent's observation space where `env` is a multi-agent env (RLlib's env runner
    passes its vector of them), else None: the connectors then work per agent."""
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
    from ray.rllib.env.vector.vector_multi_agent_env import VectorMultiAgentEnv

    if isinstance(env, VectorMultiAgentEnv):
        return list((env.single_observation_spaces or {}).values())
    if isinstance(getattr(env, "unwrapped", env), MultiAgentEnv):
        return list((getattr(env, "unwrapped", env).observation_spaces or {}).values())
    return None


def _observation_space(env: Any, spaces: Any) -> Any:
    """One env's observation space, as RLlib's build_env_to_module_connector finds it."""
    if env is not None:
        return getattr(env, "single_observation_space", getattr(env, "observation_space", None))
    if isinstance(spaces, dict) and "__env_single__" in spaces:
        return spaces["__env_single__"][0]
    return None


def _exploration_config(t: Translation, value: Any, path: str) -> None:
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


def _optimization(t: Translation, value: Any, path: str) -> None:
    if t.name != "SAC":
        raise no_key(t, "optimization", path)
    value = _mapping(value, path)
    _unknown_sub_keys(value, SAC_OPTIMIZATION, path)
    for old, new in SAC_OPTIMIZATION.items():
        if old in value:
            t.put(new, value[old], f"{path}.{old}", f"legacy SAC key, read as {new}")


def _sac_model_config(t: Translation, value: Any, path: str) -> None:
    if t.name != "SAC":
        raise no_key(t, path.rsplit(".", 1)[-1], path)
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


def _replay_buffer_config(t: Translation, value: Any, path: str) -> None:
    if "replay_buffer_config" not in t.keys.defaults:
        raise no_key(t, "replay_buffer_config", path)
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


def _prioritized_replay(t: Translation, value: Any, path: str) -> None:
    if "replay_buffer_config" not in t.keys.defaults:
        raise no_key(t, "prioritized_replay", path)
    new = "PrioritizedEpisodeReplayBuffer" if value else "EpisodeReplayBuffer"
    t.put(
        "replay_buffer_config.type",
        new,
        path,
        f"legacy RLlib key, read as replay_buffer_config.type: {new}",
    )


def _horizon(t: Translation, value: Any, path: str) -> None:
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


def _model(t: Translation, value: Any, path: str) -> None:
    """An old `model:` dict as a new-stack `model_config`, refusing sub-keys it would ignore."""
    value = _mapping(value, path, "model_config")
    t.warnings.append(f"{path}: legacy RLlib key, read as model_config")
    out, written = {}, {}
    for sub, v in value.items():
        if sub in MODEL_NO_OPS and v == MODEL_NO_OPS[sub]:
            continue
        new = RENAMED_MODEL_KEYS.get(sub, sub)
        if new != sub:
            t.warnings.append(f"{path}.{sub}: legacy model key, read as model_config.{new}")
        out[new], written[new] = v, sub
    for new, v in check_model_keys(out, t.keys, path).items():
        t.put(f"model_config.{new}", v, f"{path}.{written[new]}")


def check_model_keys(value: Any, keys: AlgorithmKeys, path: str) -> Any:
    """`value` as a model_config, refusing a sub-key RLlib's default model config lacks."""
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


# Legacy keys that need more than a rename -> their handler.
HANDLERS: dict[str, Callable[[Translation, Any, str], None]] = {
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
