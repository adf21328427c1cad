"""Everything that touches Ray's private symbols, in one place, with the Ray version it was tested
on: an upgrade of Ray reviews this package and nothing else.

What each module depends on (private to Ray, so free to change in any release):
- `hyperband`: `ray.tune.schedulers.hyperband._Bracket` (subclassed; its `_all_trials`, `_n`)
  and `HyperBandScheduler`'s `_create_bracket`, `_get_n0`, `_get_r0`, `_trial_info`, `_eta`,
  `_time_attr`, `_max_t_attr`, `_stop_last_trials`.
- `seeded`: `ray.tune.search.basic_variant._TrialIterator` (subclassed) and
  `BasicVariantGenerator._iterators`, `_total_samples`; `Repeater._trial_id_to_group`;
  `_Bracket`'s `_live_trials`, `_all_trials`, `_n`, `_r`, `_cumul_r`, `_halves`, `_eta`,
  `_max_t_attr` (successive halving by configuration, a copy of Tune's); `HyperBandScheduler.
  _process_bracket`, `_trial_info`; `ASHAScheduler`'s `_rungs` (via its brackets), `_max_t`,
  `_metric`, `_metric_op`, `_num_stopped`, `_time_attr`, `_stop_last_trials` (its
  `on_trial_result`, copied).
- `sparse`: no private symbol; what Tune's schedulers and searchers do with a result whose
  metric is missing or not a number (its docstring lists each), which a new release may change.
- `population`: `PopulationBasedTraining._log_config_on_step` (overridden to record clones),
  `_hyperparam_mutations`; `PB2._hyperparam_bounds`.
- `placement`: `ray.air.execution.resources.placement_group.PlacementGroupResourceManager`'s
  `_pg_to_request`, `_pg_to_staging_future`, `_staging_future_to_pg`,
  `_request_to_staged_pgs`; the module attribute `ray.tune.execution.tune_controller.
  PlacementGroupResourceManager` (replaced while a Tuner is built).
- `startup`: `ray._private.services.ConsolePopen` (its processes started in their own session),
  `ray._private.ray_constants.ENABLE_RAY_CLUSTER` (off while a local Ray starts: loopback),
  `ray.tune.execution.class_cache.DEFAULT_ENV_VARS` and `ENV_VARS_TO_PROPAGATE`,
  `ray._private.worker._global_node.kill_monitor`, `ray._private.utils.set_sigterm_handler`
  and `ray._private.ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER` (Ray's SIGTERM handlers
  kept out of the driver while it starts or joins Ray).
- `actors`: `Trial.temporary_state.ray_actor` (the trial's actor handle, an attribute of the
  private `ray.tune.experiment.trial._TemporaryTrialState`), killed for `result_timeout_s`.
- `memory`: `ray.air.execution._internal.actor_manager.RayActorManager._actor_task_failed`
  (wrapped while a Tuner fits, so a trial killed by Ray's memory monitor fails as a trial).
- `uploads`: `ray.train._internal.storage._upload_to_fs_path` (replaced while a Tuner fits, so
  Tune's copies of its state and trial files to the run folder replace files whole).
- `trackers`: `ray.air.integrations.mlflow.MLflowLoggerCallback.mlflow_util` (Ray's private
  `ray.air._internal.mlflow._MLflowLoggerUtil`: its `setup_mlflow`, `start_run`,
  `experiment_id`, `_get_client`) and `WandbLoggerCallback`'s `_trial_logging_actors`,
  `_start_logging_actor`, `_exclude_results`, `_logger_actor_cls` and its
  `ray.air.integrations.wandb._WandbLoggingActor` (subclassed, to name, tag and resume runs,
  and to let W&B write a trial's run file before Tune kills its process).

`version_warning` is checked at the start of `run` and `resume`. The package imports Ray only
in its modules, never here, so `validate` stays Ray-free.
"""

from __future__ import annotations

from importlib import metadata

# The Ray release every module of this package was written against and tested on.
TESTED_RAY_VERSION = "2.60.0"
TESTED_RAY = "2.60"  # as messages name it ("RLlib 2.60 no longer has ...")


def installed_ray_version() -> str | None:
    """The installed Ray's version, read from its metadata (no import), or None."""
    try:
        return metadata.version("ray")
    except metadata.PackageNotFoundError:
        return None


def version_warning(installed: str | None = None) -> str | None:
    """One line when the installed Ray is not the tested release, else None."""
    installed = installed or installed_ray_version()
    if installed is None or installed == TESTED_RAY_VERSION:
        return None
    return (
        f"Ray {installed} is installed, but tune_app was tested on Ray {TESTED_RAY_VERSION}; "
        f"its schedulers and start-up rely on Ray internals that may have changed (pip install "
        f"-c constraints.txt -e . installs the tested one)"
    )
