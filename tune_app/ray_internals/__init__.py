"""Everything that touches Ray's private symbols, in one place, with the Ray releases it is checked
on: an upgrade of Ray reviews this package and nothing else.

What each module depends on (private to Ray, so free to change in any release). Schedulers and
searchers are wrappers (`wrapping`) around Tune's own, unmodified: they hand Tune's scheduler
rewritten results and read its tables, never replace its methods.
- `wrapping`: nothing private; what it reads of the wrapped scheduler is its modules' business.
- `hyperband`: `ray.tune.schedulers.hyperband._Bracket` (subclassed: Tune has no hook for a
  bracket's class; each new bracket's class is set to it, its `filled` and
  `successive_halving` overridden), its `_all_trials`, `_n`, `_live_trials`; and
  `HyperBandScheduler._trial_info` (which bracket a trial is in).
- `seeded` (the seeds feature's behaviour; `tune_app.seeds.wrappers` chooses it), one line per
  reach, each naming the Tune hook that is missing:
  - `ray.tune.search.basic_variant._TrialIterator`, subclassed, and `BasicVariantGenerator.
    _iterators`, `_total_samples`: the generator has no hook for a variant becoming trials;
  - ASHA's `_trial_info` (configuration -> bracket) and its brackets' `_rungs`: ASHA has no
    public way to judge a group of trials as one, nor to read or clear a rung's record;
  - HyperBand's as in `hyperband`, with `_Bracket._all_trials`, `_n`, `_live_trials`: a bracket
    has no hook to count a configuration's seeds as one place in it.
  Tune's public scheduler methods (`on_trial_add`, `on_trial_result`, `on_trial_complete`,
  `on_trial_remove`) do the rest: the wrappers call the wrapped scheduler with a stand-in trial
  per configuration. `tests/test_sparse.py` and `tests/test_seeds.py` drive them on Tune's own
  classes, and `symbols` checks the signatures, so a Tune release that moves them fails there.
- `sparse`: no private symbol; what Tune's schedulers and searchers do with a result whose
  metric is missing or not a number (its docstring lists each), which a new release may change.
- `population`: `PopulationBasedTraining._log_config_on_step` (overridden, in a subclass of PBT
  and of PB2: the only place PBT names an exploit's donor); `TuneController.checkpoint(force,
  wait)` and `_mark_trial_to_checkpoint` (Tune's state saved, the exploited trials in it, once
  an exploit is made: Tune has no public way to save its state now), reached through the
  `_tune_controller` of the wrapper Tune hands schedulers.
- `placement`: `ray.air.execution.resources.placement_group.PlacementGroupResourceManager`'s
  `_pg_to_request`, `_pg_to_staging_future`, `_staging_future_to_pg`,
  `_request_to_staged_pgs`; the module attribute `ray.tune.execution.tune_controller.
  PlacementGroupResourceManager` (replaced while a Tuner is built).
- `reuse`: `TuneController._maybe_reuse_cached_actor` (replaced while a Tuner fits) and the
  controller's `_trial_to_actor`, `_staged_trials`, `_resetting_trials`, `_actor_cache`,
  `_actor_manager` (read): a cached actor goes to a trial still waiting for resources, not to
  one whose own actor is starting.
- `startup`: `ray._private.services.ConsolePopen` (its processes started in their own session),
  `ray._private.ray_constants.ENABLE_RAY_CLUSTER` (off while a local Ray starts: loopback),
  `ray.tune.execution.class_cache.DEFAULT_ENV_VARS` and `ENV_VARS_TO_PROPAGATE`,
  `ray._private.utils.set_sigterm_handler` and
  `ray._private.ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER` (Ray's SIGTERM handlers kept
  out of the driver while it starts or joins Ray);
  `ray._private.parameter.RayParams` (`no_monitor`, `include_log_monitor` given) and
  `ray._private.node.Node.start_api_server` (replaced while a local Ray starts: no autoscaler
  monitor, no API server without the dashboard, no log monitor without `-v`); the GCS's gRPC
  method `ray.rpc.NodeInfoGcsService/CheckAlive`, called without a token before joining a
  cluster (whether it asks for one: UNAUTHENTICATED); `ray._private.services.
  canonicalize_bootstrap_address` (called: the HOST:PORT `--address auto` joins, probed first).
- `actors`: `Trial.temporary_state.ray_actor` (the trial's actor handle, an attribute of the
  private `ray.tune.experiment.trial._TemporaryTrialState`), killed for `result_timeout_s`.
- `memory`: `ray.air.execution._internal.actor_manager.RayActorManager._actor_task_failed`
  (wrapped while a Tuner fits, so a trial killed by Ray's memory monitor fails as a trial).
- `constraints`: `OptunaSearch._ot_trials` (a Tune trial's Optuna trial, given its
  constraint values with `set_constraint` before it is told).
- `uploads`: `ray.train._internal.storage._upload_to_fs_path` (replaced while a Tuner fits, so
  Tune's copies of its state and trial files to the run folder replace files whole).
- `telemetry`: `ray.air._internal.usage.tag_callbacks` (replaced while a Tuner fits, so a
  run's start does not import the MLflow and W&B integrations to tag its callbacks).
- `buffering`: no symbol; the order in which `TuneController._schedule_trial_train` hands
  Tune's result-buffering settings to `Trainable.train_buffered` (swapped), set to match
  while a Tuner fits with `result_buffer`.
- `fitting`: no symbol of its own; enters every patch above that holds while a Tuner fits.
- `replacing`: no symbol; how every patch above sets a Ray attribute or an environment variable
  for the length of a `with` block and puts it back.

- `versions`: the range of Ray releases checked, the warning outside it, and each behaviour
  that differs between the releases of the range, decided by the installed version.

The package imports Ray only in its modules, never here, so `validate` stays Ray-free.
"""

from __future__ import annotations

# The newest Ray release checked, which constraints.txt pins; `versions` holds the whole range.
TESTED_RAY_VERSION = "2.60.0"
TESTED_RAY = "2.60"  # as messages name it ("RLlib 2.60 no longer has ...")
