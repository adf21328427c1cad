"""The private Ray symbols the app relies on, as one table, and the check that each still holds in
the installed Ray: it imports, and a callable's leading parameters are the ones the app passes or
overrides. `tune_app doctor` runs the check without starting Ray; a new Ray release is reviewed
against this table (the package docstring says what each module does with them).

Attributes the app reads off instances (`_Bracket._live_trials`, `ASHAScheduler._rungs`) exist
only once Tune builds the object, so the Ray tests of `.ci/run` check them, not this table.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Symbol:
    """One private symbol: `module:attr.attr`, the leading parameters expected of it (None: not
    called or overridden, only imported), the app's module that relies on it, and keyword
    parameters it must take wherever they stand (the app passes them by name)."""

    where: str
    params: tuple[str, ...] | None
    used_by: str
    keywords: tuple[str, ...] = ()

    def check(self) -> str | None:
        """What does not hold in the installed Ray, in one line, or None."""
        module_name, _, path = self.where.partition(":")
        try:
            found: Any = importlib.import_module(module_name)
        except ImportError as err:
            return f"{self.where}: module {module_name} does not import ({err})"
        for part in path.split("."):
            if not hasattr(found, part):
                return f"{self.where}: {module_name} has no {path}"
            found = getattr(found, part)
        if self.params is None:
            return None
        try:
            names = tuple(inspect.signature(found).parameters)
        except (TypeError, ValueError):
            return f"{self.where}: not a callable with parameters ({type(found).__name__})"
        if names[: len(self.params)] != self.params:
            return (
                f"{self.where}: its parameters are ({', '.join(names)}), the app expects them to "
                f"begin ({', '.join(self.params)})"
            )
        missing = [k for k in self.keywords if k not in names]
        if missing:
            return f"{self.where}: takes no {', '.join(missing)}, which the app passes by name"
        return None


_HB = "ray.tune.schedulers.hyperband"
SYMBOLS: tuple[Symbol, ...] = (
    Symbol(
        f"{_HB}:_Bracket",
        ("time_attr", "max_trials", "init_t_attr", "max_t_attr", "eta", "s", "stop_last_trials"),
        "hyperband",
    ),
    Symbol(f"{_HB}:_Bracket.successive_halving", ("self", "metric", "metric_op"), "hyperband"),
    Symbol(f"{_HB}:HyperBandScheduler._create_bracket", ("self", "s"), "hyperband"),
    Symbol(
        "ray.tune.search.basic_variant:_TrialIterator",
        ("uuid_prefix", "num_samples", "unresolved_spec", "constant_grid_search"),
        "seeded",
    ),
    Symbol("ray.tune.search.basic_variant:_TrialIterator.__next__", ("self",), "seeded"),
    Symbol(
        "ray.tune.search.basic_variant:_TrialIterator.create_trial",
        ("self", "resolved_vars", "spec"),
        "seeded",
    ),
    Symbol(
        "ray.tune.schedulers.pbt:PopulationBasedTraining._log_config_on_step",
        ("self", "trial_state", "new_state", "trial", "trial_to_clone", "new_config"),
        "population",
    ),
    Symbol(
        "ray.tune.execution.tune_controller:TuneController.checkpoint",
        ("self", "force", "wait"),
        "population",
    ),
    Symbol(
        "ray.tune.execution.tune_controller:TuneController._mark_trial_to_checkpoint",
        ("self", "trial"),
        "population",
    ),
    Symbol(
        "ray.air.execution.resources.placement_group:PlacementGroupResourceManager",
        ("update_interval_s",),
        "placement",
    ),
    Symbol("ray.tune.execution.tune_controller:PlacementGroupResourceManager", None, "placement"),
    Symbol(
        "ray.tune.execution.tune_controller:TuneController._maybe_reuse_cached_actor",
        ("self", "trial"),
        "reuse",
    ),
    Symbol("ray._private.services:ConsolePopen", ("args",), "startup"),
    Symbol("ray._private.services:canonicalize_bootstrap_address", ("addr",), "startup"),
    Symbol("ray._private.ray_constants:ENABLE_RAY_CLUSTER", None, "startup"),
    Symbol("ray._private.utils:set_sigterm_handler", ("sigterm_handler",), "startup"),
    Symbol(
        "ray._private.parameter:RayParams", (), "startup", ("no_monitor", "include_log_monitor")
    ),
    Symbol(
        "ray._private.node:Node.start_api_server",
        ("self", "include_dashboard", "raise_on_failure"),
        "startup",
    ),
    Symbol("ray._private.ray_constants:RAY_DISABLE_FAILURE_SIGNAL_HANDLER", None, "startup"),
    Symbol("ray.tune.execution.class_cache:DEFAULT_ENV_VARS", None, "startup"),
    Symbol("ray.tune.execution.class_cache:ENV_VARS_TO_PROPAGATE", None, "startup"),
    Symbol("ray.tune.experiment.trial:_TemporaryTrialState", None, "actors"),
    Symbol(
        "ray.air.execution._internal.actor_manager:RayActorManager._actor_task_failed",
        ("self", "tracked_actor_task", "exception"),
        "memory",
    ),
    Symbol(
        "ray.train._internal.storage:_upload_to_fs_path",
        ("local_path", "fs", "fs_path", "exclude"),
        "uploads",
    ),
    Symbol("ray.air._internal.usage:tag_callbacks", ("callbacks",), "telemetry"),
)


def broken() -> list[tuple[Symbol, str]]:
    """Each symbol of the table that does not hold in the installed Ray, with why."""
    return [(symbol, problem) for symbol in SYMBOLS if (problem := symbol.check()) is not None]
