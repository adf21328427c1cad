"""A real two-node Ray cluster on this machine (`ray start --head` and a node joining it, both on
127.0.0.1): a search run with `--address` spreads its trials over both nodes, the user's modules
reach the workers through Ray's runtime env, and a killed driver's search resumes from another
process against the same cluster and storage."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import free_port, user_module

# These start Ray clusters, servers and drivers of their own.
pytestmark = [pytest.mark.e2e, pytest.mark.ray]

RAY = str(Path(sys.executable).with_name("ray"))


SPEC = """
metric: score
mode: max
experiments:
  spread:
    run: nodes:train
    config:
      x: {{grid_search: [1, 2, 3, 4]}}
      steps: {steps}
      sleep: {sleep}
"""


def _env() -> dict[str, str]:
    return {**os.environ, "RAY_AUTH_MODE": "token"}


def _stop(procs: list[subprocess.Popen]) -> None:
    """End the nodes this test started (and only those): their process groups."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in procs:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(p.poll() is None for p in procs):
            time.sleep(0.2)
        time.sleep(1 if sig == signal.SIGTERM else 0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Head and one joining node, one CPU each, on 127.0.0.1; yields the address."""
    if not Path.home().joinpath(".ray", "auth_token").exists():
        subprocess.run([RAY, "get-auth-token", "--generate"], env=_env(), check=True, timeout=60)
    port = free_port()
    address = f"127.0.0.1:{port}"
    logs = tmp_path_factory.mktemp("cluster")
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--block"]
    procs = []
    try:
        for name, args in [
            ("head", ["--head", f"--port={port}", "--include-dashboard=false"]),
            ("node", [f"--address={address}"]),
        ]:
            procs.append(
                subprocess.Popen(
                    [RAY, "start", *args, *common],
                    env=_env(),
                    stdout=(logs / f"{name}.log").open("w"),
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
            _wait_for_nodes(address, len(procs), procs, logs)
        yield address
    finally:
        _stop(procs)
        # `ray start` leaves the address for later `ray.init()` calls to join; the cluster is gone.
        current = Path("/tmp/ray/ray_current_cluster")
        if current.exists() and current.read_text().strip() == address:
            current.unlink()


def _wait_for_nodes(address, count, procs, logs, timeout=90):
    probe = (
        f"import ray; ray.init(address={address!r}, logging_level='ERROR');"
        "print(sum(n['Alive'] for n in ray.nodes()))"
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                pytest.fail(f"a Ray node exited: {[p.read_text() for p in logs.glob('*.log')]}")
        out = subprocess.run(
            [sys.executable, "-c", probe], env=_env(), capture_output=True, text=True, timeout=60
        )
        if out.returncode == 0 and out.stdout.strip().splitlines()[-1:] == [str(count)]:
            return
        time.sleep(1)
    pytest.fail("the Ray cluster never came up")


def _tune_app(*args, cwd, **kw):
    return subprocess.Popen(
        [sys.executable, "-m", "tune_app", *map(str, args), "-q"],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kw,
    )


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def spec_dir(tmp_path):
    user_module("nodes.py", tmp_path, "nodes.py")
    user_module("helper.py", tmp_path)
    return tmp_path


def test_trials_spread_over_the_cluster_nodes_with_shipped_modules(cluster, spec_dir):
    spec = spec_dir / "spec.yaml"
    spec.write_text(SPEC.format(steps=3, sleep=0.3))
    run = _tune_app("run", spec, "--storage-path", spec_dir / "out", "--address", cluster, cwd="/")
    out, err = run.communicate(timeout=240)
    assert run.returncode == 0, err
    rows = _rows(spec_dir / "out" / "spread" / "results.jsonl")
    assert len({r["trial_id"] for r in rows}) == 4
    assert len({r["node"] for r in rows}) == 2  # both nodes ran trials
    # The workers imported the spec folder's modules from Ray's runtime env, not from the folder.
    origins = {r["helper"] for r in rows}
    assert all("runtime_resources" in o and str(spec_dir) not in o for o in origins), origins


def test_a_killed_driver_resumes_from_another_process_on_the_cluster(cluster, spec_dir):
    spec = spec_dir / "spec.yaml"
    spec.write_text(SPEC.format(steps=12, sleep=0.4))
    results = spec_dir / "out" / "spread" / "results.jsonl"
    run = _tune_app("run", spec, "--storage-path", spec_dir / "out", "--address", cluster, cwd="/")
    deadline = time.monotonic() + 120
    while not (results.exists() and len(results.read_text().splitlines()) >= 10):
        assert time.monotonic() < deadline and run.poll() is None, run.communicate()
        time.sleep(0.3)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()

    resumed = _tune_app("resume", spec_dir / "out" / "spread", "--address", cluster, cwd="/")
    _, err = resumed.communicate(timeout=240)
    assert resumed.returncode == 0, err
    steps: dict[str, list[int]] = {}
    for row in _rows(results):
        steps.setdefault(row["trial_id"], []).append(row["training_iteration"])
    assert len(steps) == 4
    assert all(s == list(range(1, 13)) for s in steps.values()), steps  # none lost or repeated
    summary = json.loads((spec_dir / "out" / "spread" / "summary.json").read_text())
    assert summary["counts"] == {"TERMINATED": 4}
