"""A full disk ends a run the way Ctrl-C does: one line naming the file and the errno, exit 74,
Tune's state saved whole and the files written still JSON, and `resume` completes the run once
space is freed, no (trial, iteration) row twice. On a 5 MB tmpfs, which needs root to mount (CI
runs as root); skipped where mounting is not permitted."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tune_app.rundir.layout import newest_state

from .conftest import ROOT
from .runs import grid_spec, started, wait_for, with_nodes

pytestmark = pytest.mark.e2e


@pytest.fixture
def small_disk(tmp_path):
    """A 5 MB tmpfs, unmounted after the test."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=5m", "tmpfs", str(disk)]
    try:
        done = subprocess.run(mount, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        pytest.skip("no mount command here: a 5 MB tmpfs cannot be made")
    if done.returncode != 0:
        pytest.skip(f"a 5 MB tmpfs cannot be mounted here (needs root): {done.stderr.strip()}")
    yield disk
    if subprocess.run(["umount", str(disk)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)  # a process lingers


def _fill(disk: Path) -> None:
    """Take every free byte of `disk` with one file."""
    with open(disk / "fill", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 2**20)
        except OSError as err:
            assert err.errno == errno.ENOSPC


def _tune_app(*args: object, cwd: Path) -> subprocess.Popen:
    # This checkout, in Ray's workers too.
    return started(*args, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _spec(folder: Path) -> None:
    with_nodes(folder, grid_spec(steps=8, sleep=0.5))  # reports and checkpoints each step


def test_a_disk_full_before_the_run_writes_nothing_and_says_so(small_disk, tmp_path, cli):
    _spec(tmp_path)
    _fill(small_disk)
    result = cli("run", tmp_path / "spec.yaml", "--storage-path", small_disk, "-q")
    assert result.code == 74
    assert result.err == (
        f"error: {small_disk}/.e.lock: No space left on device (errno 28); nothing ran: free "
        "space, then run it again\n"
    )
    assert os.listdir(small_disk) == ["fill"]


def test_a_disk_filling_up_mid_run_stops_it_resumably_and_resume_finishes(small_disk, tmp_path):
    _spec(tmp_path)
    folder = small_disk / "e"
    results = folder / "results.jsonl"
    proc = _tune_app("run", "spec.yaml", "--storage-path", small_disk, cwd=tmp_path)
    wait_for(lambda: results.exists() and results.read_text().count("\n") >= 2, proc)
    _fill(small_disk)
    out, err = proc.communicate(timeout=180)

    assert proc.returncode == 74, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    assert re.fullmatch(
        rf"error: {folder}/(results|finished)\.jsonl: No space left on device \(errno 28\); "
        rf"the run stopped with its state saved: free space, then "
        rf"python -m tune_app resume {folder}",
        errors[0],
    ), errors
    # What was written stays JSON: whole lines but for a torn last one, Tune's state whole.
    for name in ("results.jsonl", "finished.jsonl"):
        for line in (folder / name).read_text().split("\n")[:-1]:
            json.loads(line)
    state = newest_state(folder)
    assert state is not None and json.loads(state.read_text())["trial_data"]

    (small_disk / "fill").unlink()
    resumed = _tune_app("resume", folder, cwd=tmp_path)
    _, err = resumed.communicate(timeout=240)
    assert resumed.returncode == 0, err
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    done = sorted((r["trial_id"], r["training_iteration"]) for r in rows)
    assert len(done) == len(set(done)) == 3 * 8  # every iteration once, none twice
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["counts"] == {"TERMINATED": 3} and summary["interrupted"] is False
