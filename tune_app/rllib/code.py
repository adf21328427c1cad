"""RLlib config keys whose values are code: named as `module:name` through `user_code`'s gate.

RLlib imports any dotted path at some keys (`callbacks`, a replay buffer's or an estimator's
`type`, `sample_collector`, a dotted `env`) and calls what others hold (connectors, the policy
mapping, `callbacks_on_*`). A spec names code there only as `module:name`, checked for its role
before Ray starts (`check_code`) and imported on the driver (`load_code`), so RLlib is handed
the object, never a path to import: `callbacks: os.abort` is refused, not called in the trial.
Sub-configs (`evaluation_config`, per-module overrides) are walked the same way. A connector
class at an env runner's key is handed over as the builder RLlib calls there (`ConnectorClass`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from tune_app.errors import Collector, SpecError
from tune_app.rllib.handlers import ConnectorClass, required_arguments
from tune_app.space import Domain
from tune_app.user_code import Role, check

_GROUP = "tune_app.rllib"


def _classes(noun: str, base: str) -> Role:
    name = base.rpartition(":")[2]
    return Role(
        noun=noun, allowed=f"a subclass of {name}", base=base, functions=False, group=_GROUP
    )


_FUNCTION = Role(
    noun="a function",
    allowed="a function RLlib calls with its keyword arguments",
    base=None,
    functions=True,
    group=_GROUP,
    keywords=True,
)
_CALLBACKS = _classes("an RLlib callbacks class", "ray.rllib.callbacks.callbacks:RLlibCallback")
_CONNECTOR_BASE = "ray.rllib.connectors.connector_v2:ConnectorV2"
# At the env runners' keys RLlib calls the value with (env, spaces[, device]): a class named
# there is made per env runner by `ConnectorClass`, as a function of RLlib's examples does.
_ENV_CONNECTOR = Role(
    noun="a connector builder",
    allowed="a function making connectors from (env, spaces, device), or a ConnectorV2 class "
    "(RLlib's own, such as ray.rllib.connectors.env_to_module:FlattenObservations, or yours), "
    "made on each env runner",
    base=_CONNECTOR_BASE,
    functions=True,
    group=_GROUP,
    max_required=3,
)
# RLlib calls a learner connector's value with (input_observation_space, input_action_space):
# a ConnectorV2 class is such a callable as it is.
_LEARNER_CONNECTOR = Role(
    noun="a connector builder",
    allowed="a function making connectors from (observation space, action space), or a "
    "ConnectorV2 class",
    base=_CONNECTOR_BASE,
    functions=True,
    group=_GROUP,
    max_required=2,
)
_REPLAY_BUFFER = _classes(
    "a replay buffer", "ray.rllib.utils.replay_buffers.base:ReplayBufferInterface"
)

# Key -> what its value must be. Keys RLlib imports from a dotted path or calls.
CODE_KEYS: dict[str, Role] = {
    "callbacks": _CALLBACKS,
    **{
        f"callbacks_on_{event}": _FUNCTION
        for event in (
            "algorithm_init",
            "checkpoint_loaded",
            "env_runners_recreated",
            "environment_created",
            "episode_created",
            "episode_end",
            "episode_start",
            "episode_step",
            "evaluate_end",
            "evaluate_offline_end",
            "evaluate_offline_start",
            "evaluate_start",
            "offline_eval_runners_recreated",
            "sample_end",
            "train_result",
        )
    },
    "env_to_module_connector": _ENV_CONNECTOR,
    "module_to_env_connector": _ENV_CONNECTOR,
    "learner_connector": _LEARNER_CONNECTOR,
    "policy_mapping_fn": _FUNCTION,
    "offline_loss_for_module_fn": _FUNCTION,
    "env_runner_cls": _classes("an env runner class", "ray.rllib.env.env_runner:EnvRunner"),
    "offline_data_class": _classes(
        "an offline data class", "ray.rllib.offline.offline_data:OfflineData"
    ),
    "prelearner_class": _classes(
        "a prelearner class", "ray.rllib.offline.offline_prelearner:OfflinePreLearner"
    ),
    "prelearner_buffer_class": _REPLAY_BUFFER,
    "offline_eval_runner_class": _classes(
        "an offline evaluation runner class",
        "ray.rllib.offline.offline_evaluation_runner:OfflineEvaluationRunner",
    ),
    "sample_collector": _classes(
        "a sample collector", "ray.rllib.evaluation.collectors.sample_collector:SampleCollector"
    ),
}
# Keys holding a mapping whose `type` RLlib imports when dotted, or finds by its own bare name.
TYPE_KEYS: dict[str, Role] = {
    "replay_buffer_config": _REPLAY_BUFFER,
    "exploration_config": _classes(
        "an exploration class", "ray.rllib.utils.exploration.exploration:Exploration"
    ),
}
# Keys holding name -> mapping, each with such a `type`.
TYPE_MAP_KEYS: dict[str, Role] = {
    "off_policy_estimation_methods": _classes(
        "an off-policy estimator", "ray.rllib.offline.offline_evaluator:OfflineEvaluator"
    ),
}
# Keys whose value RLlib reads as a config of its own (per module: name -> config).
SUB_CONFIG_KEYS = ("evaluation_config",)
PER_MODULE_KEYS = ("algorithm_config_overrides_per_module",)
# RLlib's listable keys: a list of callbacks classes, or of functions per event.
_LISTS = ("callbacks", *(k for k in CODE_KEYS if k.startswith("callbacks_on_")))


# What a YAML spec can hold: anything else at a code key was put there by the app's translation.
_SPEC_VALUES = (str, int, float, bool, list, dict, Domain)
_DROP = object()  # what `without_code` puts in place of a code value: the key is removed
Visit = Callable[[Any, Role, str], Any]


def check_code(config: dict[str, Any], search_path: tuple[str, ...]) -> None:
    """Check every code value of a translated RLlib config (paths relative to the experiment),
    all problems at once; imports no user code."""
    errors = Collector()

    def visit(value: Any, role: Role, path: str) -> Any:
        with errors.check():
            if isinstance(value, Domain):
                raise SpecError(
                    "code cannot be searched",
                    path=path,
                    suggestion="one experiment per value, each naming its module:name",
                )
            for item, where in _each(value, path):
                check(item, role, search_path, where)
        return value

    _walk(config, "config", visit)
    errors.raise_any()


def load_code(config: dict[str, Any], search_path: tuple[str, ...]) -> dict[str, Any]:
    """The config with every `module:name` at a code key replaced by the object (driver only)."""

    def visit(value: Any, role: Role, path: str) -> Any:
        loaded = [
            _as_rllib_takes(check(item, role, search_path, where).load(), role, where)
            for item, where in _each(value, path)
        ]
        return loaded if isinstance(value, list) else loaded[0]

    out: dict[str, Any] = _walk(config, "config", visit)
    return out


def _as_rllib_takes(obj: Any, role: Role, where: str) -> Any:
    """The loaded object as RLlib takes it at its key: a connector class at an env runner's key
    as the builder RLlib calls (`ConnectorClass`), made with no arguments."""
    cls = obj.func if isinstance(obj, functools.partial) else obj
    if role is not _ENV_CONNECTOR or not inspect.isclass(cls):
        return obj
    needed = required_arguments(obj)
    if needed:
        raise SpecError(
            f"connector class {cls.__name__} needs {', '.join(needed)}, and a spec names it "
            "without arguments",
            path=where,
            suggestion=f"write a function def make(env, spaces, device): return "
            f"{cls.__name__}(...) in a module beside the spec, and name it module:make",
        )
    return ConnectorClass(obj)


def code_modules(config: dict[str, Any]) -> tuple[str, ...]:
    """The modules a config's code values name, in order, once each."""
    found: list[str] = []

    def visit(value: Any, role: Role, path: str) -> Any:
        found.extend(
            item.partition(":")[0] for item, _ in _each(value, path) if isinstance(item, str)
        )
        return value

    _walk(config, "config", visit)
    return tuple(dict.fromkeys(m for m in found if m))


def without_code(config: dict[str, Any]) -> dict[str, Any]:
    """The config without its code values, for RLlib's own checks before Ray starts (which
    would import a dotted path, and cannot read module:name)."""
    out: dict[str, Any] = _walk(config, "config", lambda value, role, path: _DROP)
    return out


def _each(value: Any, path: str) -> list[tuple[Any, str]]:
    """The references a code value holds, each with its key path: a list where RLlib takes one."""
    if isinstance(value, list) and path.rpartition(".")[2] in _LISTS:
        return [(item, f"{path}[{i}]") for i, item in enumerate(value)]
    return [(value, path)]


def _walk(config: Any, where: str, visit: Visit) -> Any:
    """A copy of `config` with `visit`'s value in place of each code value set in it."""
    if not isinstance(config, dict):
        return config
    out = {}
    for key, value in config.items():
        new = _walk_key(key, value, f"{where}.{key}", visit)
        if new is not _DROP:
            out[key] = new
    return out


def _walk_key(key: str, value: Any, path: str, visit: Visit) -> Any:
    if value is None or not isinstance(value, _SPEC_VALUES):
        return value  # unset, or an object the app's own translation put there
    if key in CODE_KEYS:
        return visit(value, CODE_KEYS[key], path)
    if key in TYPE_KEYS:
        return _typed(value, TYPE_KEYS[key], path, visit)
    if key in TYPE_MAP_KEYS and isinstance(value, dict):
        role = TYPE_MAP_KEYS[key]
        return {n: _typed(m, role, f"{path}.{n}", visit) for n, m in value.items()}
    if key in SUB_CONFIG_KEYS:
        return _walk(value, path, visit)
    if key in PER_MODULE_KEYS and isinstance(value, dict):
        return {m: _walk(sub, f"{path}.{m}", visit) for m, sub in value.items()}
    return value


def _typed(value: Any, role: Role, path: str, visit: Visit) -> Any:
    """A mapping whose `type` names a class: RLlib's own by its bare name, or code."""
    kind = value.get("type") if isinstance(value, dict) else None
    if kind is None or (isinstance(kind, str) and "." not in kind and ":" not in kind):
        return value
    out = dict(value)
    new = visit(kind, role, f"{path}.type")
    if new is _DROP:
        del out["type"]
    else:
        out["type"] = new
    return out
