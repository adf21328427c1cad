"""A Ray node that declares 16 CPUs and a GPU it does not have (`ray start --num-cpus=16
--num-gpus=1`: Ray accounts for the GPU and sets CUDA_VISIBLE_DEVICES for the work that
reserved it, as for a real one): `validate --address` plans for the node's resources without
starting a trial, and a trial that reserved no GPU, and the tasks it starts, run with
CUDA_VISIBLE_DEVICES set and empty, beside a trial that holds a quarter of the GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port, results_of, user_module
from tests.test_cluster import RAY, _env, _stop, _wait_for_nodes

# These start a Ray node and drivers of their own.
pytestmark = [pytest.mark.e2e, pytest.mark.ray]

SPEC = """
metric: score
mode: max
experiments:
  cpu_trial:
    run: gpu_env:train
    simulations: 1
    resources_per_trial: {{cpu: 1, gpu: 0}}
  gpu_trial:
    run: gpu_env:train_on_gpu
    simulations: 1
    num_samples: {gpu_samples}
    resources_per_trial: {{cpu: 1, gpu: 0.25}}
"""


@pytest.fixture(scope="module")
def gpu_node(tmp_path_factory):
    """A one-node cluster on 127.0.0.1 declaring 16 CPUs and 1 GPU."""
    if not Path.home().joinpath(".ray", "auth_token").exists():
        subprocess.run([RAY, "get-auth-token", "--generate"], env=_env(), check=True, timeout=60)
    port = free_port()
    address = f"127.0.0.1:{port}"
    logs = tmp_path_factory.mktemp("gpu_node")
    args = [f"--port={port}", "--num-cpus=16", "--num-gpus=1", "--include-dashboard=false"]
    proc = subprocess.Popen(
        [RAY, "start", "--head", "--node-ip-address=127.0.0.1", "--block", *args],
        env=_env(),
        stdout=(logs / "head.log").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait_for_nodes(address, 1, [proc], logs)
        yield address
    finally:
        _stop([proc])
        current = Path("/tmp/ray/ray_current_cluster")
        if current.exists() and current.read_text().strip() == address:
            current.unlink()


def _tune_app(*args):
    """`python -m tune_app ARGS` from the checkout (the package under test)."""
    return subprocess.run(
        [sys.executable, "-m", "tune_app", *map(str, args)],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _seen(out: Path, experiment: str) -> list[tuple[str, str]]:
    return sorted({(r["trial_sees"], r["task_sees"]) for r in results_of(out / experiment)})


@pytest.fixture
def spec_dir(tmp_path):
    user_module("gpu_env.py", tmp_path)
    return tmp_path


def test_validate_plans_for_the_cluster_it_reads(gpu_node, spec_dir):
    spec = spec_dir / "spec.yaml"
    spec.write_text(SPEC.format(gpu_samples=8))
    done = _tune_app("validate", spec, "--address", gpu_node)
    assert done.returncode == 0, done.stderr
    assert "checked against 16 CPUs, 1 GPU" in done.stdout
    # 8 trials of a quarter GPU: 4 at once (16 by CPUs alone).
    assert "4 trials at once (4 trials share a GPU, 0.25 GPU each)" in done.stdout
    assert sorted(p.name for p in spec_dir.iterdir()) == ["gpu_env.py", "spec.yaml"]


def test_trials_that_reserved_no_gpu_see_none(gpu_node, spec_dir):
    spec = spec_dir / "spec.yaml"
    spec.write_text(SPEC.format(gpu_samples=1))
    out = spec_dir / "out"
    done = _tune_app("run", spec, "--address", gpu_node, "--storage-path", out, "-q")
    assert done.returncode == 0, done.stderr
    assert _seen(out, "cpu_trial") == [("", "")]
    # The GPU trial sees the node's GPU; the task it starts in its CPU bundle sees none.
    assert _seen(out, "gpu_trial") == [("0", "")]


def test_a_local_run_blanks_cuda_for_cpu_trials(spec_dir):
    spec = spec_dir / "spec.yaml"
    spec.write_text(
        "cpu_trial:\n  run: gpu_env:train\n  simulations: 1\n  resources_per_trial: {cpu: 1}\n"
        "  metric: score\n  mode: max\n"
    )
    out = spec_dir / "out"
    done = _tune_app("run", spec, "--storage-path", out, "-q")
    assert done.returncode == 0, done.stderr
    assert _seen(out, "cpu_trial") == [("", "")]
