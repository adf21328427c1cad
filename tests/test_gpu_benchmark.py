"""`python -m benchmarks gpu`: its arithmetic (each trial's median rate after its first result,
summed; failures out of memory counted), its specs as the app plans them on a GPU machine, and
its CPU part run end to end where no GPU is."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from benchmarks import gpu
from tests.conftest import ROOT


def _rows(trial: str, rates: list[float]) -> list[dict]:
    return [
        {"trial_id": trial, "samples_per_s": r, "gpu_memory_mb": 10.0 * n}
        for n, r in enumerate(rates, 1)
    ]


def test_throughput_sums_each_trials_median_after_its_first_result():
    rows = _rows("a", [1.0, 100.0, 300.0, 200.0]) + _rows("b", [5.0, 50.0])
    assert gpu.throughput(rows, gpu.samples_rate) == 200.0 + 50.0
    summary = {"trials": [{"trial_id": "c", "cause": gpu.OOM}, {"trial_id": "a", "cause": None}]}
    run = gpu.packed(rows, summary, gpu.samples_rate)
    assert run == gpu.Packed(trials=3, throughput=250.0, peak_memory_mb=40.0, out_of_memory=1)


def test_env_steps_a_second_are_an_iterations_steps_over_its_time():
    rows = [
        {"trial_id": "a", gpu.STEPS: 4000, "time_this_iter_s": 9.0},  # start-up: left out
        {"trial_id": "a", gpu.STEPS: 8000, "time_this_iter_s": 2.0},
        {"trial_id": "a", gpu.STEPS: 12000, "time_this_iter_s": 4.0},
        {"trial_id": "a", gpu.STEPS: 16000, "time_this_iter_s": 1.0},
    ]
    assert gpu.throughput(rows, gpu.env_steps_rate) == 2000.0


def test_packing_figures_compare_with_one_trial_alone():
    runs = [gpu.Packed(1, 100.0, 50.0, 0), gpu.Packed(2, 180.0, 55.0, 0), gpu.Packed(4, 0, 0, 3)]
    two, four = gpu.packing_figures("mlp", "samples/s", runs, gpu=True)
    assert two.value == pytest.approx(1.8) and "1/2 GPU" in two.note and "55 MB" in two.note
    assert four.value == 0 and "3 failed out of memory" in four.note


@pytest.mark.parametrize("k", [1, 2, 4])
def test_the_packed_searches_share_one_gpu_as_planned(k, tmp_path):
    """On the GPU machine (16 CPUs, one GPU), K trials at 1/K of the GPU all run at once, both
    the MLP's and PPO's."""
    import yaml

    from tune_app import spec as specs
    from tune_app.plan.make import make_plan

    specs_of = [gpu.mlp_spec(k, True, False), gpu.ppo_spec(k, gpu.ppo_gpu(k), 5)]
    for spec in specs_of:
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(spec))
        plan = make_plan(specs.load(path), cpus=16, gpus=1, storage_path=str(tmp_path / "o"))
        (ep,) = plan.experiments
        assert ep.trials == k and ep.at_once == k
        assert sum(b.get("GPU", 0.0) for b in ep.bundles) == pytest.approx(1 / k)


def test_the_layout_comparison_plans_on_the_gpu_machine(tmp_path):
    """The app's layout and `layout: rllib` each plan one PPO trial on 16 CPUs."""
    import yaml

    from tune_app import spec as specs
    from tune_app.plan.make import make_plan

    for layout in (None, "rllib"):
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(gpu.ppo_spec(1, {}, 5, layout=layout)))
        plan = make_plan(specs.load(path), cpus=16, gpus=1, storage_path=str(tmp_path / "o"))
        (ep,) = plan.experiments
        assert ep.trials == 1 and ep.trial_cpus >= gpu.DEFAULTS_CPUS


@pytest.mark.e2e
def test_without_a_gpu_the_cpu_part_runs_and_says_so(tmp_path):
    out = tmp_path / "gpu.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "gpu", "--quick", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = [f["name"] for f in json.loads(out.read_text())["figures"]]
    assert names[0] == "mlp: 2 trials on CPUs, throughput / 1"
    if (os.cpu_count() or 1) >= gpu.DEFAULTS_CPUS:
        assert names[1].startswith("ppo: the app's layout on") and len(names) == 3
    assert names[-1] == "the CPU part (no GPU here), minutes"
    figures = json.loads(out.read_text())["figures"]
    assert all(f["value"] and f["value"] > 0 for f in figures)
