"""A trial's placement group as RLlib 2.60 sizes it, computed without importing RLlib, and the
refusal of a trial that cannot fit, naming the keys the user wrote and what would fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tune_app.errors import SpecError
from tune_app.resources import Machine, fewer_gpus, misfit
from tune_app.rllib.config import check_with_rllib
from tune_app.rllib.keys import algorithm_keys
from tune_app.rllib.tables import RENAMED, RESOURCE_KEYS, SIZING_KEYS
from tune_app.rllib.value_types import check_size
from tune_app.space import Domain
from tune_app.spec.resolved import Experiment


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
    for key in SIZING_KEYS:
        check_size(key, config.get(key), f"config.{key}")
    for key in ("num_env_runners", "num_cpus_per_env_runner", "num_gpus_per_env_runner"):
        check_size(key, evaluation.get(key), f"config.evaluation_config.{key}")

    def get(key: str) -> Any:
        return config.get(key, defaults.get(key))

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


def trial_bundles(  # noqa: C901
    exp: Experiment,
    written: Experiment,
    gym_id: str | None,
    machine: Machine,
    rllib_checks: bool,
    fastest: str | None = None,
) -> tuple[dict[str, float], ...]:
    """The trial's bundles as RLlib sizes them; a trial that cannot fit `machine` is refused
    naming the keys the user wrote: for CPUs the smallest change that fits and `fastest`, the
    layout the app would choose (`layout.fastest_fit`); for GPUs the key asking for them."""
    config = dict(exp.config)
    if gym_id is not None:
        config["env"] = gym_id
    try:
        res = resources(exp.run, config)
        bundles = check_with_rllib(exp.run, config) if rllib_checks else res.bundles
    except SpecError as err:
        raise err.under(exp.key_path) from None
    found = misfit(res.bundles, machine)
    if found is None:
        return bundles
    cpus = machine.cpus

    def spelled(key: str, default: Any) -> tuple[str, str]:
        """The key path the user wrote for `key` (or the new name), and how it was set."""
        if key == "num_env_runners" and written.simulations is not None:
            return f"{exp.key_path}.simulations", f"simulations: {written.simulations}"
        if key == "num_gpus_per_learner" and written.resources and written.resources.gpu:
            return f"{exp.key_path}.resources_per_trial.gpu", f"gpu: {written.resources.gpu:g}"
        given = written.config
        legacy = [old for old, new in RENAMED.items() if new == key]
        for name in (key, *legacy):
            if name in given:
                return f"{exp.key_path}.config.{name}", f"{name}: {given[name]}"
        return f"{exp.key_path}.config.{key}", f"RLlib's default {key}: {default}"

    if found.resource != "CPU" or res.cpus <= cpus:  # GPUs, memory, a node too small
        learners = res.bundles[len(res.bundles) - res.learners :]
        learner_gpus = any(b.get("GPU") for b in (res.bundles[0], *learners))
        key = "num_gpus_per_learner" if learner_gpus else "num_gpus_per_env_runner"
        path, how = spelled(key, 0) if found.resource == "GPU" else (exp.key_path, "")
        raise SpecError(
            f"{found.text}{f' ({how})' if how else ''}",
            path=path,
            suggestion=fewer_gpus(path.rsplit(".", 1)[-1], machine)
            if found.resource == "GPU"
            else "ask for less per trial",
        )

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

    if res.env_runners and most_runners(cpus - fixed) >= 1:
        path, how = runners_path, runners_how
        hint = f"set {runners_key}: {most_runners(cpus - fixed)} to fit"
    elif res.learners and most_runners(cpus - fixed_alone) >= 1:
        path, how = learners_path, learners_how
        k = min(res.env_runners or 1, most_runners(cpus - fixed_alone))
        also = f" and {runners_key}: {k}" if k != res.env_runners else ""
        hint = f"set {learners_key}: 0 (the main process then trains){also} to fit"
    elif res.env_runners and fixed <= cpus:
        path, how = runners_path, runners_how
        hint = f"set {runners_key}: 0 to fit (the main process then samples)"
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
        f"one {exp.run} trial needs {res.cpus:g} CPUs ({' + '.join(parts)}; {how}) but "
        f"{machine.name} has {cpus:g}",
        path=path,
        suggestion=hint if fastest is None else f"{hint}; the fastest layout that fits: {fastest}",
    )
