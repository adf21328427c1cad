"""GPUs: how many trials to pack on one GPU, and what a GPU learner and the app's layout buy, in
one run of a few minutes (`python -m benchmarks gpu`; one GPU and 16 CPUs: under 8 minutes).

Every search runs through the app (`tune_app.run`) on one local Ray:
- **packing**: 1, 2 and 4 trials sharing one GPU (`resources_per_trial.gpu: 1/K`) of a small
  PyTorch MLP (`benchmarks.workloads:mlp`) and of PPO on CartPole (`num_gpus_per_learner:
  1/K`, `num_learners: 0`, K seeds): the aggregate throughput against one trial alone (samples
  or env steps a second, each trial's median over its results after the first, summed), the
  MLP's peak GPU memory a trial (`torch.cuda.max_memory_allocated`), and the trials that failed
  out of memory;
- **learner**: one PPO trial with its learner on the GPU against the same trial on CPUs;
- **layout**: one PPO trial with the layout the app chooses for the machine's CPUs against
  RLlib's defaults (`layout: rllib`).

Without a GPU it runs its CPU part: the MLP packed 1 and 2 to a machine (one CPU a trial), and
the layout against RLlib's defaults where those fit (3 CPUs or more); the GPU figures are left
out and the table says so. The
figures have no targets: they are what a reader sizes a search by (docs/big_machines.md).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from benchmarks.common import Figure, bench_main, read_results, read_summary, start_ray
from tune_app.failures import OUT_OF_MEMORY as OOM  # the cause of a trial out of memory

MLP = {"width": 1024, "layers": 4, "batch": 512, "steps": 50}
MLP_QUICK = {"width": 256, "layers": 2, "batch": 128, "steps": 10}
STEPS = "num_env_steps_sampled_lifetime"
DEFAULTS_CPUS = 3  # what RLlib's default PPO trial takes: its main process and 2 env runners


@dataclass(frozen=True)
class Packed:
    """One search of `trials` trials sharing a machine: their summed throughput, the most GPU
    memory one allocated, and how many failed out of memory."""

    trials: int
    throughput: float  # summed over trials: each trial's median after its first result
    peak_memory_mb: float
    out_of_memory: int


def throughput(
    rows: list[dict[str, Any]], rate: Callable[[dict, dict | None], float | None]
) -> float:
    """The trials' summed throughput: each trial's median `rate(row, row before)` over its
    results after the first (the first carries start-up: model build, CUDA context, JIT)."""
    by_trial: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_trial.setdefault(str(row.get("trial_id")), []).append(row)
    total = 0.0
    for trial_rows in by_trial.values():
        rates = [rate(row, before) for before, row in zip(trial_rows, trial_rows[1:], strict=False)]
        kept = [r for r in rates if r is not None and r > 0]
        total += median(kept) if kept else 0.0
    return total


def samples_rate(row: dict[str, Any], before: dict[str, Any] | None) -> float | None:
    value = row.get("samples_per_s")
    return float(value) if isinstance(value, int | float) else None


def env_steps_rate(row: dict[str, Any], before: dict[str, Any] | None) -> float | None:
    """Env steps sampled in the result's iteration over the iteration's seconds."""
    took = row.get("time_this_iter_s")
    if before is None or not isinstance(took, int | float) or took <= 0:
        return None
    steps = (row.get(STEPS) or 0) - (before.get(STEPS) or 0)
    return steps / took if steps > 0 else None


def packed(rows: list[dict[str, Any]], summary: dict[str, Any], rate: Callable) -> Packed:
    memory = [
        float(r["gpu_memory_mb"]) for r in rows if isinstance(r.get("gpu_memory_mb"), int | float)
    ]
    failed = [t for t in summary.get("trials", []) if t.get("cause") == OOM]
    trials = len({r.get("trial_id") for r in rows} | {t["trial_id"] for t in failed})
    return Packed(trials, throughput(rows, rate), max(memory, default=0.0), len(failed))


def mlp_spec(k: int, gpu: bool, quick: bool) -> dict[str, Any]:
    """K MLP trials, each 1/K of the GPU (or one CPU)."""
    resources = {"cpu": 1, "gpu": 1 / k} if gpu else {"cpu": 1, "gpu": 0}
    return {
        "metric": "loss",
        "mode": "min",
        "experiments": {
            "mlp": {
                "run": "benchmarks.workloads:mlp",
                "num_samples": k,
                "resources_per_trial": resources,
                "stop": {"training_iteration": 3 if quick else 8},
                "config": {**(MLP_QUICK if quick else MLP), "seed": {"grid_search": [0]}},
            }
        },
    }


def ppo_spec(
    k: int, config: dict[str, Any], iterations: int, layout: str | None = None
) -> dict[str, Any]:
    """K seeds of PPO on CartPole with `config` (the GPU share, the layout's keys)."""
    experiment: dict[str, Any] = {
        "run": "PPO",
        "env": "CartPole-v1",
        "seeds": k,
        "stop": {"training_iteration": iterations},
        "config": config,
    }
    if layout:
        experiment["layout"] = layout
    return {"experiments": {"ppo": experiment}}


def ppo_gpu(k: int) -> dict[str, Any]:
    """PPO's config for K trials a GPU: the trial's main process trains on 1/K of it."""
    return {"num_learners": 0, "num_gpus_per_learner": 1 / k}


def search(spec: dict[str, Any], tmp: Path) -> tuple[list[dict[str, Any]], dict[str, Any], float]:
    """One search through the app: its results, its summary and its wall time."""
    import tune_app

    (name,) = spec["experiments"]
    runs = tmp / f"runs{time.monotonic_ns()}"
    began = time.monotonic()
    tune_app.run(spec, storage_path=runs)
    took = time.monotonic() - began
    rows, summary = read_results(runs / name), read_summary(runs / name)
    shutil.rmtree(runs, ignore_errors=True)
    return rows, summary, took


def gpus() -> float:
    import ray

    return float(ray.cluster_resources().get("GPU", 0.0))


def packing_figures(kind: str, unit: str, runs: list[Packed], gpu: bool) -> list[Figure]:
    """Each packing's throughput against one trial alone, with its memory and failures."""
    alone = runs[0]
    figures = []
    for run in runs[1:]:
        share = f"1/{run.trials} GPU" if gpu else "1 CPU"
        note = f"{run.trials} trials at {share} each"
        if gpu and kind == "mlp":
            note += f"; peak GPU memory a trial {run.peak_memory_mb:.0f} MB"
            note += f" (alone {alone.peak_memory_mb:.0f} MB)"
        note += f"; {run.out_of_memory} failed out of memory"
        figures.append(
            Figure(
                "gpu",
                f"{kind}: {run.trials} trials {'a GPU' if gpu else 'on CPUs'}, throughput / 1",
                run.throughput / alone.throughput if alone.throughput else float("nan"),
                "",
                f"{run.trials} trials: {run.throughput:,.0f} {unit}",
                f"1 trial: {alone.throughput:,.0f} {unit}",
                note=note,
            )
        )
    return figures


def layout_figure(cpus: int, iterations: int, tmp: Path) -> Figure:
    """One PPO trial with the app's layout for `cpus` CPUs against RLlib's defaults."""
    app = search(ppo_spec(1, {}, iterations), tmp)
    rllib = search(ppo_spec(1, {}, iterations, layout="rllib"), tmp)
    a, b = (throughput(r[0], env_steps_rate) for r in (app, rllib))
    return Figure(
        "gpu",
        f"ppo: the app's layout on {cpus} CPUs / RLlib's defaults, env steps/s",
        a / b if b else float("nan"),
        "",
        f"app layout: {a:,.0f} env steps/s",
        f"layout: rllib: {b:,.0f} env steps/s",
        note=f"one trial; whole searches {app[2]:.0f} s and {rllib[2]:.0f} s",
    )


def run(quick: bool = False) -> list[Figure]:
    import ray

    if not ray.is_initialized():
        start_ray(os.cpu_count() or 1)
    gpu = gpus() >= 1
    iterations = 2 if quick else 5  # a rate needs two results: the first carries start-up
    tmp = Path(tempfile.mkdtemp(prefix="gpu-bench-"))
    figures: list[Figure] = []
    began = time.monotonic()
    try:
        counts = (1, 2, 4) if gpu else (1, 2)
        mlp = [packed(*search(mlp_spec(k, gpu, quick), tmp)[:2], samples_rate) for k in counts]
        figures += packing_figures("mlp", "samples/s", mlp, gpu)
        if gpu:
            ppo = []
            for k in (1, 2, 4):
                rows, summary, _ = search(ppo_spec(k, ppo_gpu(k), iterations), tmp)
                ppo.append(packed(rows, summary, env_steps_rate))
            figures += packing_figures("ppo", "env steps/s", ppo, gpu)
            on_gpu = search(
                ppo_spec(1, {"num_learners": 0, "num_gpus_per_learner": 1}, iterations), tmp
            )
            on_cpu = search(
                ppo_spec(1, {"num_learners": 0, "num_gpus_per_learner": 0}, iterations), tmp
            )
            a, b = (throughput(r[0], env_steps_rate) for r in (on_gpu, on_cpu))
            figures.append(
                Figure(
                    "gpu",
                    "ppo: learner on the GPU / on CPUs, env steps/s",
                    a / b if b else float("nan"),
                    "",
                    f"GPU learner: {a:,.0f} env steps/s",
                    f"CPU learner: {b:,.0f} env steps/s",
                    note="one trial, num_learners: 0; CartPole's 2 x 256 network",
                )
            )
        cpus = os.cpu_count() or 1
        if cpus >= DEFAULTS_CPUS:
            figures.append(layout_figure(cpus, iterations, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    took = time.monotonic() - began
    figures.append(
        Figure(
            "gpu",
            "the whole check, minutes" if gpu else "the CPU part (no GPU here), minutes",
            took / 60,
            "<= 8" if gpu and not quick else "",
            f"{took:.0f} s",
            "1 minute",
            note=""
            if gpu
            else "no GPU on this machine: the packing of PPO and the GPU learner are left out",
        )
    )
    return figures


if __name__ == "__main__":
    bench_main(run, __doc__)
