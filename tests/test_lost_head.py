"""A lost Ray head (its GCS killed) or Tune's own loop raising ends a run with one line naming
the cause and the resume command, exit 75 (EX_TEMPFAIL), the summary written and marked
interrupted; `resume` then finishes the rest without running a finished trial again."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest

import tune_app
from tests.conftest import user_module
from tests.runs import gcs_of, grid_spec, rows, started, wait_for, with_nodes
from tune_app import head
from tune_app.callbacks import JsonlResults
from tune_app.errors import TuneFailure
from tune_app.rundir.location import RunLocation


@pytest.mark.e2e
@pytest.mark.ray
def test_a_killed_gcs_ends_the_run_with_the_resume_command_and_resume_finishes(tmp_path):
    with_nodes(tmp_path, grid_spec(sleep=0.5))
    # Ray's own window before its processes give up on a lost GCS: 60 s, shortened here (the
    # watch acts at half of it).
    env = {**os.environ, head.RECONNECT_ENV: "10"}
    proc = started("run", "spec.yaml", "--storage-path", "out", cwd=tmp_path, env=env, quiet=False)
    folder = tmp_path / "out" / "e"
    journal = folder / "finished.jsonl"  # a trial ended: one to check is not run again
    wait_for(lambda: journal.exists() and journal.read_text().strip(), proc, seconds=180)
    gcs = gcs_of(proc.pid)
    assert gcs is not None, "no gcs_server among the run's children"
    os.kill(gcs, signal.SIGKILL)
    out, err = proc.communicate(timeout=120)

    assert proc.returncode == 75, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # not Ray's "Failed to connect to GCS" line, no traceback
    assert lines[0].startswith("error: the Ray head (GCS) at 127.0.0.1:"), err
    assert lines[0].endswith(f"Continue with: python -m tune_app resume {folder}"), err
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["interrupted"] is True
    before = rows(folder)
    finished = {t for t, i in before if i == 5}

    command = lines[0].split("Continue with: ", 1)[1].split()
    resumed = subprocess.run(
        [sys.executable, *command[1:], "-q"], cwd=tmp_path, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    after = rows(folder)
    assert len(after) == len(set(after)) == 15
    # A trial that had finished is not run again: its rows stay as they were, none twice. (An
    # unfinished one starts again from the checkpoint Tune saved last, which may be older than
    # its last row: the rows after it are reported again.)
    assert finished and all(
        [r for r in after if r[0] == done] == [r for r in before if r[0] == done]
        for done in finished
    )
    final = json.loads((folder / "summary.json").read_text())
    assert final["interrupted"] is False and final["counts"] == {"TERMINATED": 3}


def test_the_watch_calls_on_lost_once_the_head_stays_unreachable():
    server = socket.create_server(("127.0.0.1", 0))
    address = f"127.0.0.1:{server.getsockname()[1]}"
    lost: list[str] = []
    called = threading.Event()

    def on_lost(failure: TuneFailure) -> None:
        lost.append(str(failure))
        called.set()

    watch = head.HeadWatch(address, on_lost, grace=1.0).start()
    try:
        assert not called.wait(2.5)  # reachable: nothing happens
        server.close()
        assert called.wait(10)
    finally:
        watch.stop()
    assert lost == [str(TuneFailure.head_lost(address))]


@pytest.mark.parametrize(
    ("answers", "node_alive", "said"),
    [
        pytest.param(True, True, None, id="head-up: the trial's own failure"),
        pytest.param(False, True, "stopped answering", id="gcs-gone"),
        # raylet stopped before the GCS: the GCS answers, and is not said to have stopped
        pytest.param(True, False, "reports this driver's Ray node dead", id="this-node-dead"),
    ],
)
def test_a_trial_failing_as_the_head_is_lost_ends_the_run_unrecorded(
    tmp_path, monkeypatch, answers, node_alive, said
):
    # Its actor died with the head: Tune fails it (ActorDiedError) within seconds, long before
    # the watch's grace, and the run ended as a failed search that resume did not run again.
    import ray

    monkeypatch.setattr(ray, "get_runtime_context", lambda: SimpleNamespace(get_node_id=str))
    monkeypatch.setattr(ray, "nodes", lambda: [{"NodeID": "", "Alive": node_alive}])
    server = socket.create_server(("127.0.0.1", 0))
    address = f"127.0.0.1:{server.getsockname()[1]}"
    if not answers:
        server.close()
    lost: list[str] = []

    def on_lost(failure: TuneFailure) -> None:  # as `end_for_lost_head`, which ends the process
        lost.append(str(failure))
        raise SystemExit(75)

    log = JsonlResults(RunLocation(tmp_path), "e")
    trial = SimpleNamespace(trial_id="a", last_result={}, run_metadata=SimpleNamespace())
    trial.run_metadata.num_failures = 1
    with head.watched(address, on_lost), contextlib.suppress(SystemExit):
        log.on_trial_error(0, [], trial)
    server.close()
    assert lost == (
        [f"the Ray head (GCS) at {address} {said}; nothing was saved to resume: run it again"]
        if said
        else []
    )
    assert (tmp_path / "finished.jsonl").exists() is (said is None)  # resume runs it again


def test_a_trial_failing_with_the_head_in_an_experiments_own_driver_ends_it_unrecorded(
    tmp_path, monkeypatch
):
    # With several experiments each is driven by a Ray actor of its own, where no head was
    # watched: the failure was recorded and the run ended as a failed search (exit 1).
    import ray

    from tune_app.runner import drivers

    server = socket.create_server(("127.0.0.1", 0))
    address = f"127.0.0.1:{server.getsockname()[1]}"
    server.close()
    monkeypatch.setattr(ray, "get_runtime_context", lambda: SimpleNamespace(gcs_address=address))

    def exit_now(code: int) -> None:  # as `os._exit`, which would end pytest
        raise SystemExit(code)

    monkeypatch.setattr(os, "_exit", exit_now)
    log = JsonlResults(RunLocation(tmp_path), "e")
    trial = SimpleNamespace(trial_id="a", last_result={}, run_metadata=SimpleNamespace())
    trial.run_metadata.num_failures = 1
    monkeypatch.setattr(drivers, "run_experiment", lambda *_: log.on_trial_error(0, [], trial))
    with pytest.raises(SystemExit) as ended:
        drivers.ExperimentDriver().run(*[None] * 4)  # type: ignore[arg-type]
    assert ended.value.code == 75  # for the run's driver to end the run
    assert not (tmp_path / "finished.jsonl").exists()


@pytest.mark.parametrize(
    ("window", "grace"),
    [
        pytest.param(None, 30.0, id="ray-default"),
        pytest.param("10", 5.0, id="shortened"),
        pytest.param("1", 2.0, id="at-least-two-probes"),
        pytest.param("soon", 30.0, id="not-a-number"),
    ],
)
def test_the_grace_is_half_of_rays_reconnect_window(monkeypatch, window, grace):
    if window is None:
        monkeypatch.delenv(head.RECONNECT_ENV, raising=False)
    else:
        monkeypatch.setenv(head.RECONNECT_ENV, window)
    assert head.grace_s() == grace


@pytest.mark.parametrize(
    ("failure", "starts"),
    [
        pytest.param(
            TuneFailure.head_lost("10.0.0.1:6379"), "the Ray head (GCS) at 10.0.0.1:6379", id="head"
        ),
        pytest.param(
            TuneFailure.loop_raised(RuntimeError("dictionary changed size\nduring iteration")),
            "Tune's own loop failed (RuntimeError: dictionary changed size)",
            id="loop",
        ),
        pytest.param(
            TuneFailure.loop_raised(
                RuntimeError("Traceback (most recent call last):\n  File x\nTypeError: '>' no")
            ),
            "Tune's own loop failed (RuntimeError: TypeError: '>' no)",
            id="loop-traceback",
        ),
    ],
)
def test_a_tune_failure_is_one_line_with_the_resume_command(failure, starts):
    assert failure.exit_code == 75
    assert str(failure).startswith(starts)
    assert str(failure).endswith("nothing was saved to resume: run it again")
    failure.resumed_by("python -m tune_app resume 'out/e 1'")
    text = str(failure)
    assert "\n" not in text and text.startswith(starts)
    assert text.endswith("the state is saved. Continue with: python -m tune_app resume 'out/e 1'")
    assert str(pickle_round_trip(failure)) == text  # as it comes back from an experiment's actor


def pickle_round_trip(error: TuneFailure) -> TuneFailure:
    import pickle

    return pickle.loads(pickle.dumps(error))


LOOP_RAISES = """
import sys
from ray.tune.execution.tune_controller import TuneController
from tune_app.cli import main

step = TuneController.step

def failing(self):  # as Tune's actor reuse once failed, after a trial ended
    step(self)
    if any(t.status == "TERMINATED" for t in self.get_trials()):
        raise RuntimeError("dictionary changed size during iteration")

TuneController.step = failing
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.e2e
@pytest.mark.ray
def test_tunes_own_loop_raising_ends_the_run_with_the_resume_command(tmp_path):
    # In a process of its own, as a run is: the driver that failed is gone before the resume.
    user_module("trial_resources.py", tmp_path)  # one result per trial
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(grid_spec("trial_resources:train", sleep=0))
    folder = tmp_path / "out" / "e"
    run = [sys.executable, "-c", LOOP_RAISES, "run", "spec.yaml", "--storage-path", "out", "-q"]
    failed = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert failed.returncode == 75, failed.stderr
    assert failed.stderr.strip().splitlines()[-1] == (
        "error: Tune's own loop failed (RuntimeError: dictionary changed size during "
        f"iteration); the state is saved. Continue with: python -m tune_app resume {folder}"
    )
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["counts"].get("TERMINATED", 0) >= 1
    resume = [sys.executable, "-m", "tune_app", "resume", str(folder), "-q"]
    resumed = subprocess.run(resume, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    final = json.loads((folder / "summary.json").read_text())
    assert final["interrupted"] is False and final["counts"] == {"TERMINATED": 3}
    assert len(rows(folder)) == len(set(rows(folder))) == 3


def _loop_raises_once_a_trial_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tune's loop (in this process) raises, as a bug of Tune's would, once a trial ended."""
    from ray.tune.execution.tune_controller import TuneController

    step = TuneController.step

    def failing(self):
        step(self)
        if any(t.status == "TERMINATED" for t in self.get_trials()):
            raise RuntimeError("dictionary changed size during iteration")

    monkeypatch.setattr(TuneController, "step", failing)


@pytest.mark.slow  # three runs in one process, one of them failed and resumed
def test_a_run_after_a_failed_and_resumed_one_in_the_same_process_writes_its_own_results(
    ray_session, tmp_path, monkeypatch
):
    # The Python API in one process: Tune's loop raises, the run is resumed, then another run
    # of an experiment of the same name. Its rows went to the resumed run's folder (where the
    # resume had said experiment 'e' was, for the rest of the process) and it had none.
    user_module("trial_resources.py", tmp_path)  # one result per trial
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = grid_spec("trial_resources:train", sleep=0)
    (tmp_path / "spec.yaml").write_text(spec)
    _loop_raises_once_a_trial_ends(monkeypatch)
    with pytest.raises(TuneFailure):
        tune_app.run(tmp_path / "spec.yaml", storage_path=tmp_path / "failed")
    monkeypatch.undo()
    monkeypatch.syspath_prepend(str(tmp_path))
    resumed = tune_app.resume(tmp_path / "failed" / "e")
    assert resumed.summaries[0].counts == {"TERMINATED": 3}
    before = rows(tmp_path / "failed" / "e")

    again = tune_app.run(tmp_path / "spec.yaml", storage_path=tmp_path / "again")
    assert again.summaries[0].counts == {"TERMINATED": 3}
    assert len(set(rows(tmp_path / "again" / "e"))) == 3
    assert rows(tmp_path / "failed" / "e") == before  # none of the new run's rows


@pytest.mark.slow  # an in-process run: the second tier
def test_a_run_whose_loop_raised_ends_its_trackers_with_the_saved_summary(
    ray_session, tmp_path, monkeypatch
):
    # Its MLflow runs stayed RUNNING and its tracker's thread lived on for the rest of the
    # process: only a run that reached its end finished its trackers.
    import mlflow

    user_module("trial_resources.py", tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)  # MLflow puts a SQL store's artifacts in ./mlruns
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    spec = grid_spec("trial_resources:train", sleep=0)
    (tmp_path / "spec.yaml").write_text(f'{spec}trackers:\n  mlflow: {{tracking_uri: "{uri}"}}\n')
    _loop_raises_once_a_trial_ends(monkeypatch)
    with pytest.raises(TuneFailure):
        tune_app.run(tmp_path / "spec.yaml", storage_path=tmp_path / "o")
    assert not [t.name for t in threading.enumerate() if t.name.endswith(" tracker")]
    runs = mlflow.MlflowClient(uri).search_runs(
        [e.experiment_id for e in mlflow.MlflowClient(uri).search_experiments()]
    )
    assert runs and {r.info.status for r in runs} <= {"FINISHED", "KILLED", "FAILED"}
