"""Experiment trackers: `trackers:` checked before Ray starts, and what a run leaves in a real
MLflow server (read back with MlflowClient and seen in its UI in headless Chromium) and in W&B's
offline run files."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

import pytest

from tune_app.rundir.files import read_rows
from tune_app.rundir.layout import latest_results
from tune_app.rundir.records import RunSummary, TrialOutcome
from tune_app.spec import load
from tune_app.trackers import mirror, naming
from tune_app.trackers.mirror import Mirror
from tune_app.trackers.options import MlflowOptions, WandbOptions

from .browser import chromium, needs_chromium
from .conftest import ROOT, free_port, refused, user_module
from .runs import started, wait_for

# ---- checked before Ray starts ---------------------------------------------------------------

BASE = """
experiments:
  e:
    run: my_func
    config: {{alpha: {{grid_search: [0.2, 0.4]}}, beta: 1}}
    stop: {{training_iteration: 2}}
trackers:
  {trackers}
"""

BAD = [
    pytest.param(
        "mlflow: {tracking_uri: 'http://127.0.0.1:1', experiment_nam: x}",
        {},
        "trackers.mlflow.experiment_nam",
        ["unknown key 'experiment_nam'", "experiment_name", "did you mean 'experiment_name'"],
        id="unknown-option",
    ),
    pytest.param(
        "wandb: {mode: ofline}",
        {},
        "trackers.wandb.mode",
        ["'ofline' is not allowed", "online, offline", "did you mean 'offline'"],
        id="bad-mode",
    ),
    pytest.param(
        "mlflow: {save_artifact: 'yes'}",
        {},
        "trackers.mlflow.save_artifact",
        ["must be true or false, but got the text 'yes'"],
        id="option-of-another-kind",
    ),
    pytest.param(
        "mlfow: {}",
        {},
        "trackers.mlfow",
        ["unknown key 'mlfow'", "did you mean 'mlflow'"],
        id="unknown-tracker",
    ),
    pytest.param(
        "mlflow: {}",
        {"mlflow": None},
        "trackers.mlflow",
        ["needs the mlflow package, which is not installed", 'pip install -e ".[mlflow]"'],
        id="mlflow-not-installed",
    ),
    pytest.param(
        "wandb: {mode: offline}",
        {"wandb": None},
        "trackers.wandb",
        ['pip install -e ".[wandb]"'],
        id="wandb-not-installed",
    ),
    pytest.param(
        "wandb: {project: p}",
        {},
        "trackers.wandb",
        ["online mode needs an API key", "api.wandb.ai", "mode: offline"],
        id="online-without-key",
    ),
    pytest.param(
        "mlflow: {tracking_uri: 'file:runs/mlruns'}",
        {},
        "trackers.mlflow.tracking_uri",
        ["MLflow's file store", "sqlite:///runs/mlflow.db", "MLFLOW_ALLOW_FILE_STORE=true"],
        id="mlflow-file-store",
    ),
]


@pytest.fixture
def no_wandb_key(monkeypatch, tmp_path):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_BASE_URL", raising=False)
    (tmp_path / "netrc").write_text("machine example.org login u password p\n")
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))


@pytest.mark.parametrize("trackers, blocked, path, words", BAD)
def test_bad_trackers_give_one_line_before_anything_runs(
    cli, write_spec, tmp_path, monkeypatch, no_wandb_key, trackers, blocked, path, words
):
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    for module, value in blocked.items():  # a package not installed: its import fails
        monkeypatch.setitem(sys.modules, module, value)
    spec_file = write_spec(BASE.format(trackers=trackers))
    out = tmp_path / "out"
    refused(cli("run", spec_file, "--storage-path", out), *words, file=spec_file, path=path)
    assert not out.exists()


def test_online_wandb_runs_with_a_key_in_netrc(cli, write_spec, tmp_path, no_wandb_key):
    (tmp_path / "netrc").write_text("machine api.wandb.ai login user password k3y\n")
    result = cli("validate", write_spec(BASE.format(trackers="wandb: {project: p}")))
    assert result.code == 0, result.err


def test_an_experiments_tracker_entry_replaces_the_files(write_spec):
    spec = load(
        write_spec(
            """
trackers:
  mlflow: {tracking_uri: "sqlite:///top.db"}
  wandb: {mode: offline, project: top}
experiments:
  inherits: {run: my_func}
  replaces:
    run: my_func
    trackers:
      mlflow: {tracking_uri: "sqlite:///own.db", experiment_name: own}
      wandb: null
"""
        )
    )
    inherits, replaces = spec.experiments
    assert [(t.name, t.key_path) for t in inherits.trackers] == [
        ("mlflow", "trackers.mlflow"),
        ("wandb", "trackers.wandb"),
    ]
    assert [(t.name, t.key_path) for t in replaces.trackers] == [
        ("mlflow", "experiments.replaces.trackers.mlflow")
    ]
    assert replaces.trackers[0].options.experiment_name == "own"
    assert inherits.trackers[0].options.tracking_uri == "sqlite:///top.db"


@pytest.mark.parametrize(
    "result, step",
    [
        pytest.param({"training_iteration": 3}, 3, id="iteration"),
        pytest.param({"training_iteration": 3, "timesteps_total": 300}, 300, id="timesteps"),
        pytest.param(
            {"training_iteration": 2, "env_runners": {"num_env_steps_sampled_lifetime": 8000}},
            8000,
            id="rllib-env-steps",
        ),
    ],
)
def test_the_step_is_env_steps_when_reported_else_the_iteration(result, step):
    assert naming.step(result) == step


def test_metrics_are_the_finite_numbers_under_tunes_flat_names():
    found = naming.metrics(
        {"a": 1, "b": {"c": 2.5}, "nan": float("nan"), "s": "x", "done": True, "pid": 7}
    )
    assert found == {"a": 1.0, "b/c": 2.5}


def test_a_run_holds_the_specs_config_paths_and_with_seeds_its_seed_and_configuration():
    names = naming.Naming(
        experiment="e",
        spec_file="/s.yaml",
        search="random",
        scheduler="asha",
        seed=None,
        seeds=True,
        config_paths=("opt.lr", "c", "seed"),
        searched=("opt.lr", "seed"),
    )
    config = {"opt": {"lr": 0.1, "unwritten": 1}, "c": 7, "seed": 2, "env_extra": 3}
    assert names.params(config) == {"opt.lr": 0.1, "c": 7, "seed": 2}
    tags = names.tags("abc_00001", config)
    assert tags["tune_app.seed"] == "2"
    assert tags["tune_app.configuration"] == "opt.lr=0.1"
    assert (tags["tune_app.search"], tags["tune_app.scheduler"]) == ("random", "asha")
    assert naming.run_name("abc_00001") == tags[naming.TRIAL_TAG] == "abc_00001"


@pytest.mark.parametrize(
    "outcome, shown",
    [
        pytest.param(TrialOutcome("t", "TERMINATED", {}, 1.0, 3), "terminated", id="done"),
        pytest.param(
            TrialOutcome("t", "TERMINATED", {}, 1.0, 1, stopped_early=True),
            "stopped early",
            id="stopped",
        ),
        pytest.param(
            TrialOutcome("t", "ERROR", {}, None, 1, cause="ValueError"),
            "failed: ValueError",
            id="failed",
        ),
    ],
)
def test_a_trials_final_status(outcome, shown):
    assert naming.status(outcome) == shown


class Tags:
    """MLflow's client as `MlflowSink.finish` uses it: the tags set, by key."""

    def __init__(self):
        self.tags = {}

    def set_tag(self, run_id, key, value):
        self.tags[key] = value

    def set_terminated(self, run_id, status):
        pass


@pytest.mark.parametrize(
    "error, tag",
    [
        pytest.param(None, None, id="none"),
        pytest.param("", None, id="empty"),
        pytest.param("  \n\t\n ", None, id="blanks"),
        pytest.param("\nValueError: boom\n  at step 2\n", "ValueError: boom", id="first line"),
    ],
)
def test_mlflow_tags_a_failed_trials_error_by_its_first_line(tmp_path, error, tag):
    from tune_app.trackers.mlflow_runs import MlflowSink

    sink = MlflowSink(MlflowOptions(), _target(tmp_path))
    sink.client, sink.runs = Tags(), {"t": "run"}
    ended = TrialOutcome("t", "ERROR", {}, None, 1, error=error, cause="ValueError")
    sink.finish(RunSummary("e", "score", "max", 1.0, [ended]))
    assert sink.client.tags.get(naming.ERROR_TAG) == tag


# ---- the worker: what a tracker holds, and what a frozen one costs --------------------------


class Memory:
    """A sink keeping each trial's rows in memory; its connect waits on `gate` when given."""

    name = "Memory"

    def __init__(self, runs=None, gate=None):
        self.runs = {t: list(rows) for t, rows in (runs or {}).items()}
        self.gate = gate
        self.restarts = []
        self.finished = None

    def connect(self):
        if self.gate is not None:
            self.gate.wait()

    def open(self, trial_id, config):
        return [r.iteration for r in self.runs.setdefault(trial_id, [])]

    def log(self, trial_id, rows):
        self.runs[trial_id].extend(rows)

    def restart(self, trial_id, config, rows):
        self.runs[trial_id] = list(rows)
        self.restarts.append(trial_id)

    def close(self, trial_id, failed, local_path):
        pass

    def finish(self, summary):
        self.finished = summary

    def shutdown(self):
        pass


@pytest.fixture
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(mirror, "_WARNED", set())


class Journal:
    """results.jsonl as JsonlResults writes it: each result appended before the trackers see
    it, the config on a trial's first line."""

    def __init__(self, path):
        self.path = path
        self.configs = set()

    def report(self, trial_id, iteration, score, to=None):
        result = {"trial_id": trial_id, "training_iteration": iteration, "score": score}
        line = dict(result)
        if trial_id not in self.configs:
            self.configs.add(trial_id)
            line["config"] = {"x": 1}
        with self.path.open("a") as f:
            f.write(json.dumps(line) + "\n")
        if to is not None:
            to.result(trial_id, {"x": 1}, result)

    def truth(self):
        rows = defaultdict(list)
        for row in latest_results(read_rows(self.path.read_bytes())):
            rows[row["trial_id"]].append((row["training_iteration"], row["score"]))
        return dict(rows)


def _held(sink):
    return {t: [(r.iteration, r.metrics["score"]) for r in rows] for t, rows in sink.runs.items()}


def test_after_a_kill_and_resume_the_tracker_holds_what_results_jsonl_holds(
    tmp_path, fresh_warnings
):
    journal = Journal(tmp_path / "results.jsonl")
    first = Mirror(Memory(), journal.path)
    for i in (1, 2, 3, 4):  # trial a, no checkpoint: it starts over after the kill
        journal.report("a", i, 10 + i, first)
    for i in (1, 2):  # trial b: checkpointed at 1, killed after 2
        journal.report("b", i, 20 + i, first)
    assert first.stop(timeout=60)
    killed = first.sink.runs
    killed["a"].pop()  # the kill came before the tracker got a's last result
    journal.report("c", 1, 31)  # c ended in the killed run; its result never reached the tracker
    journal.report("c", 2, 32)

    second = Mirror(Memory(killed), journal.path)  # the resume
    second.start("a", {"x": 1})
    for i in (1, 2, 3):
        journal.report("a", i, 100 + i, second)
    for i in (2, 3):
        journal.report("b", i, 200 + i, second)
    second.reconcile()
    assert second.stop(timeout=60)

    assert _held(second.sink) == journal.truth()
    assert journal.truth()["a"] == [(1, 101), (2, 102), (3, 103)]
    assert journal.truth()["b"] == [(1, 21), (2, 202), (3, 203)]
    assert set(second.sink.restarts) == {"a", "b"}


def test_a_frozen_tracker_never_holds_the_driver_and_warns_once(tmp_path, capsys, fresh_warnings):
    journal = Journal(tmp_path / "results.jsonl")
    gate = threading.Event()
    frozen = Mirror(Memory(gate=gate), journal.path, capacity=3)
    for i in range(1, 21):  # the worker takes nothing: each call returns (put_nowait)
        journal.report("a", i, i, frozen)
    assert frozen.dropped == 20 - 3
    frozen.reconcile()
    assert not frozen.stop(timeout=0.05)  # left behind, not waited for
    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 1 and "the Memory tracker is not keeping up" in warnings[0]
    gate.set()


def test_results_dropped_while_a_tracker_was_slow_are_sent_when_the_experiment_ends(
    tmp_path, fresh_warnings
):
    journal = Journal(tmp_path / "results.jsonl")
    gate = threading.Event()
    slow = Mirror(Memory(gate=gate), journal.path, capacity=3)
    for i in range(1, 11):
        journal.report("a", i, i * i, slow)
    gate.set()
    slow.reconcile()
    assert slow.stop(timeout=60)
    assert _held(slow.sink) == journal.truth() and len(journal.truth()["a"]) == 10


class Failing(Memory):
    def log(self, trial_id, rows):
        raise ConnectionError("refused" + "." * 500 + " set FIX=true to go on\nmore")


def test_a_failing_tracker_is_one_warning_and_then_left_alone(tmp_path, capsys, fresh_warnings):
    journal = Journal(tmp_path / "results.jsonl")
    broken = Mirror(Failing(), journal.path)
    for i in (1, 2, 3):
        journal.report("a", i, i, broken)
    assert broken.stop(timeout=60)
    assert broken.failed
    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith(
        "warning: the Memory tracker failed (refused"
    )
    assert warnings[0].endswith(  # the first line, its end (what to do) kept, not cut off
        " set FIX=true to go on); the run goes on and its own files "
        "(results.jsonl, summary.json, TensorBoard) are complete"
    )


class LoggedTrial:
    """What Tune's JSON and CSV loggers read of a trial."""

    def __init__(self, folder):
        self.local_path = str(folder)
        self.trial_id = "t_00000"
        self.config = {"x": 1}
        self.checkpoint = None  # Tune's loggers restore nothing for a trial without one

    def init_local_path(self):
        Path(self.local_path).mkdir(parents=True, exist_ok=True)


def test_tunes_json_and_csv_logs_hold_what_results_jsonl_holds(tmp_path):
    """Killed after iteration 3, the trial resumed by a new process from iteration 1 and then
    restored in-process to iteration 2: result.json and progress.csv hold each iteration once,
    its latest value, as results.jsonl does (Tune's loggers append)."""
    from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback

    from tune_app.callbacks import TrialLogsFollowResults

    trial = LoggedTrial(tmp_path / "trial")
    trial.init_local_path()
    journal = Journal(tmp_path / "results.jsonl")

    def attempt(scores):
        callbacks = [TrialLogsFollowResults(), CSVLoggerCallback(), JsonLoggerCallback()]
        for callback in callbacks:
            callback.on_trial_start(0, [trial], trial)
        for step, score in scores:
            journal.report(trial.trial_id, step, score)
            result = {"training_iteration": step, "score": score, "config": {"x": 1}}
            for callback in callbacks:
                callback.on_trial_result(0, [trial], trial, dict(result))
        for callback in callbacks[1:]:
            for file in callback._trial_files.values():
                file.close()

    attempt([(1, 1.0), (2, 2.0), (3, 3.0)])
    attempt([(1, 10.0), (2, 20.0), (3, 30.0), (2, 40.0)])
    expected = journal.truth()[trial.trial_id]
    assert expected == [(1, 10.0), (2, 40.0)]
    lines = (tmp_path / "trial" / "result.json").read_text().splitlines()
    assert [(r["training_iteration"], r["score"]) for r in map(json.loads, lines)] == expected
    with (tmp_path / "trial" / "progress.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(int(r["training_iteration"]), float(r["score"])) for r in rows] == expected


class StagedTrial(LoggedTrial):
    """A trial whose logs Tune writes in a staging folder and copies to `path`."""

    def __init__(self, staging, folder, filesystem):
        super().__init__(staging)
        self.path = str(folder)
        self.storage = type("Storage", (), {"storage_filesystem": filesystem})()


@pytest.mark.parametrize("ending", ["on_trial_complete", "on_trial_error"])
def test_an_ended_trials_logs_reach_the_run_folder_as_it_ends(tmp_path, ending):
    """Tune copies its staging folder at its state saves; a driver killed between a trial's end
    and the next copy left the run folder's result.json a line short of results.jsonl."""
    import pyarrow.fs

    from tune_app.callbacks import TrialLogsFollowResults

    staging, folder = tmp_path / "staging" / "t", tmp_path / "run" / "t"
    staging.mkdir(parents=True)
    folder.mkdir(parents=True)
    lines = [json.dumps({"training_iteration": i}) for i in (1, 2, 3)]
    (staging / "result.json").write_text("\n".join(lines) + "\n")
    (staging / "progress.csv").write_text("training_iteration\n1\n2\n3\n")
    (folder / "result.json").write_text("\n".join(lines[:2]) + "\n")  # Tune's last copy
    trial = StagedTrial(staging, folder, pyarrow.fs.LocalFileSystem())
    getattr(TrialLogsFollowResults(), ending)(0, [trial], trial)
    assert (folder / "result.json").read_text().splitlines() == lines
    assert (folder / "progress.csv").read_text().split() == ["training_iteration", "1", "2", "3"]
    assert sorted(p.name for p in folder.iterdir()) == ["progress.csv", "result.json"]

    # A run folder in cloud storage is left to Tune's copies.
    elsewhere = tmp_path / "bucket" / "t"
    remote = pyarrow.fs.SubTreeFileSystem(str(tmp_path), pyarrow.fs.LocalFileSystem())
    trial = StagedTrial(staging, elsewhere, remote)
    getattr(TrialLogsFollowResults(), ending)(0, [trial], trial)
    assert not elsewhere.exists()


def _target(folder, experiment="e"):
    return mirror.Target(
        experiment=experiment,
        naming=naming.Naming(
            experiment=experiment,
            spec_file=str(folder / "spec.yaml"),
            search="grid",
            scheduler="fifo",
            seed=None,
            seeds=False,
            config_paths=("x",),
            searched=("x",),
        ),
        key=f"{folder}@2026-01-01T00:00:00",
        results=folder / "results.jsonl",
        spec=folder / "spec.yaml",
        summary=folder / "summary.json",
    )


def _summary(*trial_ids):
    return RunSummary(
        "e", "score", "max", 1.0, [TrialOutcome(t, "TERMINATED", {}, 1.0, 3) for t in trial_ids]
    )


def test_mlflow_after_a_resume_under_a_path_with_a_quote(
    tmp_path, monkeypatch, fresh_warnings, capsys
):
    """Runs found again by hex tags only: a quote in the results path is just a path."""
    pytest.importorskip("mlflow")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # MLflow's default artifact root is ./mlruns: not written
    from tune_app.trackers.mlflow_runs import MlflowSink

    folder = tmp_path / 'it\'s "here"'
    folder.mkdir()
    (folder / "spec.yaml").write_text("e: {run: my_func}\n")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    options = MlflowOptions(tracking_uri=uri)
    journal = Journal(folder / "results.jsonl")
    first = Mirror(MlflowSink(options, _target(folder)), journal.path)
    for i in (1, 2, 3):
        journal.report("a", i, 10 + i, first)
    assert first.stop(timeout=120)
    second = Mirror(MlflowSink(options, _target(folder)), journal.path)  # a resume
    for i in (1, 2):
        journal.report("a", i, 100 + i, second)  # a started over
    journal.report("b", 1, 7)  # ended unsent in the killed run
    (folder / "summary.json").write_text("{}")
    second.reconcile()
    second.finish(_summary("a", "b"))
    assert second.stop(timeout=120)
    assert "warning" not in capsys.readouterr().err

    client = _client(uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == "e"]
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if naming.PARENT_TAG in r.data.tags]
    trials = {r.data.tags[naming.TRIAL_TAG]: r for r in runs if naming.TRIAL_TAG in r.data.tags}
    assert len(parents) == 1 and len(runs) == 3 and set(trials) == {"a", "b"}
    for trial_id, expected in journal.truth().items():
        run = trials[trial_id]
        history = client.get_metric_history(run.info.run_id, "score")
        assert sorted((m.step, m.value) for m in history) == expected
        assert run.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert run.data.tags[naming.STATUS_TAG] == "terminated"
        assert run.info.status == "FINISHED"  # b's too, written here for a killed run's trial
    # The artifacts (spec, summary) beside the database, where `validate` checked it may write.
    assert experiment.artifact_location == (tmp_path / "mlruns").as_uri()
    assert list((tmp_path / "mlruns").rglob("spec.yaml")) and not list(elsewhere.iterdir())
    assert parents[0].info.status == "FINISHED"


def _history_items(record) -> dict:
    return {"/".join(i.nested_key) or i.key: json.loads(i.value_json) for i in record.history.item}


WANDB_FIRST = """
import sys
from pathlib import Path
from tests.test_trackers import Journal, _target
from tune_app.trackers.mirror import Mirror
from tune_app.trackers.options import WandbOptions
from tune_app.trackers.wandb_runs import WandbSink

folder = Path(sys.argv[1])
journal = Journal(folder / "results.jsonl")
first = Mirror(WandbSink(WandbOptions(mode="offline", project="p", dir="runs"), _target(folder)),
               journal.path)
for i in (1, 2, 3):
    journal.report("a", i, 10 + i, first)
journal.report("b", 1, 5, first)
assert first.stop(timeout=120)
"""


@pytest.mark.slow  # an in-process run: the second tier
def test_wandb_offline_runs_are_whole_in_the_dir_after_a_resume(
    tmp_path, monkeypatch, fresh_warnings, capsys
):
    """The first attempt in a process of its own, as a killed run is; the resumed one goes
    back twice (a started over, b restored in this process), each trial one whole run."""
    pytest.importorskip("wandb")
    from tune_app.trackers.wandb_runs import WandbSink

    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "spec.yaml").write_text("e: {run: my_func}\n")
    first = subprocess.run(
        [sys.executable, "-c", WANDB_FIRST, str(folder)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert first.returncode == 0, first.stderr
    assert len(list((tmp_path / "runs" / "wandb").glob("offline-run-*-b"))) == 1
    journal = Journal(folder / "results.jsonl")
    journal.configs = {"a", "b"}
    options = WandbOptions(mode="offline", project="p", dir="runs")
    second = Mirror(WandbSink(options, _target(folder)), journal.path)
    for i in (1, 2):
        journal.report("a", i, 100 + i, second)  # a started over
    for i in (2, 3, 2):
        journal.report("b", i, 6 + i, second)  # b went on, then was restored to 1 in-process
    (folder / "summary.json").write_text("{}")
    second.reconcile()
    second.finish(_summary("a", "b"))
    assert second.stop(timeout=120)
    assert "warning" not in capsys.readouterr().err

    seen, summaries = {}, []
    for path in sorted((tmp_path / "runs" / "wandb").glob("offline-run-*/run-*.wandb")):
        records = _wandb_records(path)
        print(path, path.stat().st_size, [r.WhichOneof("record_type") for r in records])
        (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
        if run.job_type == "summary":
            summaries.append(run.run_id)
            continue
        trial_id = run.display_name
        assert trial_id not in seen, "a trial's earlier run is still there"
        seen[trial_id] = [
            (items["training_iteration"], items["score"])
            for r in records
            if r.WhichOneof("record_type") == "history"
            for items in [_history_items(r)]
        ]
    assert seen == journal.truth()
    assert len(summaries) == 1


# ---- against a real MLflow server ------------------------------------------------------------

FAILING = """
from ray import tune


def train(config):
    for i in range(1, 4):
        if config["x"] == 3 and i == 2:
            raise ValueError("boom at step 2")
        tune.report({"score": config["x"] * i, "loss": 1.0 / i, "inner": {"v": i * 0.5}})
"""

SMOKE = """
metric: score
mode: max
trackers:
  mlflow: {{tracking_uri: "{uri}", experiment_name: smoke, tags: {{team: t}}}}
  wandb: {{mode: offline, project: smoke, dir: "{wandb_dir}"}}
expect: {{max_errored_trials: 1}}
experiments:
  grid:
    run: failing:train
    max_failures: 1  # the failing trial is retried once: still one run, no step twice
    config:
      x: {{grid_search: [1, 2, 3]}}
      c: 7
      opt: {{lr: 0.1}}
"""


def _cli(*args, cwd, env=None):
    extra = {"PYTHONPATH": str(ROOT), "WANDB_SILENT": "true", **(env or {})}
    # A run starts its own W&B service, as from a shell: wandb puts the token of the service
    # this test process started (an earlier test's W&B) in os.environ, and a child joining it
    # shares its runs, so a killed run's open run id stayed "in use" for the resume.
    inherited = {k: v for k, v in os.environ.items() if k != "WANDB_SERVICE"}
    return started(*args, cwd=cwd, env={**inherited, **extra})


def _kill_midway(run, results, low, high):
    """kill -9 the run's process group once one trial has ended at step 3 and the other is
    at a step in [low, high)."""

    def midway() -> bool:
        rows = _rows(results) if results.exists() else {}
        steps = sorted(rows[t][-1]["training_iteration"] for t in rows)
        return len(steps) == 2 and steps[0] == 3 and low <= steps[1] < high

    wait_for(midway, run, seconds=240, every=0.2)
    os.killpg(run.pid, signal.SIGKILL)
    run.communicate()


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """`mlflow server` on a free port of 127.0.0.1, a SQLite store and a local artifact root."""
    folder = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "mlflow"),
            "server",
            "--backend-store-uri",
            f"sqlite:///{folder / 'mlflow.db'}",
            "--default-artifact-root",
            str(folder / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "server.log", "w"),  # noqa: SIM115  # closed with the process
        start_new_session=True,
    )
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        assert server.poll() is None, (folder / "server.log").read_text()[-2000:]
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=5) as answer:
                if answer.status == 200:
                    break
        except OSError:
            pass
        assert time.monotonic() < deadline, "mlflow server never answered"
        time.sleep(0.5)
    yield uri
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def _client(uri):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _rows(path: Path) -> dict[str, list[dict]]:
    out = defaultdict(list)
    for line in path.read_text().splitlines():
        row = json.loads(line)
        out[row["trial_id"]].append(row)
    return out


@pytest.fixture(scope="module")
def smoke_run(mlflow_server, tmp_path_factory):
    """A grid of three trials, one failing at its second step (retried once), logged to MLflow
    and W&B."""
    folder = tmp_path_factory.mktemp("smoke")
    (folder / "failing.py").write_text(FAILING)
    spec = folder / "spec.yaml"
    spec.write_text(SMOKE.format(uri=mlflow_server, wandb_dir=folder / "wandb"))
    run = _cli("run", spec, "--storage-path", folder / "out", cwd=folder)
    out, err = run.communicate(timeout=400)
    assert run.returncode == 0, err
    assert "warning" not in err, err
    return folder, spec


@pytest.mark.e2e
def test_mlflow_holds_every_trial_as_the_run_folder_does(mlflow_server, smoke_run):
    folder, spec = smoke_run
    client = _client(mlflow_server)
    experiment = client.get_experiment_by_name("smoke")
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if naming.PARENT_TAG in r.data.tags]
    trials = {r.data.tags[naming.TRIAL_TAG]: r for r in runs if naming.TRIAL_TAG in r.data.tags}
    rows = _rows(folder / "out" / "grid" / "results.jsonl")
    summary = json.loads((folder / "out" / "grid" / "summary.json").read_text())
    assert len(runs) == 4 and len(parents) == 1
    assert set(trials) == set(rows) and len(trials) == 3
    (parent,) = parents
    for trial_id, run in trials.items():
        assert run.info.run_name == trial_id
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        config = rows[trial_id][0]["config"]
        assert run.data.params == {"x": str(config["x"]), "c": "7", "opt.lr": "0.1"}
        tags = run.data.tags
        assert tags["team"] == "t"
        assert tags["tune_app.experiment"] == "grid"
        assert tags["tune_app.spec"] == str(spec.resolve())
        assert (tags["tune_app.search"], tags["tune_app.scheduler"]) == ("grid", "fifo")
        for key in ("score", "loss", "inner/v", "training_iteration"):
            history = client.get_metric_history(run.info.run_id, key)
            logged = sorted((m.step, m.value) for m in history)
            flat = [(r["training_iteration"], _get(r, key)) for r in rows[trial_id]]
            assert logged == flat, key
        ended = {t["trial_id"]: t for t in summary["trials"]}[trial_id]
        if config["x"] == 3:
            assert run.info.status == "FAILED"
            assert tags[naming.STATUS_TAG] == "failed: ValueError"
            assert "boom at step 2" in tags[naming.ERROR_TAG]
            assert ended["status"] == "ERROR" and ended["failures"] == 2
        else:
            assert run.info.status == "FINISHED"
            assert tags[naming.STATUS_TAG] == "terminated"
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert artifacts == {"spec.yaml", "summary.json"}
    local = client.download_artifacts(parent.info.run_id, "summary.json")
    assert Path(local).read_text() == (folder / "out" / "grid" / "summary.json").read_text()
    assert parent.info.status == "FINISHED" and parent.info.run_name == "grid"


def _get(row: dict, key: str):
    node = row
    for part in key.split("/"):
        node = node[part]
    return node


def _wandb_records(path: Path) -> list:
    """The records of a W&B offline run file, each a protobuf `Record` (`wandb_runs.records`)."""
    from tune_app.trackers.wandb_runs import records

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    return list(records(data))


@pytest.mark.e2e
def test_wandb_offline_runs_hold_the_same_metrics(smoke_run):
    folder, _ = smoke_run
    rows = _rows(folder / "out" / "grid" / "results.jsonl")
    summary = json.loads((folder / "out" / "grid" / "summary.json").read_text())
    files = sorted((folder / "wandb" / "wandb").glob("offline-run-*/run-*.wandb"))
    seen, ends = {}, []
    for path in files:
        records = _wandb_records(path)
        (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
        assert run.run_group == "grid" and run.project == "smoke"
        if run.job_type == "summary":  # the group's own run: the spec and summary.json
            ends.append(records)
            continue
        config = {c.key: json.loads(c.value_json) for c in run.config.update}
        assert config["tune_app.trial_id"] == run.display_name and config["c"] == 7
        assert run.display_name not in seen  # one run per trial, its retry included
        history = []
        for r in records:
            if r.WhichOneof("record_type") == "history":
                items = {
                    "/".join(i.nested_key) or i.key: json.loads(i.value_json)
                    for i in r.history.item
                }
                history.append((items["training_iteration"], items["score"], items["inner/v"]))
        seen[run.display_name] = history
    assert set(seen) == set(rows)
    for trial_id, history in seen.items():
        expected = [(r["training_iteration"], r["score"], r["inner"]["v"]) for r in rows[trial_id]]
        assert history == expected
    (end,) = ends
    files_logged = {
        entry.path
        for r in end
        if r.WhichOneof("record_type") == "artifact"
        for entry in r.artifact.manifest.contents
    }
    assert files_logged == {"spec.yaml", "summary.json"}
    statuses = {}
    for r in end:
        if r.WhichOneof("record_type") == "summary":
            statuses.update({i.key: json.loads(i.value_json) for i in r.summary.update})
    for trial in summary["trials"]:
        shown = "failed: ValueError" if trial["status"] == "ERROR" else "terminated"
        assert statuses[trial["trial_id"]] == shown


def _visible_text(html: str) -> str:
    html = re.sub(r"<(style|script)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def _render(url: str, tmp_path: Path) -> str:
    done = chromium(url, tmp_path / "chromium-profile", "--dump-dom", budget_ms=20000)
    return _visible_text(done.stdout)


@pytest.mark.e2e
@needs_chromium
def test_the_mlflow_ui_shows_the_experiment_and_its_runs(mlflow_server, smoke_run, tmp_path):
    client = _client(mlflow_server)
    experiment = client.get_experiment_by_name("smoke")
    listed = _render(f"{mlflow_server}/#/experiments", tmp_path)
    assert re.search(r"\bsmoke\b", listed), listed[:2000]
    runs = _render(f"{mlflow_server}/#/experiments/{experiment.experiment_id}/runs", tmp_path)
    assert re.search(r"\bgrid\b", runs) and "4 matching runs" in runs, runs[:2000]
    (failed,) = [
        r for r in client.search_runs([experiment.experiment_id]) if r.info.status == "FAILED"
    ]
    page = _render(
        f"{mlflow_server}/#/experiments/{experiment.experiment_id}/runs/{failed.info.run_id}",
        tmp_path,
    )
    for shown in (failed.info.run_name, "Parent run grid", "failed: ValueError", "opt.lr"):
        assert shown in page, page[:3000]


RESUMED = """
metric: score
mode: max
trackers:
  mlflow: {{tracking_uri: "{uri}", experiment_name: resumed}}
experiments:
  e:
    run: steps:train
    config:
      x: 1
      steps: {{grid_search: [3, 14]}}
      sleep: 0.4
"""


@pytest.mark.e2e
def test_a_killed_and_resumed_run_continues_the_same_runs_without_duplicate_steps(
    mlflow_server, tmp_path
):
    user_module("checkpointed_steps.py", tmp_path, "steps.py")
    spec = tmp_path / "spec.yaml"
    spec.write_text(RESUMED.format(uri=mlflow_server))
    results = tmp_path / "out" / "e" / "results.jsonl"
    run = _cli("run", spec, "--storage-path", tmp_path / "out", cwd=tmp_path)
    _kill_midway(run, results, 6, 14)
    resumed = _cli("resume", tmp_path / "out" / "e", cwd=tmp_path)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err

    client = _client(mlflow_server)
    experiment = client.get_experiment_by_name("resumed")
    runs = client.search_runs([experiment.experiment_id])
    trials = [r for r in runs if naming.TRIAL_TAG in r.data.tags]
    assert len(runs) == 3 and len(trials) == 2  # one parent, one run per trial
    rows = _rows(results)
    for run_ in trials:
        trial_id = run_.data.tags[naming.TRIAL_TAG]
        history = client.get_metric_history(run_.info.run_id, "score")
        steps = [m.step for m in history]
        assert len(steps) == len(set(steps)), f"{trial_id} logged steps twice: {sorted(steps)}"
        assert sorted((m.step, m.value) for m in history) == [
            (r["training_iteration"], r["score"]) for r in rows[trial_id]
        ]
        assert run_.info.status == "FINISHED"


STARTS_OVER = """
import time

from ray import tune


def train(config):
    for i in range(1, config["steps"] + 1):  # no checkpoint: a resumed trial starts over
        time.sleep(config["sleep"])
        tune.report({"score": time.time_ns() % 100003})  # another value in another attempt
"""


@pytest.mark.e2e
def test_after_kill_and_resume_every_tracker_holds_what_results_jsonl_holds(
    mlflow_server, tmp_path
):
    """A trial without checkpoints killed mid-way starts over on resume: MLflow, W&B offline,
    TensorBoard and Tune's result.json hold each iteration once, results.jsonl's value."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (tmp_path / "noisy.py").write_text(STARTS_OVER)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"""
metric: score
mode: max
trackers:
  mlflow: {{tracking_uri: "{mlflow_server}", experiment_name: started_over}}
  wandb: {{mode: offline, project: p, dir: runs}}
experiments:
  e:
    run: noisy:train
    config: {{steps: {{grid_search: [3, 12]}}, sleep: 0.4}}
"""
    )
    results = tmp_path / "out" / "e" / "results.jsonl"
    run = _cli("run", spec, "--storage-path", tmp_path / "out", cwd=tmp_path)
    _kill_midway(run, results, 5, 12)
    before = _rows(results)
    resumed = _cli("resume", tmp_path / "out" / "e", cwd=tmp_path)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert "warning" not in err, err

    truth: dict[str, list] = defaultdict(list)
    for row in latest_results(read_rows(results.read_bytes())):
        truth[row["trial_id"]].append((row["training_iteration"], row["score"]))
    (long,) = [t for t in truth if len(truth[t]) == 12]
    assert truth[long][:3] != [(r["training_iteration"], r["score"]) for r in before[long][:3]]

    client = _client(mlflow_server)
    experiment = client.get_experiment_by_name("started_over")
    runs = client.search_runs([experiment.experiment_id])
    trials = {r.data.tags[naming.TRIAL_TAG]: r for r in runs if naming.TRIAL_TAG in r.data.tags}
    assert set(trials) == set(truth)
    for trial_id, run_ in trials.items():
        history = client.get_metric_history(run_.info.run_id, "score")
        assert sorted((m.step, m.value) for m in history) == truth[trial_id], "MLflow"

    wandb_runs = {}
    for path in (tmp_path / "runs" / "wandb").glob("offline-run-*/run-*.wandb"):
        records = _wandb_records(path)
        (info,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
        if info.job_type != "summary":
            assert info.display_name not in wandb_runs, "two W&B runs of one trial"
            wandb_runs[info.display_name] = [
                (items["training_iteration"], items["score"])
                for r in records
                if r.WhichOneof("record_type") == "history"
                for items in [_history_items(r)]
            ]
    assert wandb_runs == truth, "W&B"

    for logged in (tmp_path / "out" / "e").glob("*/result.json"):
        lines = [json.loads(line) for line in logged.read_text().splitlines()]
        trial_id = lines[0]["trial_id"]
        assert [(r["training_iteration"], r["score"]) for r in lines] == truth[trial_id]
        events = EventAccumulator(str(logged.parent))
        events.Reload()
        shown = [(e.step, e.value) for e in events.Scalars("0_spec/score")]
        assert shown == [(i, pytest.approx(v)) for i, v in truth[trial_id]], "TensorBoard"


@pytest.mark.e2e
def test_an_unreachable_tracker_is_one_warning_and_the_run_is_whole(
    ray_session, cli, write_spec, tmp_path, fresh_warnings
):
    """In this process, on the session's Ray: what it checks is the run's files and warnings,
    not its process (a frozen tracker's is, below)."""
    port = free_port()  # nothing listens there
    spec = write_spec(
        """
trackers:
  mlflow: {tracking_uri: "http://127.0.0.1:PORT"}
experiments:
  e:
    run: my_func
    config: {alpha: {grid_search: [0.2, 0.4]}, beta: 1}
    stop: {training_iteration: 3}
""".replace("PORT", str(port))
    )
    run = cli("run", spec, "--storage-path", tmp_path / "out")
    err = run.err
    assert run.code == 0, err
    warnings = [line for line in err.splitlines() if "MLflow tracker failed" in line]
    assert len(warnings) == 1, err
    rows = _rows(tmp_path / "out" / "e" / "results.jsonl")
    assert len(rows) == 2 and all(len(r) == 3 for r in rows.values())
    summary = json.loads((tmp_path / "out" / "e" / "summary.json").read_text())
    assert [t["status"] for t in summary["trials"]] == ["TERMINATED", "TERMINATED"]


@pytest.fixture
def frozen_server():
    """A TCP server on 127.0.0.1 that accepts every connection and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    held, done = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not done.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    done.set()
    thread.join()
    for one in held:
        one.close()
    server.close()


@pytest.mark.e2e
def test_a_frozen_tracker_server_costs_the_search_a_bounded_wait(frozen_server, tmp_path):
    """Each MLflow request would wait 600 s for an answer: the search ends all the same, after
    at most the drain bound (1 s here), with one warning naming the tracker."""
    (tmp_path / "spec.yaml").write_text(
        f"""
trackers:
  mlflow: {{tracking_uri: "{frozen_server}"}}
experiments:
  e:
    run: my_func
    config: {{alpha: {{grid_search: [0.2, 0.4]}}, beta: 1}}
    stop: {{training_iteration: 3}}
"""
    )
    env = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "600", "TUNE_APP_TRACKER_DRAIN_S": "1"}
    run = _cli(
        "run", tmp_path / "spec.yaml", "--storage-path", tmp_path / "out", cwd=tmp_path, env=env
    )
    out, err = run.communicate(timeout=300)  # far less than one request's 600 s
    assert run.returncode == 0, err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert warnings == [
        "warning: the MLflow tracker did not answer within 1 s and was left behind; the run "
        "goes on and its own files (results.jsonl, summary.json, TensorBoard) are complete"
    ], err
    rows = _rows(tmp_path / "out" / "e" / "results.jsonl")
    assert len(rows) == 2 and all(len(r) == 3 for r in rows.values())
