"""Environments named by a spec's `env:`: a registered gymnasium id, or `module:Class`.

Checked before Ray starts without running user code; `EnvRef.load` imports a user's env class on
the driver, and the class then travels to the trials inside their config.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tune_app.errors import Collector, SpecError, did_you_mean
from tune_app.user_code import ENV, check, entry_point, user_path


@dataclass(frozen=True)
class EnvRef:
    """A checked `env:` value: a gymnasium id, a user's env class to import, or a grid of these
    (RLlib's `config: {env: {grid_search: [...]}}`, one set of trials per env)."""

    env: str
    kind: str  # "gym", "class" or "grid"
    search_path: tuple[str, ...] = ()
    note: str | None = None  # how a spec's env was read, when not as written (a warning)
    grid: tuple[EnvRef, ...] = ()  # kind "grid": the envs, in the spec's order

    @property
    def members(self) -> tuple[EnvRef, ...]:
        """The single envs this names: its grid's, or itself."""
        return self.grid or (self,)

    def load(self) -> Any:
        """The value trials get as `env`: the id, the imported env class, or Tune's grid of
        those."""
        if self.kind == "grid":
            return {"grid_search": [member.load() for member in self.grid]}
        if self.kind == "gym":
            return self.env
        return check(self.env, ENV, self.search_path, "env").load()


def resolve_env_grid(envs: list[Any], where: str, spec_dir: Path | None = None) -> EnvRef:
    """Check every env of a `grid_search` over envs at key path `where` (a parsed grid's values:
    a list, never empty); each error names its member's index."""
    members, errors = [], Collector()
    for i, env in enumerate(envs):
        with errors.check():
            try:
                if not isinstance(env, str):
                    raise SpecError(
                        f"{env!r} is not an env name",
                        path="",
                        suggestion="write a gymnasium id or package.module:EnvClass",
                    )
                members.append(resolve_env(env, spec_dir))
            except SpecError as err:
                err.path = f"{where}.grid_search[{i}]"
                err.args = (err.message(),)
                raise
    errors.raise_any()
    return EnvRef(
        env=", ".join(m.env for m in members),
        kind="grid",
        search_path=tuple(dict.fromkeys(p for m in members for p in m.search_path)),
        note="; ".join(f"grid_search[{i}]: {m.note}" for i, m in enumerate(members) if m.note)
        or None,
        grid=tuple(members),
    )


def resolve_env(env: str, spec_dir: Path | None = None) -> EnvRef:
    """Check `env` names a registered gymnasium environment, an env class an installed package
    declares by name (entry-point group `tune_app.envs`), or a module:Class let through
    `user_code`'s gate."""
    declared = entry_point(ENV.group, env)
    if ":" in env or declared is not None:
        search_path = user_path(spec_dir)
        ref = check(declared or env, ENV, search_path, "env")
        return EnvRef(env=ref.text, kind="class", search_path=search_path)
    import gymnasium

    ids = list(gymnasium.envs.registry)
    if env not in ids:
        newer = _current_version(env, ids)
        if newer is not None:
            _check_installed(newer)
            return EnvRef(
                env=newer,
                kind="gym",
                note=f"gymnasium has no '{env}' (an old gym version); read as '{newer}', its "
                "current version",
            )
        atari = env.startswith("ALE/") or env.endswith(("NoFrameskip-v4", "Deterministic-v4"))
        if atari and importlib.util.find_spec("ale_py") is not None:
            importlib.import_module("ale_py")  # registers its envs with gymnasium
            if env in gymnasium.envs.registry:
                return EnvRef(env=env, kind="gym")
        raise SpecError(
            f"'{env}' is not a registered gymnasium environment",
            path="env",
            suggestion=did_you_mean(env, ids)
            or (
                "Atari envs need ale-py (pip install ale-py), not installed here; or write "
                "package.module:EnvClass"
                if atari
                else "or write package.module:EnvClass"
            ),
        )
    _check_installed(env)
    return EnvRef(env=env, kind="gym")


def _check_installed(env: str) -> None:
    """A registered env whose package is missing (MuJoCo, Box2D) is refused now, with
    gymnasium's own install hint, not in every trial once Ray has started."""
    import gymnasium

    entry = gymnasium.spec(env).entry_point
    if not isinstance(entry, str):
        return
    try:
        importlib.import_module(entry.partition(":")[0])
    except (ImportError, gymnasium.error.DependencyNotInstalled) as err:
        raise SpecError(
            f"'{env}' needs a package that is not installed: {err}", path="env"
        ) from None


def _current_version(env: str, ids: list[str]) -> str | None:
    """The newest registered version of an env id whose own, older version is gone
    (Pendulum-v0); None for a version newer than any registered (CartPole-v999: a typo, not
    an old gym version, is not run as another env)."""
    name, dash, version = env.rpartition("-v")
    if not dash or not version.isdigit():
        return None
    versions = [
        int(v) for n, _, v in (i.rpartition("-v") for i in ids) if n == name and v.isdigit()
    ]
    if not versions or int(version) > max(versions):
        return None
    return f"{name}-v{max(versions)}"
