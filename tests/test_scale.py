"""Searches at scale: Tune's copy command pickled into every reused actor stays a few bytes
whatever the search's size, results.jsonl's writer keeps no config of an ended trial, and a
spec of many experiments runs at most `driver_slots` drivers at once, the rest queued."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import ROOT, results_of
from tune_app.callbacks import JsonlResults
from tune_app.ray_internals import uploads
from tune_app.rundir.location import RunLocation
from tune_app.runner.drivers import DRIVER_BYTES, MAX_DRIVERS_ENV, driver_slots

GB = 2**30


def _pickled_command(tmp_path: Path, files: int) -> bytes:
    """Tune's syncer after it copied a folder of `files` files, as a reset pickles it."""
    import pyarrow.fs
    from ray import cloudpickle
    from ray.train._internal import storage

    staging, run = tmp_path / f"staging{files:05d}", tmp_path / f"run{files:05d}"
    staging.mkdir()
    for i in range(files):
        (staging / f"result{i}.json").write_text("{}")
    syncer = storage._FilesystemSyncer(pyarrow.fs.LocalFileSystem(), sync_period=0)
    with uploads.whole_file_uploads():
        syncer.sync_up(str(staging), str(run))
        syncer.wait()
        assert len(list(run.iterdir())) == files  # copied, through the app's upload
        return cloudpickle.dumps(syncer)


def test_the_copy_command_a_reset_pickles_does_not_carry_what_was_copied(tmp_path):
    small, large = _pickled_command(tmp_path, 2), _pickled_command(tmp_path, 400)
    assert len(large) == len(small)  # the function by name, not a closure over `copied`


def test_pickling_the_copy_command_while_a_copy_runs_is_safe(tmp_path):
    """The mechanism of "dictionary changed size during iteration": a thread adding to what
    the upload has copied while the main thread pickles the command."""
    from ray import cloudpickle

    stop = threading.Event()

    def copying() -> None:
        i = 0
        while not stop.is_set():
            uploads._copied[f"/x/{i}"] = (i, i)
            i += 1

    thread = threading.Thread(target=copying, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            assert cloudpickle.loads(cloudpickle.dumps(uploads.upload)) is uploads.upload
    finally:
        stop.set()
        thread.join()
        uploads._copied.clear()


@pytest.mark.parametrize(
    ("experiments", "memory", "env", "slots"),
    [
        pytest.param(50, 23 * GB, None, int(23 * GB * 0.25 // DRIVER_BYTES), id="23GB-machine"),
        pytest.param(50, 128 * GB, None, 50, id="large-machine-all-at-once"),
        pytest.param(3, 23 * GB, None, 3, id="few-experiments"),
        pytest.param(50, GB, None, 1, id="small-machine-one-at-a-time"),
        pytest.param(50, 128 * GB, "4", 4, id="env-overrides"),
        pytest.param(2, 128 * GB, "4", 2, id="env-above-count"),
        pytest.param(50, 23 * GB, "0", 14, id="env-zero-ignored"),
    ],
)
def test_driver_slots(monkeypatch, experiments, memory, env, slots):
    if env is None:
        monkeypatch.delenv(MAX_DRIVERS_ENV, raising=False)
    else:
        monkeypatch.setenv(MAX_DRIVERS_ENV, env)
    assert driver_slots(experiments, memory) == slots


QUEUED = """
metric: score
mode: max
experiments:
{experiments}
"""
STEPS = """
import time
from ray import tune

def train(config):
    for i in range(3):
        time.sleep(0.3)
        tune.report({"score": i, "at": time.time()})
"""


@pytest.mark.e2e
@pytest.mark.ray
def test_experiments_beyond_the_slots_wait_their_turn(tmp_path):
    names = ["a", "b", "c"]
    (tmp_path / "steps.py").write_text(STEPS)
    block = "".join(f"  {n}:\n    run: steps:train\n" for n in names)
    (tmp_path / "spec.yaml").write_text(QUEUED.format(experiments=block))
    env = {**os.environ, MAX_DRIVERS_ENV: "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "tune_app", "run", "spec.yaml", "--storage-path", "out", "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    spans = []
    for name in names:
        rows = results_of(tmp_path / "out" / name)
        assert len(rows) == 3
        spans.append((min(r["at"] for r in rows), max(r["at"] for r in rows)))
    # One driver at a time: each experiment's results all come before the next one's.
    assert spans == sorted(spans)
    assert all(a_end < b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False))


def test_the_results_writer_keeps_no_config_of_an_ended_trial(tmp_path):
    """It keeps a trial's config to write it again when PBT changes it; once the trial ended
    nothing more is written of it, and a search of thousands of RLlib trials would hold every
    one's config to the end of the run."""
    from types import SimpleNamespace

    log = JsonlResults(RunLocation(tmp_path), "e")
    for n in range(100):
        trial = SimpleNamespace(trial_id=f"t{n}", config={"lr": n, "model": list(range(50))})
        trial.run_metadata = SimpleNamespace(num_failures=0)
        log.on_trial_result(0, [], trial, {"training_iteration": 1, "score": n})
        trial.last_result = {"training_iteration": 1}
        (log.on_trial_complete if n % 2 else log.on_trial_error)(0, [], trial)
    assert log._configs == {}
    rows = results_of(tmp_path)
    assert [r["config"]["lr"] for r in rows] == list(range(100))  # each written once, whole
