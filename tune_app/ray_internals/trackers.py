"""MLflow and W&B logger callbacks that name, tag and resume runs as the app does.

MLflow's is a Tune `LoggerCallback` on MLflow's own client (Tune's MLflowLoggerCallback gave
nothing the app kept but its private `_MLflowLoggerUtil`). W&B's is Tune's WandbLoggerCallback;
private to Ray there: its `_trial_logging_actors`, `_start_logging_actor`, `_exclude_results`,
`_logger_actor_cls` (set to a subclass of the private `_WandbLoggingActor`). Tune's own
callbacks create a new run for every trial start and fail the run when the tracker is
unreachable; these find a trial's run again by its `tune_app.trial_id` tag (a resumed or
retried trial stays one run, its logged iterations not logged twice) and turn a tracker's
failure into one warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
import time
from typing import Any

from ray.air.integrations.wandb import WandbLoggerCallback, _WandbLoggingActor
from ray.tune.logger import LoggerCallback

from tune_app.callbacks import located
from tune_app.plan import ExperimentPlan
from tune_app.rundir.layout import latest_results, read_rows
from tune_app.rundir.records import RunSummary
from tune_app.rundir.write import read_run_record
from tune_app.trackers import naming
from tune_app.trackers.options import MlflowOptions, WandbOptions

log = logging.getLogger(__name__)

# A tracker server that does not answer costs a few seconds, not MLflow's minutes of retries.
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
# MLflow prints a "View run ... at" line per run ended: the app's console is its own.
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
_BATCH = 1000  # MLflow's most metrics in one log_batch call


_WARNED: set[str] = set()  # the trackers that failed in this process: one warning each


class _Warns:
    """Calls into a tracker whose failure is one warning on stderr, never a failed trial."""

    tracker = "tracker"
    _warned = False  # this callback's calls failed: later ones that need them are skipped

    def _safely(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as err:  # a tracker's failure must not fail a trial or the run
            self._warned = True
            if self.tracker not in _WARNED:
                _WARNED.add(self.tracker)
                first = (str(err).splitlines() or [type(err).__name__])[0][:200]
                print(
                    f"warning: the {self.tracker} tracker failed ({first}); the run goes on "
                    "and its own files are complete",
                    file=sys.stderr,
                )
            return None


def _spec_and_key(ep: ExperimentPlan) -> tuple[str, str]:
    """The spec file the run was started from, and a key naming this run of the experiment."""
    record = read_run_record(ep.folder)
    return record.spec_file, f"{ep.folder.where}@{record.started}"


class MlflowTrials(_Warns, LoggerCallback):
    """One MLflow run per trial, children of one parent run per experiment that holds the spec
    (and, once the run ends, summary.json)."""

    tracker = "MLflow"

    def __init__(self, options: MlflowOptions, ep: ExperimentPlan) -> None:
        self.tracking_uri = options.tracking_uri
        self.experiment_name = options.experiment_name or ep.name
        self.tags = dict(options.tags)
        self.should_save_artifact = options.save_artifact
        spec_file, self.key = _spec_and_key(ep)
        self.naming = naming.Naming.of(ep, spec_file)
        self.spec_path = str(ep.folder.spec)
        self.written = ep.folder  # where the run folder was when the run began

    def setup(self, *args: Any, **kwargs: Any) -> None:
        self._warned = False
        self.runs: dict[str, str] = {}  # trial id -> run id
        self.logged: dict[str, int] = {}  # trial id -> last iteration logged
        self.parent: str | None = None
        self.client: Any = None
        self.experiment_id = ""
        if self._safely(self._connect):
            self.parent = self._safely(self._parent)

    def _connect(self) -> bool:
        """The tracking URI set (None: MLFLOW_TRACKING_URI or ./mlruns) and the MLflow experiment
        found: MLFLOW_EXPERIMENT_ID's where it names one, else the one of our name, made if new
        (as Tune's callback did)."""
        import mlflow
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient

        mlflow.set_tracking_uri(self.tracking_uri)  # type: ignore[arg-type]  # None: the default
        self.client = MlflowClient()
        given = os.environ.get("MLFLOW_EXPERIMENT_ID")
        if given is not None:
            with contextlib.suppress(MlflowException):
                self.experiment_id = self.client.get_experiment(given).experiment_id
                return True
        found = self.client.get_experiment_by_name(self.experiment_name)
        self.experiment_id = (
            found.experiment_id
            if found is not None
            else self.client.create_experiment(self.experiment_name)
        )
        return True

    def _client(self) -> Any:
        return self.client

    def _start_run(self, run_name: str, tags: dict[str, str]) -> Any:
        return self.client.create_run(self.experiment_id, run_name=run_name, tags=tags)

    def _parent(self) -> str:
        """The experiment's parent run: found by its key on resume, else created with the spec."""
        client = self._client()
        found = client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.`{naming.PARENT_TAG}` = '{self.key}'",
        )
        if found:
            client.update_run(found[0].info.run_id, status="RUNNING")
            return str(found[0].info.run_id)
        tags = {
            **(self.tags or {}),
            naming.PARENT_TAG: self.key,
            naming.TAG + "spec": self.naming.spec_file,
        }
        tags[naming.TAG + "experiment"] = self.naming.experiment
        run = self._start_run(self.naming.experiment, tags)
        client.log_artifact(run.info.run_id, self.spec_path)
        return str(run.info.run_id)

    def log_trial_start(self, trial: Any) -> None:
        if trial.trial_id not in self.runs and not self._warned:
            self._safely(self._open, trial)

    def _open(self, trial: Any) -> None:
        client = self._client()
        found = client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.`{naming.TRIAL_TAG}` = '{trial.trial_id}'",
        )
        if found:  # a resumed run: the same MLflow run, from the iteration after its last
            run_id = found[0].info.run_id
            history = client.get_metric_history(run_id, naming.ITERATION)
            self.runs[trial.trial_id] = run_id
            self.logged[trial.trial_id] = int(max((m.value for m in history), default=0))
            client.update_run(run_id, status="RUNNING")
            self._catch_up(trial.trial_id)
        else:
            tags = {**(self.tags or {}), **self.naming.tags(trial.trial_id, trial.config)}
            if self.parent:
                tags["mlflow.parentRunId"] = self.parent
            run_id = self._start_run(naming.run_name(trial.trial_id), tags).info.run_id
            from mlflow.entities import Param

            params = [Param(k, str(v)[:6000]) for k, v in self.naming.params(trial.config).items()]
            for at in range(0, len(params), 100):
                client.log_batch(run_id, params=params[at : at + 100])
        self.runs[trial.trial_id] = run_id

    def _catch_up(self, trial_id: str) -> None:
        """Log the results.jsonl rows a killed run wrote but never sent: a trial restored
        from the checkpoint of its last result does not report that result again."""
        path = located(self.naming.experiment, self.written).results
        rows = read_rows(path.read_bytes()) if path.exists() else []
        for row in latest_results(rows):
            done = row.get(naming.ITERATION)
            if row.get("trial_id") == trial_id and isinstance(done, int):
                if done > self.logged.get(trial_id, 0):
                    self._log(trial_id, row)
                    self.logged[trial_id] = done

    def log_trial_result(self, iteration: int, trial: Any, result: dict) -> None:
        done = result.get(naming.ITERATION)
        if trial.trial_id not in self.runs:
            self.log_trial_start(trial)
        if trial.trial_id not in self.runs:
            return
        if not isinstance(done, int) or done <= self.logged.get(trial.trial_id, 0):
            return  # logged before the run was resumed (the trial replays from a checkpoint)
        if self._safely(self._log, trial.trial_id, result) is not None:
            self.logged[trial.trial_id] = done

    def _log(self, trial_id: str, result: dict) -> bool:
        from mlflow.entities import Metric

        now, at = int(time.time() * 1000), naming.step(result)
        found = [Metric(k, v, now, at) for k, v in naming.metrics(result).items()]
        for start in range(0, len(found), _BATCH):
            self._client().log_batch(self.runs[trial_id], metrics=found[start : start + _BATCH])
        return True

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        self._safely(self._close, trial, failed)

    def _close(self, trial: Any, failed: bool) -> None:
        run_id = self.runs.get(trial.trial_id)
        if run_id is None:
            return
        client = self._client()
        client.set_tag(run_id, naming.STATUS_TAG, "failed" if failed else "terminated")
        if self.should_save_artifact and trial.local_path:
            client.log_artifacts(run_id, trial.local_path)
        client.set_terminated(run_id, "FAILED" if failed else "FINISHED")

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its callbacks for resume; what a run found is found again by tags.
        state = dict(self.__dict__)
        for key in ("runs", "logged", "parent", "_warned", "client"):
            state.pop(key, None)
        return state


def finish_mlflow(options: MlflowOptions, ep: ExperimentPlan, summary: RunSummary) -> None:
    """After summary.json is written: each trial's final status, summary.json on the parent."""
    import mlflow
    from mlflow.tracking import MlflowClient

    spec_file, key = _spec_and_key(ep)
    warns = _Warns()
    warns.tracker = "MLflow"

    def finish() -> None:
        client = MlflowClient(tracking_uri=options.tracking_uri or mlflow.get_tracking_uri())
        experiment = client.get_experiment_by_name(options.experiment_name or ep.name)
        if experiment is None:
            return
        ended = naming.outcomes(summary.trials)
        for run in client.search_runs([experiment.experiment_id], max_results=50000):
            trial_id = run.data.tags.get(naming.TRIAL_TAG)
            if trial_id in ended:
                outcome = ended[trial_id]
                client.set_tag(run.info.run_id, naming.STATUS_TAG, naming.status(outcome))
                if outcome.error:
                    first = outcome.error.strip().splitlines()[-1][:500]
                    client.set_tag(run.info.run_id, naming.ERROR_TAG, first)
            elif run.data.tags.get(naming.PARENT_TAG) == key:
                client.log_artifact(run.info.run_id, str(ep.folder.summary))
                client.set_terminated(
                    run.info.run_id, "KILLED" if summary.interrupted else "FINISHED"
                )

    warns._safely(finish)


class _FlushingWandbActor(_WandbLoggingActor):
    """Tune's per-trial W&B process, waiting for W&B's service to write everything before it
    returns: Tune kills the process as soon as `run` returns, and a trial that ended quickly
    (a failure at its second step) was left with an empty offline run file."""

    def run(self) -> None:
        super().run()
        self._wandb.teardown()


class WandbTrials(_Warns, WandbLoggerCallback):
    """One W&B run per trial (its id the trial id, so a resumed trial continues its run), in
    one group per experiment; the searched and constant params as its config."""

    tracker = "W&B"
    _logger_actor_cls = _FlushingWandbActor

    def __init__(self, options: WandbOptions, ep: ExperimentPlan) -> None:
        extra: dict[str, Any] = {"mode": options.mode, "tags": list(options.tags)}
        extra.update({k: v for k, v in (("entity", options.entity), ("dir", options.dir)) if v})
        super().__init__(
            project=options.project or ep.name, group=options.group or ep.name, **extra
        )
        spec_file, _ = _spec_and_key(ep)
        self.naming = naming.Naming.of(ep, spec_file)
        self.offline = options.mode == "offline"

    def setup(self, *args: Any, **kwargs: Any) -> None:
        self._warned = False
        # Tune's setup asks for an API key unless WANDB_MODE says offline; offline needs none.
        before = os.environ.get("WANDB_MODE")
        if self.offline:
            os.environ["WANDB_MODE"] = "offline"
        try:
            self._safely(lambda: super(WandbTrials, self).setup(*args, **kwargs))
        finally:
            if before is None:
                os.environ.pop("WANDB_MODE", None)
            else:
                os.environ["WANDB_MODE"] = before

    def log_trial_start(self, trial: Any) -> None:
        if trial in self._trial_logging_actors:  # a retried trial: the same run goes on
            return
        config = {
            **self.naming.params(trial.config),
            **self.naming.tags(trial.trial_id, trial.config),
        }
        init = dict(
            id=trial.trial_id,
            name=naming.run_name(trial.trial_id),
            resume="allow",
            reinit=True,
            allow_val_change=True,
            group=self.group,
            project=self.project,
            config=config,
        )
        init.update(self.kwargs)
        excluded = [*self._exclude_results, "config"]
        self._safely(lambda: self._start_logging_actor(trial, excluded, **init))

    def log_trial_result(self, iteration: int, trial: Any, result: dict) -> None:
        self._safely(super().log_trial_result, iteration, trial, result)

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        if trial in self._trial_logging_actors:
            self._safely(super().log_trial_end, trial, failed)


def finish_wandb(options: WandbOptions, ep: ExperimentPlan, summary: RunSummary) -> None:
    """After summary.json is written: one more run in the experiment's group, named after the
    experiment, holding the spec and summary.json as an artifact and each trial's final status."""
    import wandb

    _, key = _spec_and_key(ep)
    warns = _Warns()
    warns.tracker = "W&B"

    def finish() -> None:
        run = wandb.init(
            project=options.project or ep.name,
            entity=options.entity,
            group=options.group or ep.name,
            name=ep.name,
            # One summary run per run of the experiment, however often it is resumed.
            id="summary-" + hashlib.sha1(key.encode()).hexdigest()[:12],
            resume="allow",
            job_type="summary",
            mode=options.mode,
            dir=options.dir,
            tags=list(options.tags),
            config={naming.PARENT_TAG: key},
            reinit="create_new",
        )
        try:
            artifact = wandb.Artifact(f"{ep.name}-summary", type="tune_app-summary")
            artifact.add_file(str(ep.folder.spec))
            artifact.add_file(str(ep.folder.summary))
            run.log_artifact(artifact)
            run.summary.update({t.trial_id: naming.status(t) for t in summary.trials})
        finally:
            run.finish()

    warns._safely(finish)
