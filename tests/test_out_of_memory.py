"""A trial that Ray's memory monitor kills is one failed trial, classed "out of memory", and the
search goes on: with two experiments (each driven by its own Ray actor), the trials of both
finish, and the run exits 1 with its summary. The monitor's threshold is set, for the local Ray
the run starts, just above the memory this machine has in use: the trial with x == 2 crosses it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import ROOT, user_module

pytestmark = pytest.mark.e2e

GB = 2**30
# e's trials one after the other, so the one taking memory starts last of the live trials: Ray's
# monitor kills the newest first, and would take an innocent newer trial before it.
SPEC = """
metric: score
mode: max
experiments:
  e:
    run: memory_hog:Hog
    stop: {training_iteration: 4}
    max_concurrent_trials: 1
    config:
      x: {grid_search: [1, 2]}
      sleep: 0.3
      gb: 5
  f:
    run: memory_hog:Hog
    stop: {training_iteration: 12}
    config: {x: 3, sleep: 0.5}
"""


def _memory() -> tuple[int, int]:
    """The machine's memory and the memory in use, as Ray's monitor counts them (bytes)."""
    with open("/proc/meminfo") as f:
        info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}
    return info["MemTotal"], info["MemTotal"] - info["MemAvailable"]


def test_a_trial_killed_for_memory_fails_as_such_and_the_search_goes_on(tmp_path):
    total, used = _memory()
    if total - used < 6 * GB:
        pytest.skip("needs 6 GB of free memory: a trial takes 2 GB before Ray kills it")
    user_module("memory_hog.py", tmp_path)
    (tmp_path / "spec.yaml").write_text(SPEC)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),  # this checkout, in Ray's workers too
        # Read by the raylet as it starts: kill once 2 GB more are in use (Ray's own processes
        # take under 1 GB of it), look every 100 ms, and free no more than the memory over the
        # line: Ray's default margin, 5% of the memory, could take another worker with it.
        "RAY_memory_usage_threshold": f"{(used + 2 * GB) / total:.4f}",
        "RAY_memory_monitor_refresh_ms": "100",
        "RAY_max_kill_memory_buffer_bytes": str(100 * 2**20),
    }
    run = subprocess.run(
        [sys.executable, "-m", "tune_app", "run", "spec.yaml", "--storage-path", "out", "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "error:" not in run.stderr, run.stderr[-3000:]
    assert "1 of 2 trials errored (1 by out of memory)" in run.stderr

    e = json.loads((tmp_path / "out" / "e" / "summary.json").read_text())
    by_x = {t["config"]["x"]: t for t in e["trials"]}
    assert by_x[2]["status"] == "ERROR" and by_x[2]["cause"] == "out of memory"
    assert "killed due to the node running low on memory" in by_x[2]["error"]
    assert by_x[1]["status"] == "TERMINATED" and by_x[1]["iterations"] == 4
    assert e["failed"] == {"out of memory": [by_x[2]["trial_id"]]}
    f = json.loads((tmp_path / "out" / "f" / "summary.json").read_text())
    assert f["counts"] == {"TERMINATED": 1} and f["trials"][0]["iterations"] == 12
    assert "failed, out of memory (1)" in run.stdout  # the summary, printed
