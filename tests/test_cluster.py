"""A real two-node Ray cluster on this machine (`ray start --head` and a node joining it, both on
127.0.0.1) and a local S3 server: a search run with `--address` spreads its trials over both
nodes, the user's modules reach the workers through Ray's runtime env, and the "beyond one
machine" tutorial runs as written, its search killed half way and resumed from the bucket with
none of the first machine's files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port, results_of
from tests.runs import started, with_nodes
from tests.s3_server import keys, moto_s3, read
from tests.test_tutorials import TUTORIALS, commands, shell_env

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
      meet: {meet}
"""


def _env() -> dict[str, str]:
    return {**os.environ, "RAY_AUTH_MODE": "token"}


def _stop(procs: list[subprocess.Popen]) -> None:
    """End the nodes this test started (and only those): their process groups, every Ray
    process of a node (its workers too) among them. SIGKILL at once: a node given SIGTERM
    was still shutting down 10 s later (its raylet, GCS and workers), and the next step was
    SIGKILL all the same."""
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        time.sleep(0.2)


BUCKET = "my-bucket"  # the tutorial's


@dataclass(frozen=True)
class Cluster:
    address: str
    env: dict[str, str]  # the S3 server's credentials and endpoint, which the nodes have too


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Head and one joining node, one CPU each, on 127.0.0.1, with a local S3 server."""
    with moto_s3(BUCKET) as s3:
        yield from _nodes(tmp_path_factory, {**s3, "RAY_AUTH_MODE": "token"})


def _nodes(tmp_path_factory, env):
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
                    env=env,
                    stdout=(logs / f"{name}.log").open("w"),
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
            _wait_for_nodes(address, len(procs), procs, logs)
        yield Cluster(address, env)
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


def test_trials_spread_over_the_cluster_nodes_with_shipped_modules(cluster, tmp_path):
    # The first trial waits for a second to start before its first step: the second cannot
    # start on the first's node (one CPU, held), nor take its actor (Tune reuses an actor a
    # trial has ended). Without it a node slow to start its actor saw every trial go to the
    # other (1 run in 4 on a busy machine).
    spec = with_nodes(tmp_path, SPEC.format(steps=3, sleep=0.3, meet=tmp_path.parent / "meet"))
    args = ["--storage-path", tmp_path / "out", "--address", cluster.address]
    run = started("run", spec, *args, cwd="/", env=_env())
    out, err = run.communicate(timeout=240)
    assert run.returncode == 0, err
    rows = results_of(tmp_path / "out" / "spread")
    assert len({r["trial_id"] for r in rows}) == 4
    assert len({r["node"] for r in rows}) == 2  # both nodes ran trials
    # The workers imported the spec folder's modules from Ray's runtime env, not from the folder.
    origins = {r["helper"] for r in rows}
    assert all("runtime_resources" in o and str(tmp_path) not in o for o in origins), origins


# The tutorial's search at test size: 2 trials of at most 5 iterations. An iteration costs seconds
# here: a node of one CPU ends the idle workers beyond one after 1 s, so a trial's simulation
# tasks start new workers every iteration (7 to 9 s of each iteration on a busy 2-core machine).
SHRINK = [("num_samples: 4", "num_samples: 2"), ("training_iteration: 15", "training_iteration: 5")]


def test_the_beyond_one_machine_tutorial_runs_on_a_cluster_with_s3(cluster, tmp_path):
    """docs/tutorials/cluster.md's commands in order, with this cluster's address and the S3
    server's credentials in its `export` lines. Its `run` is killed (the machine lost) once part
    of the search is in the bucket; `analyze` and `resume` then run with an empty staging folder,
    as on another machine: the search ends with no iteration lost or run twice."""
    (tmp_path / "search_spaces").mkdir()
    spec = (ROOT / "search_spaces/random.yaml").read_text()
    for old, new in SHRINK:
        assert old in spec, f"random.yaml: {old!r} is no longer there to shrink"
        spec = spec.replace(old, new)
    (tmp_path / "search_spaces/random.yaml").write_text(spec)
    base = shell_env()
    base["AWS_ENDPOINT_URL"] = cluster.env["AWS_ENDPOINT_URL"]  # the page's "S3-compatible"
    exports: list[str] = []
    machine = tmp_path / "first-machine"
    ran = []
    for line, code in commands(TUTORIALS / "cluster.md", cluster=True):
        line = line.replace("10.0.0.5:6379", cluster.address).replace("=...", "=testing")
        if line.startswith("export "):
            exports.append(line)
            continue
        script = "; ".join([*exports, line])
        env = {**base, "TUNE_APP_STAGING": str(machine)}
        ran.append(line.split()[3])
        if " run " in line:
            _run_until_half_way(script, env, tmp_path, cluster.env)
            machine = tmp_path / "second-machine"  # none of the first one's files
            assert "summary.json" not in keys(cluster.env, BUCKET, "searches/es_random/")
            continue
        done = subprocess.run(
            ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=240,
        )  # fmt: skip
        assert done.returncode == code, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        if line.split()[3] == "analyze":  # the interrupted search, read from the bucket alone
            assert "es_random" in done.stdout and "not finished" in done.stdout, done.stdout
    assert ran == ["validate", "run", "analyze", "resume"], ran

    steps: dict[str, list[int]] = {}
    for text in read(cluster.env, BUCKET, "searches/es_random/results.jsonl").splitlines():
        row = json.loads(text)
        steps.setdefault(row["trial_id"], []).append(row["training_iteration"])
    assert len(steps) == 2 and all(s == list(range(1, len(s) + 1)) for s in steps.values()), steps
    summary = json.loads(read(cluster.env, BUCKET, "searches/es_random/summary.json"))
    assert summary["counts"] == {"TERMINATED": 2}


def _run_until_half_way(script, env, cwd, s3):
    """Start the tutorial's `run` and kill its whole process group once it has results of its
    own (in its staging folder) and the bucket has some of them, the search not done."""
    run = subprocess.Popen(
        ["bash", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    staging = Path(env["TUNE_APP_STAGING"])
    deadline = time.monotonic() + 180
    while True:
        assert time.monotonic() < deadline and run.poll() is None, run.communicate()
        written = [len(p.read_text().splitlines()) for p in staging.rglob("results.jsonl")]
        if sum(written) >= 3 and "results.jsonl" in keys(s3, BUCKET, "searches/es_random/"):
            break
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
