"""Results on S3: against a local S3-compatible server (moto's server mode on 127.0.0.1), a search
writes its trials, checkpoints and the app's files to `s3://`, `analyze` reads them back, and a
cloud folder is leased to one run. A killed search resumed from the bucket on another machine is
the cluster tutorial's test, in tests/test_cluster.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.runs import grid_spec, started, with_nodes
from tests.s3_server import keys, moto_s3, read

# These start Ray clusters, servers and drivers of their own.
pytestmark = [pytest.mark.e2e, pytest.mark.ray]


BUCKET = "results"


@pytest.fixture(scope="module")
def s3():
    """A local S3 server with one bucket; yields the environment that points at it."""
    with moto_s3(BUCKET) as env:
        yield env


def _keys(env, prefix):
    return keys(env, BUCKET, prefix)


def _read(env, key):
    return read(env, BUCKET, key)


def _tune_app(env, staging, *args, cwd):
    return started(*args, cwd=cwd, env={**env, "TUNE_APP_STAGING": str(staging)})


def test_a_search_writes_to_s3_and_is_read_back_from_it(s3, tmp_path, monkeypatch):
    spec = with_nodes(tmp_path, grid_spec(xs=(1, 2), steps=3, sleep=0.05))
    uri = f"s3://{BUCKET}/first"
    run = _tune_app(s3, tmp_path / "staging", "run", spec, "--storage-path", uri, cwd=tmp_path)
    _, err = run.communicate(timeout=180)
    assert run.returncode == 0, err

    keys = _keys(s3, "first/e/")
    assert {"run.json", "spec.yaml", "results.jsonl", "finished.jsonl", "summary.json"} <= keys
    assert any(k.startswith("experiment_state-") for k in keys)
    checkpoints = [k for k in keys if "/checkpoint_" in k and k.endswith("step.json")]
    assert len(checkpoints) == 6  # 2 trials x 3 steps, written by the workers themselves
    assert json.loads(_read(s3, "first/e/summary.json"))["counts"] == {"TERMINATED": 2}

    # Read back from the bucket alone, in a fresh staging folder.
    for key, value in s3.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TUNE_APP_STAGING", str(tmp_path / "elsewhere"))
    from tune_app.cli import main

    analyzed = subprocess.run(
        [sys.executable, "-m", "tune_app", "analyze", uri, "--format", "json"],
        env={**s3, "TUNE_APP_STAGING": str(tmp_path / "elsewhere")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert analyzed.returncode == 0, analyzed.stderr
    (read,) = json.loads(analyzed.stdout)
    assert read["folder"] == f"{uri}/e" and read["best"]["params"] == {"x": 2}
    assert [t["iterations"] for t in read["trials"]] == [3, 3]

    # This machine's staging folder is a writer's (a live run's, perhaps): reading the run from
    # the bucket leaves it alone.
    from tune_app.rundir.storage import staging_dir

    monkeypatch.setenv("TUNE_APP_STAGING", str(tmp_path / "staging"))
    live = staging_dir(f"{uri}/e") / "results.jsonl"
    live.parent.mkdir(parents=True, exist_ok=True)
    live.write_text("a live run's row\n")
    assert main(["analyze", uri]) == 0 and main(["best", uri]) == 0
    assert live.read_text() == "a live run's row\n"
    live.unlink()

    # A second run writes beside the first, and the experiment's folder reads as the newest.
    spec.write_text(grid_spec(xs=(1, 2), steps=2, sleep=0.05))
    again = _tune_app(s3, tmp_path / "staging", "run", spec, "--storage-path", uri, cwd=tmp_path)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0 and f"results: {uri}/e_2" in out, err
    assert json.loads(_read(s3, "first/e/summary.json"))["counts"] == {"TERMINATED": 2}
    analyzed = subprocess.run(
        [sys.executable, "-m", "tune_app", "analyze", f"{uri}/e", "--format", "json"],
        env={**s3, "TUNE_APP_STAGING": str(tmp_path / "elsewhere")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    (read,) = json.loads(analyzed.stdout)
    assert read["folder"] == f"{uri}/e_2" and [t["iterations"] for t in read["trials"]] == [2, 2]
    assert main(["analyze", f"s3://{BUCKET}/nothing"]) == 2


def test_a_cloud_folder_is_leased_to_one_run(s3, monkeypatch):
    """Cloud storage has no locks: the run writes a lease (owner and heartbeat) beside its
    folder, a second writer is refused while it is fresh, and a crashed run's lease expires."""
    from tune_app.rundir import lock, storage
    from tune_app.rundir.location import RunLocation

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"):
        monkeypatch.setenv(key, s3[key])
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3["AWS_ENDPOINT_URL"])
    monkeypatch.setattr(lock, "SETTLE_S", 0.1)
    where = RunLocation.for_experiment(f"s3://{BUCKET}/leases", "e")
    with lock.hold([where]):
        held = json.loads(storage.read_text(where.parent, ".e.lock") or "{}")
        assert held["pid"] == os.getpid()
        with pytest.raises(lock.FolderBusy, match=f"pid {os.getpid()}"):
            with lock.hold([where]):
                pass  # pragma: no cover
    assert storage.read_text(where.parent, ".e.lock") is None  # released: the lease is gone
    import socket as socket_

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True).stdout.strip()  # fmt: skip
    killed_here = {"host": socket_.gethostname(), "pid": int(gone), "started": "then",
                   "heartbeat": time.time()}  # fmt: skip
    storage.write_text(where.parent, ".e.lock", json.dumps(killed_here))
    with lock.hold([where]):  # a fresh lease of a process of this host that is gone
        pass
    crashed = {"host": "elsewhere", "pid": 1, "started": "then", "heartbeat": time.time() - 3600}
    storage.write_text(where.parent, ".e.lock", json.dumps(crashed))
    with lock.hold([where]):  # a lease not renewed for an hour is a crashed run's
        assert json.loads(storage.read_text(where.parent, ".e.lock") or "{}")["pid"] == os.getpid()
