"""One writer per run folder: a run holds its folder's lock for its whole life, a second writer
(run or resume) is refused with one line naming the live process, and a crashed run's lock is
never stale."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.conftest import ROOT, results_of
from tests.runs import grid_spec, wait_for, with_nodes
from tune_app.rundir.location import RunLocation
from tune_app.rundir.lock import FolderBusy, hold

TRY_LOCK = (
    "import sys\n"
    "from pathlib import Path\n"
    "from tune_app.rundir.location import RunLocation\n"
    "from tune_app.rundir.lock import FolderBusy, hold\n"
    "try:\n"
    "    with hold([RunLocation(Path(sys.argv[1]))], resuming=sys.argv[2] == '1'):\n"
    "        print('held')\n"
    "except FolderBusy as err:\n"
    "    print(err)\n"
)


def _try(folder, resuming=False) -> str:
    out = subprocess.run(
        [sys.executable, "-c", TRY_LOCK, str(folder), "1" if resuming else "0"],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=True,
    )  # fmt: skip
    return out.stdout.strip()


def test_a_second_writer_is_refused_naming_the_live_one(tmp_path):
    folder = tmp_path / "results" / "e"
    with hold([RunLocation(folder)]):
        refused = _try(folder)
        assert f"pid {os.getpid()}" in refused and "still going" in refused
        assert str(folder) in refused and "\n" not in refused
        assert "still being run" in _try(folder, resuming=True)
    assert _try(folder) == "held"  # released on leaving
    assert not (tmp_path / "results").exists()  # the lock's folders, made for it, are gone


@pytest.mark.parametrize("linked", ["storage", "experiment"])
def test_a_folder_reached_through_a_symlink_has_the_same_lock(tmp_path, linked):
    """A resume through a symlink to a live run's folder ran every trial a second time."""
    folder = tmp_path / "results" / "e"
    folder.mkdir(parents=True)
    if linked == "storage":
        (tmp_path / "link").symlink_to(tmp_path / "results")
        other = tmp_path / "link" / "e"
    else:
        (tmp_path / "link-e").symlink_to(folder)
        other = tmp_path / "link-e"
    with hold([RunLocation(folder)]):
        assert "still being run" in _try(other, resuming=True)
        assert f"pid {os.getpid()}" in _try(other)
    with hold([RunLocation(other)]):
        assert f"pid {os.getpid()}" in _try(folder)
    assert _try(other) == "held"


def test_a_killed_run_leaves_no_stale_lock(tmp_path):
    folder = tmp_path / "e"
    holder = subprocess.Popen(
        [sys.executable, "-c", TRY_LOCK.replace("print('held')", "print('held', flush=True); "
         "import time; time.sleep(60)"), str(folder), "0"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert f"pid {holder.pid}" in _try(folder)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        assert _try(folder) == "held"
    finally:
        holder.kill()


def test_locks_are_all_or_none(tmp_path):
    a, b = RunLocation(tmp_path / "a"), RunLocation(tmp_path / "b")
    with hold([b]):
        with pytest.raises(FolderBusy):
            with hold([a, b]):
                pass  # pragma: no cover
        with hold([a]):  # a was let go when b was refused
            pass


@pytest.mark.e2e
@pytest.mark.ray
def test_two_runs_of_one_spec_never_merge_and_a_live_run_is_not_resumed(tmp_path):
    """Two runs started together into one folder merged their trials; a resume of a live run
    re-ran its finished trials and the original exited 130. A second run now writes beside."""
    spec = with_nodes(tmp_path, grid_spec(xs=(1, 2), steps=4, sleep=1.5))
    command = [sys.executable, "-m", "tune_app", "run", str(spec), "-q"]
    command += ["--storage-path", str(tmp_path / "out")]
    first = subprocess.Popen(command, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    folder = tmp_path / "out" / "e"
    wait_for((folder / "run.json").exists, first)
    resume = [sys.executable, "-m", "tune_app", "resume", str(folder), "-q"]
    again = subprocess.run(resume, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "still being run" in again.stderr, again.stderr
    assert f"pid {first.pid}" in again.stderr and "Traceback" not in again.stderr
    # A second run writes beside the live one, never into it.
    second = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert first.wait(timeout=300) == 0, first.stderr.read() if first.stderr else ""
    for each in (folder, tmp_path / "out" / "e_2"):
        rows = results_of(each)
        seen = [(r["trial_id"], r["training_iteration"]) for r in rows]
        assert len(seen) == len(set(seen)) == 8  # 2 trials x 4 steps, written once
        assert json.loads((each / "summary.json").read_text())["counts"] == {"TERMINATED": 2}


def test_best_of_a_run_still_going_says_so_in_one_line(tmp_path, cli):
    from tests.test_reruns import _scored
    from tune_app.rundir.lock import Owner, writer_of

    run = RunLocation(_scored(tmp_path / "net"))
    assert writer_of(run) is None
    quiet = cli("best", run.local)
    assert quiet.code == 0 and quiet.err == ""
    with hold([run]):  # the lock of a live run: this process
        assert writer_of(run) == Owner.parse(run.lock_file.read_text())
        going = cli("best", run.local)
    assert going.code == 0 and going.out == quiet.out
    assert going.err.count("\n") == 1
    assert f"tune_app: {run.local} is still being run (host " in going.err
    assert f"pid {os.getpid()}" in going.err and "best so far and may change" in going.err
    run.lock_file.write_text(json.dumps({"host": os.uname().nodename, "pid": 2**22 + 1,
                                         "started": "x"}))  # fmt: skip
    assert writer_of(run) is None  # left by a run killed with -9: its process is gone
