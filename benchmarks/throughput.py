"""Simulation throughput: env steps per second sampled by the simulation trainable's parallel
rollouts and by RLlib PPO's env runners (through the app, and through a hand-written Tuner),
against a raw gymnasium CartPole loop on one core."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from statistics import median

from benchmarks.common import ROOT, Figure, bench_main, paired, read_results, tune_app
from benchmarks.common import script as run_script

ES_SPEC = """
es:
  run: es_cartpole
  simulations: {k}
  stop: {{training_iteration: {iterations}}}
  config: {{population: {population}, episodes: 2, lr: 0.0, sigma: 0.1}}
"""

PPO_SPEC = """
ppo:
  run: PPO
  env: CartPole-v1
  stop: {{training_iteration: {iterations}}}
  config:
    num_env_runners: 1
    train_batch_size: {batch}
    minibatch_size: 128
    num_epochs: 1
"""

PPO_HAND = """
import json, sys
import ray
from ray import tune
from ray.rllib.algorithms.ppo import PPOConfig

ray.init(address="local", num_cpus={cpus}, include_dashboard=False, logging_level="ERROR",
         log_to_driver=False)
config = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=1)
    .training(train_batch_size={batch}, minibatch_size=128, num_epochs=1)
)
grid = tune.Tuner(
    "PPO",
    param_space=config,
    run_config=tune.RunConfig(storage_path={storage!r}, name="hand", verbose=0,
                              stop={{"training_iteration": {iterations}}}),
).fit()
print(json.dumps({{"trial": grid[0].path}}))
"""


def raw_steps_per_s(seconds: float) -> float:
    """A plain gymnasium CartPole loop with random actions, on this one core."""
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    steps, end = 0, time.perf_counter() + seconds
    began = time.perf_counter()
    while time.perf_counter() < end:
        for _ in range(1000):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
        steps += 1000
    return steps / (time.perf_counter() - began)


def _es_rate(tmp: Path, k: int, iterations: int, tag: str) -> float:
    spec = tmp / f"es{tag}.yaml"
    spec.write_text(ES_SPEC.format(k=k, iterations=iterations, population=2048))
    tune_app("run", str(spec), "--storage-path", str(tmp / f"es{tag}"), "-q", cwd=ROOT)
    return median(r["env_steps_per_s"] for r in read_results(tmp / f"es{tag}" / "es")[1:])


def _ppo_app(tmp: Path, iterations: int, batch: int, tag: str) -> float:
    spec = tmp / f"ppo{tag}.yaml"
    spec.write_text(PPO_SPEC.format(iterations=iterations, batch=batch))
    tune_app("run", str(spec), "--storage-path", str(tmp / f"ppo{tag}"), "-q", cwd=ROOT)
    return steady_rate(read_results(tmp / f"ppo{tag}" / "ppo"))


def _ppo_hand(tmp: Path, cpus: int, iterations: int, batch: int, tag: str) -> float:
    script = tmp / f"ppo_hand{tag}.py"
    script.write_text(
        PPO_HAND.format(
            cpus=cpus, batch=batch, iterations=iterations, storage=str(tmp / f"hand{tag}")
        )
    )
    hand = json.loads(run_script(script, tmp).stdout.strip().splitlines()[-1])
    lines = (Path(hand["trial"]) / "result.json").read_text().splitlines()
    return steady_rate([json.loads(line) for line in lines])


def steady_rate(rows: list[dict]) -> float:
    """Env steps per second of training, the median over iterations after the first (which
    also builds the learner and warms the env runners): what a longer run keeps up."""
    rates = [
        (row["num_env_steps_sampled_lifetime"] - before["num_env_steps_sampled_lifetime"])
        / row["time_this_iter_s"]
        for before, row in zip(rows, rows[1:], strict=False)
    ]
    return median(rates)


def run(quick: bool = False) -> list[Figure]:
    cpus = os.cpu_count() or 1
    seconds = 2.0 if quick else 5.0
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        es_iterations = 4 if quick else 8
        tags = iter(range(10**6))
        es = paired(
            lambda: _es_rate(tmp, cpus, es_iterations, str(next(tags))),
            lambda: cpus * raw_steps_per_s(seconds),
        )
        iterations, batch = (4, 2000) if quick else (12, 4000)
        ppo = paired(
            lambda: _ppo_app(tmp, iterations, batch, str(next(tags))),
            lambda: _ppo_hand(tmp, cpus, iterations, batch, str(next(tags))),
        )
        raw = paired(lambda: median(ppo.a), lambda: raw_steps_per_s(seconds))
    ppo_work = f"{iterations} iterations of {batch} steps, 1 env runner"
    return [
        es.figure(
            "throughput",
            f"simulation trainable / ({cpus} cores x raw gymnasium)",
            ">= 0.8",
            f"es_cartpole, {cpus} simulations: {{:,.0f}} steps/s",
            f"{cpus} x raw loop on one core: {{:,.0f}} steps/s",
            note="median over iterations after the first",
        ),
        ppo.figure(
            "throughput",
            "RLlib PPO through the app / through a hand-written Tuner",
            ">= 0.98",
            "app: {:,.0f} steps/s",
            "hand-written: {:,.0f} steps/s",
            note=f"{ppo_work}; median steps/s of the iterations after the first",
        ),
        raw.figure(
            "throughput",
            "RLlib PPO through the app / raw gymnasium (one core)",
            "",
            "app: {:,.0f} steps/s (median of its runs above)",
            "raw loop: {:,.0f} steps/s",
            note="PPO's time includes learning, not only sampling",
        ),
    ]


if __name__ == "__main__":
    bench_main(run, __doc__)
