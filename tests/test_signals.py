"""SIGTERM and SIGHUP end a run as Ctrl-C does, at any moment: the state is saved, the summary is
marked interrupted, the resume command is printed, and the exit code is 128 + the signal's
number. The signal goes to the whole process group, as `timeout` and Slurm send it. And the Ray
a run starts for itself listens on loopback only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, user_module

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

SPEC = """
metric: score
mode: max
experiments:
  e:
    run: nodes:train
    config:
      x: {grid_search: [1, 2, 3]}
      steps: 5
      sleep: 1.0
"""


def _start(tmp_path: Path, *args: str) -> subprocess.Popen:
    for name in ("nodes.py", "helper.py"):
        user_module(name, tmp_path)
    (tmp_path / "spec.yaml").write_text(SPEC)
    return subprocess.Popen(
        [sys.executable, "-m", "tune_app", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, which the signal is sent to
    )


def _wait_for(condition, proc: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def _rows(folder: Path) -> list[tuple[str, int]]:
    lines = (folder / "results.jsonl").read_text().splitlines()
    return [(r["trial_id"], r["training_iteration"]) for r in map(json.loads, lines)]


@pytest.mark.parametrize(
    ("sig", "code"),
    [
        pytest.param(signal.SIGTERM, 143, id="SIGTERM"),
        pytest.param(signal.SIGHUP, 129, id="SIGHUP"),
    ],
)
def test_a_signal_while_trials_run_saves_the_state_and_resume_finishes(tmp_path, sig, code):
    folder = tmp_path / "out" / "e"
    proc = _start(tmp_path, "run", "spec.yaml", "--storage-path", "out")
    results = folder / "results.jsonl"
    _wait_for(lambda: results.exists() and len(results.read_text().splitlines()) >= 2, proc)
    os.killpg(proc.pid, sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    assert "Traceback" not in err and "SIGTERM received" not in err
    assert f"Continue with: python -m tune_app resume {folder}" in err
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert not (tmp_path / "out" / ".e.lock").exists()  # the folder's lock went with the run
    before = _rows(folder)
    resumed = subprocess.run(
        [sys.executable, "-m", "tune_app", "resume", str(folder), "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    after = _rows(folder)
    assert after[: len(before)] == before and len(after) == len(set(after)) == 15
    final = json.loads((folder / "summary.json").read_text())
    assert final["interrupted"] is False and final["counts"] == {"TERMINATED": 3}


def test_a_signal_while_ray_starts_is_an_interruption(tmp_path):
    proc = _start(tmp_path, "run", "spec.yaml", "--storage-path", "out")
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("tune_app: starting")  # printed before Ray starts
    os.killpg(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "interrupted" in err


LISTENING = """
import os, sys
import ray
from tune_app import api, cluster

def listening(pids):
    inodes = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if link.startswith("socket:["):
                    inodes[link[8:-1]] = pid
        except OSError:
            pass
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in inodes:  # 0A: LISTEN
                found.append(parts[1].split(":")[0])
    return found

def tree(pid):
    out = [pid]
    for p in out:
        for t in os.listdir(f"/proc/{p}/task"):
            try:
                out += [int(c) for c in open(f"/proc/{p}/task/{t}/children").read().split()]
            except OSError:
                pass
    return out

plan = api.validate(sys.argv[1])
with cluster.ray_for(plan, None, 0):
    ray.get(ray.remote(lambda: 1).remote())  # a worker too
    print(" ".join(listening(tree(os.getpid()))))
"""
# 127.0.0.1 as /proc/net/tcp writes it, and as an IPv4-mapped IPv6 address (tcp6).
LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


def test_the_local_ray_listens_on_loopback_only(tmp_path):
    for name in ("nodes.py", "helper.py"):
        user_module(name, tmp_path)
    (tmp_path / "spec.yaml").write_text(SPEC)
    out = subprocess.run(
        [sys.executable, "-c", LISTENING, str(tmp_path / "spec.yaml")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    addresses = out.stdout.split()
    assert len(addresses) >= 4, out  # the GCS, the raylet, the driver's and a worker's servers
    assert set(addresses) <= LOOPBACK, addresses
