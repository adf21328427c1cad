"""Legacy RLlib configs and metric names carried to the new API stack: every key checked against
the algorithm's snapshot, each change one warning, each refusal with its reason.

RLlib's `AlgorithmConfig.update_from_dict` accepts any key, maps only some legacy ones and
silently ignores the rest; here each legacy key becomes a translation with one warning, or an
error saying why nothing on the new stack does what it asked. Renames and no-ops are tables
(`tables`); keys that need more are `handlers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tune_app.errors import Collector, SpecError, did_you_mean
from tune_app.ray_internals import TESTED_RAY
from tune_app.rllib.code import SUB_CONFIG_KEYS
from tune_app.rllib.handlers import (
    HANDLERS,
    Translation,
    check_model_keys,
    no_key,
    stack_flag,
)
from tune_app.rllib.keys import algorithm_keys
from tune_app.rllib.metrics import RETURN_MEAN
from tune_app.rllib.tables import (
    EXTRA_KEYS,
    LEGACY_METRICS,
    METRIC,
    NO_OP_DEFAULTS,
    NO_OPS,
    RENAMED,
    RENAMED_FOR,
    RESULT_GROUPS,
    RESULT_KEYS,
    SMOOTHED_NOTE,
    STACK_FLAGS,
)
from tune_app.rllib.value_types import check_value
from tune_app.rundir.allowed import local_store, store_problem
from tune_app.space import LIST_KINDS, Domain, whole_number


@dataclass(frozen=True)
class Translated:
    """An RLlib experiment's config after translation, with one warning per change, and where
    the spec wrote each key read under a new name: config path as run -> as written."""

    config: dict[str, Any]
    warnings: tuple[str, ...]
    written: dict[str, str] = field(default_factory=dict)


def translate_config(name: str, config: Any, *, gym_env: bool = True) -> Translated:
    """Check every config key against the algorithm's config; carry legacy keys to the new stack.

    Raises SpecError (paths relative to the experiment), all problems at once, for an unknown
    key, a key the new stack would ignore, or a legacy key with no equivalent. `gym_env` says
    whether the env is a gymnasium id (a `horizon` becomes its max_episode_steps).
    """
    if not isinstance(config, dict):
        raise SpecError(f"an RLlib config must be a mapping, got {config!r}", path="config")
    t = Translation(name=name, keys=algorithm_keys(name), gym_env=gym_env)
    errors = Collector()
    # New-stack keys first, so that a legacy key setting the same thing is reported against it.
    for key in sorted(config, key=is_legacy):
        with errors.check():
            _translate_key(t, key, config[key], f"config.{key}")
    # Each value RLlib is given against the kinds it declares, at the key the spec wrote (a
    # legacy key's target may be a sub-key: model.use_lstm sets model_config.use_lstm).
    for target, at in t.sources.items():
        top, _, sub = target.partition(".")
        value = t.out.get(top)
        if sub:
            if not isinstance(value, dict):
                continue  # the mapping was set whole after it (a search over model_config)
            value = value.get(sub)
        with errors.check():
            check_value(name, t.keys, target, value, at)
    errors.raise_any()
    _check_n_step(t)
    _fragments_for_n_step(t)
    written = {new: at.removeprefix("config.") for new, at in t.sources.items()}
    moved = {new: at for new, at in written.items() if new != at}
    return Translated(config=t.out, warnings=tuple(t.warnings), written=moved)


def _check_n_step(t: Translation) -> None:
    """DQN's and SAC's n_step: a whole number of steps, or a [low, high] range drawn from per
    episode; RLlib 2.60 takes anything else and fails inside the trial."""
    n_step = t.out.get("n_step")
    if t.name not in ("DQN", "SAC") or n_step is None or isinstance(n_step, Domain):
        return
    pair = isinstance(n_step, list) and len(n_step) == 2 and all(map(whole_number, n_step))
    if (whole_number(n_step) and n_step >= 1) or (pair and 1 <= n_step[0] <= n_step[1]):
        return
    raise SpecError(
        f"n_step is {n_step!r}",
        path="config.n_step",
        allowed="a whole number >= 1, or [low, high] with 1 <= low <= high",
    )


def _fragments_for_n_step(t: Translation) -> None:
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
                f"RLlib {TESTED_RAY}'s DQN cannot check rollout_fragment_length {fragment} against "
                f"an n_step range {list(n_step)} (it fails comparing a number with the range)",
                path="config.rollout_fragment_length",
                suggestion=f"write rollout_fragment_length: auto (n_step's high end, {steps}), "
                "or one n_step",
            )
        t.out["rollout_fragment_length"] = "auto"
        if fragment < steps:
            t.warnings.append(
                f"config.rollout_fragment_length: {fragment} is shorter than n_step's high end "
                f"{steps}, which RLlib {TESTED_RAY} refuses; read as auto ({steps})"
            )
        return
    if fragment < steps:
        t.out["rollout_fragment_length"] = steps
        t.warnings.append(
            f"config.rollout_fragment_length: {fragment} is shorter than n_step {steps}, which "
            f"RLlib {TESTED_RAY} refuses; read as {steps}"
        )


def is_legacy(key: str) -> bool:
    """Whether `key` is an old-stack key the app translates (renamed, handled or a no-op)."""
    return key in RENAMED or key in HANDLERS or key in NO_OPS or key in NO_OP_DEFAULTS


def renamed_to(name: str, key: str) -> str | None:
    """The new-stack key (dotted: a sub-key) algorithm `name` reads the legacy `key` as, where
    that is a rename; else None."""
    if key in RENAMED_FOR:
        return RENAMED_FOR[key][1] if RENAMED_FOR[key][0] == name else None
    return RENAMED.get(key)


def _translate_key(t: Translation, key: str, value: Any, path: str) -> None:  # noqa: C901
    keys = t.keys
    _check_stores(key, value, path)
    if key in HANDLERS:
        HANDLERS[key](t, value, path)
    elif (new := renamed_to(t.name, key)) is not None:
        if key == "evaluation_num_episodes":
            t.out.setdefault("evaluation_duration_unit", "episodes")
        if new.startswith("replay_buffer_config") and "replay_buffer_config" not in keys.defaults:
            raise no_key(t, key, path)
        t.put(new, value, path, f"legacy RLlib key, read as {new}")
    elif key in NO_OPS:
        searched = isinstance(value, Domain)
        dropped = " (its search is dropped: every value ran the same)" if searched else ""
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
        stack_flag(t, key, value, path)
    elif key in keys.ignored:
        raise SpecError(
            f"'{key}' would be silently ignored by {t.name} on RLlib's new API stack, and has no "
            "equivalent there",
            path=path,
            suggestion=keys.ignored[key],
        )
    elif key == "model_config":
        t.put("model_config", check_model_keys(value, keys, path), path)
    elif key in keys.defaults or key in EXTRA_KEYS:
        t.put(key, value, path)
    else:
        raise no_key(t, key, path)


# Keys naming where RLlib writes (its recorded episodes), checked as every store a spec names.
WRITTEN_STORES = ("output",)


def _check_stores(key: str, value: Any, path: str) -> None:
    """Every store RLlib may write at `key`: each value a search there can give, and the same
    keys inside the configs RLlib merges over the top one for its env runners (a learner's
    per-module overrides write no episodes)."""
    if isinstance(value, Domain) and value.kind in LIST_KINDS:
        for i, each in enumerate(value.args):
            _check_stores(key, each, f"{path}.{value.kind}[{i}]")
    elif key in WRITTEN_STORES and isinstance(value, str):
        _check_store(value, path)
    elif key in SUB_CONFIG_KEYS and isinstance(value, dict):
        for k, v in value.items():
            _check_stores(k, v, f"{path}.{k}")


def _check_store(value: str, path: str) -> None:
    """A local folder RLlib writes must be absolute (a relative one lands in each env runner's
    working folder, Ray's temporary session folder, and is lost) and writable by the run."""
    folder = local_store(value)
    problem = store_problem(value)
    if folder is not None and problem is None and not folder.expanduser().is_absolute():
        problem = "a relative folder is each env runner's own, in Ray's temporary session folder"
    if problem is not None:
        raise SpecError(
            f"RLlib cannot write there: {problem}",
            path=path,
            suggestion="name an absolute folder of yours, or a cloud URI",
        )


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
        new = renamed_to(name, key)
        raise SpecError(
            f"'{key}' is a legacy RLlib key, read only when the spec is loaded: mutated as named, "
            "it would change nothing",
            path=path,
            suggestion=f"mutate {new}"
            if new
            else "mutate a key of `python -m tune_app list " + name + "`",
        )
    raise SpecError(
        f"{name} has no config key '{key}': a mutation of it would change nothing",
        path=path,
        allowed=f"the {len(keys.defaults)} keys `python -m tune_app list {name}` prints",
        suggestion=did_you_mean(key, keys.defaults) or did_you_mean(key, RENAMED),
    )


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
    # Today's keys (the legacy table's targets too) before the legacy names, which are read as
    # today's: `num_episodes` means env_runners/num_episodes.
    known = list(dict.fromkeys([*RESULT_KEYS, METRIC, RETURN_MEAN, *LEGACY_METRICS.values()]))
    known += LEGACY_METRICS
    raise SpecError(
        f"'{key}' is not a result key of {name}",
        path=where,
        allowed=(*RESULT_KEYS, "env_runners/...", "learners/...", "evaluation/..."),
        suggestion=did_you_mean(key, known)
        or did_you_mean(f"env_runners/{key}", known)
        or f"episode returns are {METRIC} (last 100 episodes) and {RETURN_MEAN} (one iteration)",
    )
