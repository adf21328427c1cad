"""RLlib algorithms as a kind of trainable (`tune_app.kinds.TrainableKind`): the one place outside
this package's own modules that knows how an RLlib experiment differs from any other.

RLlib's class sizes its trials and saves its checkpoints; its legacy keys and metric names are
translated, its config keys checked against the algorithm's own, `config.env` read as classic
RLlib YAMLs write it, and its late result groups (episodes, evaluation) expected late.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tune_app.envs import EnvRef, resolve_env_grid
from tune_app.errors import SpecError
from tune_app.kinds import Layout
from tune_app.kinds.builtin import KindDefaults, resolve_spec_env
from tune_app.kinds.saving import check_saving
from tune_app.methods import mutated_paths, searcher_of
from tune_app.resources import Machine
from tune_app.rllib.algorithm import app_algorithm
from tune_app.rllib.code import code_modules, load_code
from tune_app.rllib.config import to_rllib
from tune_app.rllib.experiment import translate_experiment
from tune_app.rllib.keys import algorithm_keys
from tune_app.rllib.layout import choose, fastest_fit, fragment_misfit, layout_line
from tune_app.rllib.resources import trial_bundles
from tune_app.rllib.tables import METRIC, SMOKE, SMOKE_AT_MOST, SMOKE_FRAGMENTS
from tune_app.rllib.translation import check_metric, check_mutated_key
from tune_app.space import Domain

if TYPE_CHECKING:
    from pathlib import Path

    from tune_app.spec.resolved import Experiment


@dataclass(frozen=True)
class RLlibKind(KindDefaults):
    """An RLlib algorithm by name (`PPO`, `DQN`, ...)."""

    algorithm: str
    search_path: tuple[str, ...] = ()  # where the config's module:name code is found

    name = "rllib"
    describe = "RLlib algorithm"
    default_metric = METRIC, "max"  # the return is maximised (tables.MODE)
    reuses_actors = False  # an algorithm cannot reset its env runners to a new config
    sizes_own_placement = True  # from its config (default_resource_request)
    reports_late = True
    frequent_state_saves = False

    @property
    def smoke_overrides(self) -> dict[str, Any]:
        """One env runner and tiny batches, for the keys the algorithm has."""
        accepted = algorithm_keys(self.algorithm).defaults
        out: dict[str, Any] = {k: v for k, v in SMOKE.items() if k in accepted}
        # Fragments that fit the tiny batches: RLlib's "auto" where that is its default, else
        # a length the smoke minibatch is a multiple of (IMPALA and APPO require it).
        fragment = accepted.get("rollout_fragment_length")
        out.update({"rollout_fragment_length": "auto"} if fragment == "auto" else SMOKE_FRAGMENTS)
        return out

    def smoke_config(self, config: dict[str, Any]) -> dict[str, Any]:
        config = super().smoke_config(config)
        defaults = algorithm_keys(self.algorithm).defaults
        for key, cap in SMOKE_AT_MOST.items():
            given = config.get(key, defaults.get(key))
            if isinstance(given, int | float) and not isinstance(given, bool):
                config[key] = min(cap, given)  # None (no minimum) stays
        return config

    def env(self, exp: Experiment, spec_dir: Path, warnings: list[str]) -> EnvRef | None:
        """Required; the classic RLlib YAMLs put it in config, perhaps as a grid of envs."""
        env = exp.env
        if env is None:
            env = exp.config.get("env")
            if isinstance(env, Domain) and env.is_grid:
                return _env_grid(exp, list(env.args), spec_dir, warnings)
            if env is not None and not isinstance(env, str):
                raise SpecError(
                    "config.env must be one environment name or a grid_search over names",
                    path=f"{exp.key_path}.config.env",
                    suggestion="env: CartPole-v1, or env: {grid_search: [CartPole-v1, Acrobot-v1]}",
                )
        if env is None:
            raise SpecError(
                f"RLlib algorithm '{self.algorithm}' needs an env",
                path=f"{exp.key_path}.env",
                suggestion="add env: CartPole-v1 (a gymnasium id) or env: my_module:MyEnv",
            )
        return resolve_spec_env(exp, env, spec_dir, warnings)

    def translate(
        self, exp: Experiment, warnings: list[str], env: EnvRef | None
    ) -> tuple[Experiment, SpecError | None]:
        gym_env = env is None or all(e.kind == "gym" for e in env.members)
        return translate_experiment(exp, warnings, gym_env=gym_env, search_path=self.search_path)

    def check_reported(self, exp: Experiment, keys: list[tuple[str, str]]) -> None:
        for where, key in keys:
            check_metric(key, f"{exp.key_path}.{where}", self.algorithm)

    def check_checkpoint_keys(self, exp: Experiment) -> None:
        check_saving(exp, True, exp.key_path)  # an algorithm is a class that saves checkpoints

    def check_population(self, exp: Experiment, warnings: list[str]) -> None:
        """An algorithm saves checkpoints; each mutated key must be one it reads as named."""
        options = exp.scheduler.model_dump()
        option = next(k for k in ("hyperparam_mutations", "hyperparam_bounds") if k in options)
        where = f"{exp.key_path}.scheduler.{option}"
        for path in mutated_paths(exp.scheduler):
            check_mutated_key(self.algorithm, path.split(".")[0], f"{where}.{path}")

    def layout(self, exp: Experiment, trials: int, machine: Machine) -> tuple[Experiment, Layout]:
        return choose(exp, trials, machine)

    def layout_line(self, exp: Experiment, layout: Layout, at_once: int, machine: Machine) -> str:
        return layout_line(exp, layout, at_once, machine)

    def bundles(
        self,
        exp: Experiment,
        written: Experiment,
        env: EnvRef | None,
        machine: Machine,
        library_checks: bool,
    ) -> tuple[dict[str, float], ...]:
        # RLlib's fragment check first without RLlib (for validate too), so run says it once.
        found = fragment_misfit(self.algorithm, exp.config)
        if found is not None:
            raise found.under(exp.key_path)
        # RLlib sizes a trial the same whatever the env: the first gymnasium one is checked.
        gym_ids = [e.env for e in env.members if e.kind == "gym"] if env is not None else []
        gym_id = gym_ids[0] if gym_ids else None
        return trial_bundles(
            exp, written, gym_id, machine, library_checks, fastest_fit(exp, machine)
        )

    def load(self) -> Any:
        return app_algorithm(self.algorithm)

    def code_modules(self, exp: Experiment) -> tuple[str, ...]:
        return code_modules(exp.config)

    def tune_space(self, space: dict[str, Any]) -> dict[str, Any]:
        """RLlib's keys, and the config's code (`rllib.code`) imported through the gate."""
        return to_rllib(load_code(space, self.search_path))

    def missing_key_note(self, where: str, key: str, seen: set[str], episodes: float) -> str | None:
        """Episode statistics before any episode finished, evaluation results before any
        evaluation, had no chance to be reported."""
        if key.startswith("env_runners/") and not episodes:
            return (
                f"{where} '{key}' was never reported: no episode finished in any trial; "
                "let trials run longer (stop.training_iteration or timesteps)"
            )
        if key.startswith("evaluation/") and not any(k.startswith("evaluation/") for k in seen):
            return f"{where} '{key}' was never reported: no evaluation ran (evaluation_interval)"
        return None


def _env_grid(exp: Experiment, envs: Any, spec_dir: Path, warnings: list[str]) -> EnvRef:
    """RLlib's `config.env: {grid_search: [...]}`: every env checked, and a searcher that takes
    grid axes."""
    entry = searcher_of(exp.search)
    if not entry.takes_grid:
        raise SpecError(
            f"{entry.name} cannot search a grid_search axis",
            path=f"{exp.key_path}.config.env",
            suggestion="one experiment per env, or search: grid",
        )
    try:
        found = resolve_env_grid(envs, "config.env", spec_dir)
    except SpecError as err:
        raise err.under(exp.key_path) from None
    if found.note:
        warnings.append(f"{exp.key_path}.config.env.{found.note}")
    return found
