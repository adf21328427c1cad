"""The kinds of trainable the app itself knows (`tune_app.kinds.TrainableKind`): one registered in
`trainables/`, which declares its knobs, metrics and bundles (`TrainableInfo`), and a user's
`module:name`, a function or `tune.Trainable` class that declares nothing; with `KindDefaults`,
the answers they share with RLlib's kind (`tune_app.rllib.kind`).

Nothing here imports Ray at module level: the plan asks these kinds before Ray starts.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from tune_app.contract import Knob, TrainableInfo
from tune_app.envs import EnvRef, resolve_env
from tune_app.errors import Collector, SpecError, did_you_mean
from tune_app.extras import require
from tune_app.kinds import Layout
from tune_app.kinds.functions import as_tune_function, with_keyword_reports
from tune_app.kinds.saving import check_saving, saves_checkpoints, saves_in_source
from tune_app.methods import scheduler_of
from tune_app.resources import Machine, fewer_gpus, misfit
from tune_app.seeds import SEED_KEY
from tune_app.space import LIST_KINDS, RULES, Domain
from tune_app.user_code import CodeRef, defined_as

if TYPE_CHECKING:
    from pathlib import Path

    from tune_app.spec.resolved import Experiment


class KindDefaults:
    """The answers most kinds give: a trainable the runner sizes and may reuse, that declares
    nothing, takes its config as written and resolves `env:` itself."""

    @property
    def smoke_overrides(self) -> dict[str, Any]:
        """Config a `--smoke` run sets, where the spec does not search the key."""
        return {}

    @property
    def default_metric(self) -> tuple[str | None, Literal["min", "max"] | None]:
        return None, None

    @property
    def declared_metrics(self) -> tuple[str, ...]:
        return ()

    reuses_actors = True
    sizes_own_placement = False
    reports_late = False
    frequent_state_saves = True

    @property
    def user_modules(self) -> tuple[str, ...]:
        return ()

    @property
    def search_path(self) -> tuple[str, ...]:
        return ()

    def code_modules(self, exp: Experiment) -> tuple[str, ...]:
        return self.user_modules

    def env(self, exp: Experiment, spec_dir: Path, warnings: list[str]) -> EnvRef | None:
        if exp.env is None:
            return None
        return resolve_spec_env(exp, exp.env, spec_dir, warnings)

    def translate(
        self, exp: Experiment, warnings: list[str], env: EnvRef | None
    ) -> tuple[Experiment, SpecError | None]:
        return exp, None

    def smoke_config(self, config: dict[str, Any]) -> dict[str, Any]:
        config = dict(config)
        for key, value in self.smoke_overrides.items():
            if not isinstance(config.get(key), Domain):
                config[key] = value
        return config

    def check_reported(self, exp: Experiment, keys: list[tuple[str, str]]) -> None:
        return  # a user's function declares nothing; the runner checks its first results

    def check_config(self, exp: Experiment) -> None:
        return

    def check_checkpoint_keys(self, exp: Experiment) -> None:
        return

    def check_seeds(self, exp: Experiment) -> None:
        return

    def layout(
        self, exp: Experiment, trials: int, machine: Machine
    ) -> tuple[Experiment, Layout | None]:
        return exp, None

    def layout_line(self, exp: Experiment, layout: Layout, at_once: int, machine: Machine) -> str:
        return layout.line

    def bundles(
        self,
        exp: Experiment,
        written: Experiment,
        env: EnvRef | None,
        machine: Machine,
        library_checks: bool,
    ) -> tuple[dict[str, float], ...]:
        return sized_bundles(exp, machine)

    def check_loaded(self, exp: Experiment, trainable: Any) -> None:
        return

    def tune_space(self, space: dict[str, Any]) -> dict[str, Any]:
        return space

    def missing_key_note(self, where: str, key: str, seen: set[str], episodes: float) -> str | None:
        return None


@dataclass(frozen=True)
class RegisteredKind(KindDefaults):
    """A trainable of the `trainables` package: what its `INFO` declares is checked."""

    info: TrainableInfo

    name = "registered"

    @property
    def describe(self) -> str:
        return f"registered: {self.info.doc}"

    @property
    def default_metric(self) -> tuple[str | None, Literal["min", "max"] | None]:
        return self.info.metric, self.info.mode

    @property
    def declared_metrics(self) -> tuple[str, ...]:
        return self.info.metrics

    @property
    def smoke_overrides(self) -> dict[str, Any]:
        return dict(self.info.smoke)

    def check_reported(self, exp: Experiment, keys: list[tuple[str, str]]) -> None:
        reported = self.info.reported
        for where, key in keys:
            if key not in reported:
                raise SpecError(
                    f"'{key}' is never reported by trainable '{exp.run}'",
                    path=f"{exp.key_path}.{where}",
                    allowed=reported,
                    suggestion=did_you_mean(key, reported),
                )

    def check_config(self, exp: Experiment) -> None:
        """Its config keys: an unknown key would be silently ignored, a value of the wrong type
        or a missing required knob would fail every trial; and the optional packages it
        imports, which would fail every trial missing."""
        knobs = {k.name: k for k in self.info.knobs}
        errors = Collector()
        with errors.check():
            require(f"trainable '{exp.run}'", self.info.packages, f"{exp.key_path}.run")
        for key, value in exp.config.items():
            with errors.check():
                where = f"{exp.key_path}.config.{key}"
                if key not in knobs:
                    raise SpecError(
                        f"trainable '{exp.run}' has no config key '{key}'",
                        path=where,
                        allowed=list(knobs),
                        suggestion=did_you_mean(key, knobs) or "see `python -m tune_app list`",
                    )
                _check_knob_type(knobs[key], value, where, exp.run)
        for knob in knobs.values():
            given = knob.name in exp.config or (knob.name == "env" and exp.env is not None)
            if knob.default is None and not given:
                errors.errors.append(
                    SpecError(
                        f"trainable '{exp.run}' needs config key '{knob.name}' "
                        f"({knob.type.__name__}: {knob.doc})",
                        path=f"{exp.key_path}.config",
                        suggestion=f"add {knob.name}: under config (a value or a search space)",
                    )
                )
        if exp.env is not None and "env" not in knobs:
            errors.errors.append(
                SpecError(
                    f"trainable '{exp.run}' takes no env",
                    path=f"{exp.key_path}.env",
                    suggestion="remove env:",
                )
            )
        errors.raise_any()

    def check_checkpoint_keys(self, exp: Experiment) -> None:
        check_saving(exp, None, exp.key_path)  # registered trainables are functions

    def check_population(self, exp: Experiment, warnings: list[str]) -> None:
        where, entry = f"{exp.key_path}.scheduler", scheduler_of(exp.scheduler)
        if not self.info.checkpoints:
            raise SpecError(
                f"scheduler {entry.name} copies checkpoints between trials, but trainable "
                f"'{exp.run}' saves none",
                path=where,
                suggestion="use a trainable that reports tune.Checkpoint (es_cartpole) or an "
                "RLlib algorithm, or another scheduler",
            )
        options = exp.scheduler.model_dump()
        mutated = options.get("hyperparam_mutations") or options.get("hyperparam_bounds") or {}
        knobs = [k.name for k in self.info.knobs]
        for key in mutated:
            if key not in knobs:
                raise SpecError(
                    f"trainable '{exp.run}' has no config key '{key}' to mutate",
                    path=f"{where}.{key}",
                    allowed=knobs,
                    suggestion=did_you_mean(key, knobs),
                )

    def check_seeds(self, exp: Experiment) -> None:
        self.info.refuse_missing_knob(
            SEED_KEY, "it cannot run on seeds", path=f"{exp.key_path}.seeds"
        )

    def bundles(
        self,
        exp: Experiment,
        written: Experiment,
        env: EnvRef | None,
        machine: Machine,
        library_checks: bool,
    ) -> tuple[dict[str, float], ...]:
        return sized_bundles(exp, machine, self.info.simulations, self.info.head_cpu)

    def load(self) -> Any:
        return as_tune_function(self.info.fn)


@dataclass(frozen=True)
class FunctionKind(KindDefaults):
    """A user's `module:name` let through `user_code`'s gate: a function or a `tune.Trainable`
    class, which declares nothing; its env is passed as the spec wrote it."""

    ref: CodeRef

    @property
    def run(self) -> str:
        return self.ref.text

    name = "function"

    @property
    def describe(self) -> str:
        """`module:function` or `module:class`, as the module's source defines it (not
        imported: validate runs no user code); `module:name` where it does not show."""
        return f"module:{defined_as(self.ref) or 'name'}"

    @property
    def user_modules(self) -> tuple[str, ...]:
        return (self.ref.module_name,)

    @property
    def search_path(self) -> tuple[str, ...]:
        return self.ref.search_path

    def env(self, exp: Experiment, spec_dir: Path, warnings: list[str]) -> EnvRef | None:
        return None  # the function gets the text, and makes the env as it likes

    def check_population(self, exp: Experiment, warnings: list[str]) -> None:
        warnings.append(
            f"{exp.key_path}.scheduler: {scheduler_of(exp.scheduler).name} exploits only trials "
            "that report checkpoints (tune.report(..., checkpoint=...)) and restore from "
            "tune.get_checkpoint()"
        )

    def load(self) -> Any:
        """The function (wrapped if it takes a legacy reporter) or the `tune.Trainable` class."""
        fn = self.ref.load()
        if inspect.isclass(fn):
            return fn  # a tune.Trainable class
        return with_keyword_reports(as_tune_function(fn))

    def check_checkpoint_keys(self, exp: Experiment) -> None:
        """`check_saving`, where the module's source shows what the name is (no import)."""
        if not isinstance(saves := saves_in_source(self.ref), str):
            check_saving(exp, saves, exp.key_path)

    def check_loaded(self, exp: Experiment, trainable: Any) -> None:
        """`check_saving`, where the source did not show it before import."""
        if isinstance(saves_in_source(self.ref), str):
            check_saving(exp, saves_checkpoints(trainable), "")


# ---- shared by the kinds ------------------------------------------------------------------------


def resolve_spec_env(exp: Experiment, env: str, spec_dir: Path, warnings: list[str]) -> EnvRef:
    """`env` (the experiment's `env:` or, for RLlib, `config.env`) checked and resolved."""
    try:
        found = resolve_env(env, spec_dir)
    except SpecError as err:
        raise err.under(exp.key_path) from None
    if found.note:
        where = "env" if exp.env is not None else "config.env"
        warnings.append(f"{exp.key_path}.{where}: {found.note}")
    return found


def sized_bundles(
    exp: Experiment, machine: Machine, simulations: int = 0, head_cpu: float = 1.0
) -> tuple[dict[str, float], ...]:
    """One head bundle for the trial's own process, then one bundle per simulation (a trainable
    declaring `simulations` > 0 needs at least one); refused if a trial can never run on
    `machine`, naming the key that asks for what it lacks."""
    sims = exp.simulations if exp.simulations is not None else simulations
    if simulations and sims < 1:
        raise SpecError(
            f"trainable '{exp.run}' runs its rollouts as simulations; it needs at least one",
            path=f"{exp.key_path}.simulations",
            suggestion=f"its default is {simulations}",
        )
    if exp.resources is not None:
        cpu, gpu, memory = exp.resources.cpu, exp.resources.gpu, exp.resources.memory
    else:
        cpu, gpu, memory = head_cpu, 0.0, 0.0
    head = {"CPU": float(cpu)}
    if gpu:
        head["GPU"] = float(gpu)
    if memory:
        head["memory"] = float(memory)
    # An all-zero head bundle is fine beside simulations: Tune then runs the trial's process
    # outside the bundles. Alone, Ray refuses it (misfit says so).
    bundles = (head, *({"CPU": float(exp.cpu_per_simulation)} for _ in range(sims)))
    found = misfit(bundles, machine)
    if found is None:
        return bundles
    # Said of the part that asks for what does not fit: the head bundle alone (its
    # resources_per_trial key), one simulation's bundle, else the number of simulations.
    head_alone = misfit((head,), machine) if any(head.values()) else None
    one_sim = misfit(bundles[1:2], machine) if len(bundles) > 1 else None
    found = head_alone or one_sim or found
    key, advice = _MISFIT_KEYS.get(found.resource, (found.resource, "ask for less of it"))
    if found.resource == "GPU":
        key, advice = "resources_per_trial.gpu", fewer_gpus("gpu", machine)
    elif found.resource == "CPU" and len(bundles) > 1 and head_alone is None:
        key = "cpu_per_simulation" if one_sim else "simulations"
    elif found.need == 0:  # nothing reserved at all
        advice = "reserve a fraction of a CPU (cpu: 0.1), or give the trial simulations"
    raise SpecError(
        found.text,
        path=f"{exp.key_path}.{key}",
        suggestion=advice,
    )


# The key a registered or function trial sets each resource with, and what to do when short
# (GPUs: `fewer_gpus`, for the machine).
_MISFIT_KEYS = {
    "CPU": (
        "resources_per_trial.cpu",
        "lower resources_per_trial.cpu, simulations or cpu_per_simulation",
    ),
    "memory": (
        "resources_per_trial.memory",
        "ask for less memory (bytes): Ray counts about "
        "70% of a node's available memory as its memory resource",
    ),
}


def _check_knob_type(knob: Knob, value: Any, where: str, run: str) -> None:
    """Every value `value` can take (a constant, a list's values, a sampler's kind) is of the
    knob's type; an int is a float, a bool is neither."""
    expected = knob.type.__name__
    if isinstance(value, Domain):
        if value.kind in LIST_KINDS:
            for item in value.args:
                _check_knob_type(knob, item, where, run)
            return
        produced = int if RULES[value.kind].integer else float
        if produced is knob.type or (produced is int and knob.type is float):
            return
        raise SpecError(
            f"trainable '{run}' reads '{knob.name}' as {expected}, but {value.kind} draws "
            f"{produced.__name__}s",
            path=where,
            suggestion="use randint, qrandint or lograndint for an int"
            if knob.type is int
            else "use choice: [...] or grid_search: [...]",
        )
    if _of_type(value, knob.type):
        return
    raise SpecError(
        f"trainable '{run}' reads '{knob.name}' as {expected}, but got {value!r}",
        path=where,
        suggestion=f"write {'an' if expected[0] in 'aeiou' else 'a'} {expected} ({knob.doc})",
    )


def _of_type(value: Any, kind: type) -> bool:
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)
