"""Trainables the benchmarks run, through the app (`run: benchmarks.workloads:NAME`) and through
hand-written Tuner scripts alike."""

from __future__ import annotations

import random
import time
from statistics import median

from ray import tune


def busy(config: dict) -> None:
    """`seconds` of CPU work, then one result: a trial whose cost is known exactly."""
    end = time.perf_counter() + config["seconds"]
    spins = 0
    while time.perf_counter() < end:
        spins += 1
    tune.report({"score": float(config["x"]), "spins": spins})


def my_func_tune(config: dict) -> None:
    """The grid example's trainable written for Ray 2.x (`tune.report`), for a hand-written
    Tuner script to run what `search_spaces/grid.yaml` runs through the app."""
    from trainables.my_func import accuracy

    i = 0
    while True:
        tune.report({"timesteps_total": i, "mean_accuracy": accuracy(i, config["alpha"])})
        i += config["beta"]


def moving_average(seed: int, length: int, window: int) -> float:
    """The mean of one random series' moving average, computed window by window in plain Python:
    CPU-bound work that holds the GIL (about 1 ms for 1000 points, window 10)."""
    rng = random.Random(seed)
    series = [rng.random() for _ in range(length)]
    averages = [sum(series[i - window : i]) / window for i in range(window, length + 1)]
    return sum(averages) / len(averages)


def _chunk(seeds: list[int], length: int, window: int) -> tuple[float, float, float]:
    start = time.time()
    value = sum(moving_average(s, length, window) for s in seeds)
    return value, start, time.time()


def nested_moving_average(config: dict) -> None:
    """The seeds' workload: `series` random series of `length`, window `window`, split over the
    trial's k simulations (one task per simulation bundle), against the same work in one
    simulation, alternated `repeats` times; reports the fastest of each and the speedup."""
    import ray

    from tune_app.nested import run_simulations, simulation_bundles

    bundles = simulation_bundles()
    k = len(bundles)
    remote = ray.remote(_chunk)
    seeds = list(range(config["series"]))
    parts = [seeds[i::k] for i in range(k)]
    args = (config["length"], config["window"])
    one, many = [], []
    run_simulations(remote, [(p[:1], *args) for p in parts], bundles)  # start the workers
    overlap, busy = [], []
    for _ in range(config["repeats"]):
        one.append(run_simulations(remote, [(seeds, *args)], bundles[:1]).wall_s)
        batch = run_simulations(remote, [(p, *args) for p in parts], bundles)
        many.append(batch.wall_s)
        overlap.append(batch.overlap)
        busy.append(batch.busy_s)
    # The fastest of the repeats: noise on a shared machine only ever adds time.
    speedup = min(one) / min(many)
    tune.report(
        {
            "score": speedup,
            "simulations": k,
            "sequential_s": min(one),
            "parallel_s": min(many),
            "efficiency": speedup / k,
            "overlap": max(overlap),
            "busy_s": median(busy),
        }
    )


def mlp(config: dict) -> None:
    """A small PyTorch MLP trained on random data, on the trial's GPU when it reserved one (Ray
    sets `CUDA_VISIBLE_DEVICES`), else on its CPUs: each result its samples a second and the
    peak GPU memory it allocated (0 on CPU). `width`, `layers`, `batch`, `steps` a result."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    width, batch = int(config.get("width", 1024)), int(config.get("batch", 512))
    blocks: list[torch.nn.Module] = []
    for _ in range(int(config.get("layers", 4))):
        blocks += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*blocks, torch.nn.Linear(width, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, width, device=device)
    y = torch.randn(batch, 1, device=device)
    while True:
        began = time.perf_counter()
        for _ in range(int(config.get("steps", 50))):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        if device == "cuda":
            torch.cuda.synchronize()
        took = time.perf_counter() - began
        peak = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else 0.0
        tune.report(
            {
                "loss": float(loss),
                "samples_per_s": int(config.get("steps", 50)) * batch / took,
                "gpu_memory_mb": peak,
                "device": device,
            }
        )


def flood(config: dict) -> None:
    """`results` results reported as fast as the trial can: no work between them, so the
    driver's intake of results is all that is measured. Each carries its own index, so a reader
    can tell a result lost or reordered."""
    for i in range(config["results"]):
        tune.report({"score": float(config["x"]) + i * 1e-6, "index": i})
