"""MLflow's side of a tracker: one parent run per run of an experiment (the spec, then
summary.json), one child run per trial, on MLflow's own client.

Runs are found again by tags whose values are hex (the parent's key hashed, MLflow's own run
ids): no filter string holds a path or a name, so a results path with a quote in it is just a
path. A trial's run that must drop values (the trial went back to an earlier iteration) is
deleted and written again: MLflow keeps every value logged at a step and cannot remove one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from typing import TYPE_CHECKING, Any

from tune_app.rundir import allowed
from tune_app.rundir.records import ERRORED, FINISHED
from tune_app.trackers import naming
from tune_app.trackers.mirror import Row, Target

if TYPE_CHECKING:
    from tune_app.rundir.records import RunSummary
    from tune_app.trackers.options import MlflowOptions

# A tracker server that does not answer costs the worker seconds, not MLflow's minutes of retries.
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
# MLflow prints a "View run ... at" line per run ended: the app's console is its own.
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
_BATCH = 1000  # MLflow's most metrics in one log_batch call
_PARAMS = 100  # and params
_PAGE = 1000
_ENDED = {FINISHED: "FINISHED", ERRORED: "FAILED"}  # a trial's status -> its run's


def parent_key(key: str) -> str:
    """The parent run's tag value: this run of the experiment's key, hashed to hex."""
    return hashlib.sha256(key.encode()).hexdigest()[:32]


class MlflowSink:
    name = "MLflow"

    def __init__(self, options: MlflowOptions, target: Target) -> None:
        self.options = options
        self.target = target
        self.client: Any = None
        self.experiment_id = ""
        self.parent = ""
        self.runs: dict[str, str] = {}  # trial id -> its run id

    def connect(self) -> None:
        """The MLflow experiment (MLFLOW_EXPERIMENT_ID's where it names one, else the one of
        our name, made if new) and the parent run, found again by its key on resume."""
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=self.options.tracking_uri)
        given = os.environ.get("MLFLOW_EXPERIMENT_ID")
        found = None
        if given is not None:
            with contextlib.suppress(MlflowException):
                found = self.client.get_experiment(given)
        name = self.options.experiment_name or self.target.experiment
        found = found or self.client.get_experiment_by_name(name)
        self.experiment_id = (
            found.experiment_id
            if found is not None
            else self.client.create_experiment(
                name, artifact_location=artifact_location(self.options.tracking_uri)
            )
        )
        key = parent_key(self.target.key)
        parents = self._search(f"tags.`{naming.PARENT_TAG}` = '{key}'")
        if parents:
            self.parent = parents[0].info.run_id
            self.client.update_run(self.parent, status="RUNNING")
            for run in self._search(f"tags.`mlflow.parentRunId` = '{self.parent}'"):
                trial_id = run.data.tags.get(naming.TRIAL_TAG)
                if trial_id is not None:
                    self.runs[trial_id] = run.info.run_id
            return
        tags = {
            **self.options.tags,
            naming.PARENT_TAG: key,
            naming.TAG + "spec": self.target.naming.spec_file,
            naming.TAG + "experiment": self.target.experiment,
        }
        run = self.client.create_run(self.experiment_id, run_name=self.target.experiment, tags=tags)
        self.parent = run.info.run_id
        if self.target.spec.exists():
            self.client.log_artifact(self.parent, str(self.target.spec))

    def _search(self, filter_string: str) -> list[Any]:
        """Every active run of the experiment matching `filter_string` (built from hex only)."""
        found: list[Any] = []
        token = None
        while True:
            page = self.client.search_runs(
                [self.experiment_id], filter_string, max_results=_PAGE, page_token=token
            )
            found.extend(page)
            token = page.token
            if not token:
                return found

    def _create(self, trial_id: str, config: dict[str, Any]) -> str:
        from mlflow.entities import Param

        tags = {**self.options.tags, **self.target.naming.tags(trial_id, config)}
        tags["mlflow.parentRunId"] = self.parent
        run_id = str(
            self.client.create_run(
                self.experiment_id, run_name=naming.run_name(trial_id), tags=tags
            ).info.run_id
        )
        params = [Param(k, str(v)[:6000]) for k, v in self.target.naming.params(config).items()]
        for at in range(0, len(params), _PARAMS):
            self.client.log_batch(run_id, params=params[at : at + _PARAMS])
        self.runs[trial_id] = run_id
        return run_id

    def open(self, trial_id: str, config: dict[str, Any]) -> list[int]:
        run_id = self.runs.get(trial_id)
        if run_id is None:
            self._create(trial_id, config)
            return []
        self.client.update_run(run_id, status="RUNNING")
        history = self.client.get_metric_history(run_id, naming.ITERATION)
        return sorted(int(m.value) for m in history)

    def log(self, trial_id: str, rows: list[Row]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        found = [Metric(k, v, now, r.step) for r in rows for k, v in r.metrics.items()]
        for start in range(0, len(found), _BATCH):
            self.client.log_batch(self.runs[trial_id], metrics=found[start : start + _BATCH])

    def restart(self, trial_id: str, config: dict[str, Any], rows: list[Row]) -> None:
        old = self.runs.get(trial_id)
        if old is not None:
            self.client.delete_run(old)
        self._create(trial_id, config)
        self.log(trial_id, rows)

    def close(self, trial_id: str, failed: bool, local_path: str | None) -> None:
        run_id = self.runs[trial_id]
        self.client.set_tag(run_id, naming.STATUS_TAG, "failed" if failed else "terminated")
        if self.options.save_artifact and local_path:
            self.client.log_artifacts(run_id, local_path)
        self.client.set_terminated(run_id, "FAILED" if failed else "FINISHED")

    def finish(self, summary: RunSummary) -> None:
        """Each trial's final status and error, summary.json on the parent, which ends."""
        for outcome in summary.trials:
            run_id = self.runs.get(outcome.trial_id)
            if run_id is None:
                continue
            self.client.set_tag(run_id, naming.STATUS_TAG, naming.status(outcome))
            if error := naming.error(outcome):
                self.client.set_tag(run_id, naming.ERROR_TAG, error)
            # Also a run written again here for a trial that ended in a killed run.
            self.client.set_terminated(run_id, _ENDED.get(outcome.status, "KILLED"))
        if self.parent:
            if self.target.summary.exists():
                self.client.log_artifact(self.parent, str(self.target.summary))
            self.client.set_terminated(self.parent, "KILLED" if summary.interrupted else "FINISHED")

    def shutdown(self) -> None:
        pass


def artifact_location(tracking_uri: str | None) -> str | None:
    """Where a new experiment of a SQLite store keeps its artifacts: `mlruns` beside the
    database, in the folder `allowed` checked (MLflow's default is `./mlruns` in the working
    folder of whichever process makes the experiment: the tracker's worker, under Ray's); None
    where the store decides (a file store, a server)."""
    if not tracking_uri or not tracking_uri.startswith("sqlite:"):
        return None
    folder = allowed.local_store(tracking_uri)
    return None if folder is None else (folder.absolute() / "mlruns").as_uri()
