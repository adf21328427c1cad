"""RLlib sampling layouts: whole RL searches through the app with the layout it chooses (no
layout keys in the spec) against the same searches with the old fit advice written in
(`num_env_runners: 1`), paired A, B, A, B on the same seeds.

Figures: machine env steps per second of a PPO CartPole search (several trials) and of a DQN
one (all trials' env steps over the whole command's wall time); one PPO trial alone; whether
learning is unchanged (each layout's median final smoothed return within the other's range over
the same seeds); and the wall time until the best trial of a PPO search of 8 configurations
under ASHA reaches a smoothed return of 475 on CartPole-v1. `uptime`'s load is recorded around
each measurement and printed: the machine may be shared.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from benchmarks.common import ROOT, Figure, bench_main, paired, read_results, tune_app

RETURN = "env_runners/episode_return_mean_smoothed"
STEPS = "num_env_steps_sampled_lifetime"
SOLVED = 475.0
# What the fit error advised before the layout policy, on RLlib's defaults otherwise (which
# `layout: rllib` keeps: the app's layout would vectorize the envs of this side too).
ADVICE = {"num_env_runners": 1}

SEARCH = """
s:
  run: {algo}
  env: CartPole-v1
  layout: {layout}
  seeds: {trials}
  stop: {{training_iteration: {iterations}}}
  config: {config}
"""

SOLVE = """
metric: env_runners/episode_return_mean_smoothed
mode: max
search: random
seed: 0
scheduler: {{type: asha, max_t: {max_t}, grace_period: 4}}
time_budget_s: {budget}
experiments:
  s:
    run: PPO
    env: CartPole-v1
    layout: {layout}
    num_samples: 8
    stop: {{training_iteration: {max_t}, env_runners/episode_return_mean_smoothed: 475}}
    config: {config}
"""

# Sizes: (trials, iterations, train batch) of the PPO search; (trials, iterations) of DQN;
# the ASHA search's max_t and time budget; paired repeats.
SIZES = {
    False: {"ppo": (4, 8, 2000), "dqn": (4, 4), "solve": (40, 480), "repeats": 3},
    True: {"ppo": (4, 3, 1000), "dqn": (2, 2), "solve": (20, 150), "repeats": 2},
}
LOADS: list[str] = []  # `uptime`'s load averages around each measurement, in order


@dataclass
class Search:
    """One whole search: its wall time, all trials' env steps, each trial's final return."""

    wall_s: float
    steps: float
    finals: list[float]
    first_solved_s: float | None = None

    @property
    def rate(self) -> float:
        return self.steps / self.wall_s


def _load() -> str:
    text = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    return text.rsplit("load average:", 1)[-1].strip()


def _flow(config: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in config.items()) + "}"


def _value(row: dict[str, Any], key: str) -> Any:
    """A result key, flat (`a/b`) or nested as Tune reports it."""
    if key in row:
        return row[key]
    node: Any = row
    for part in key.split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _run(tmp: Path, text: str, tag: str, experiment: str = "s") -> Search:
    spec = tmp / f"{tag}.yaml"
    spec.write_text(text)
    LOADS.append(f"{tag} before: {_load()}")
    began = time.time()
    done = tune_app("run", str(spec), "--storage-path", str(tmp / tag), "-q", cwd=ROOT)
    LOADS.append(f"{tag} after: {_load()}")
    logged = tmp / tag / experiment / "results.jsonl"
    rows = read_results(logged.parent) if logged.exists() else []  # budget out before a result
    last: dict[str, dict[str, Any]] = {}
    solved = []
    for row in rows:
        last[row["trial_id"]] = row
        value = _value(row, RETURN)
        if isinstance(value, int | float) and value >= SOLVED:
            solved.append(row["logged_at"] - began)
    finals = [v for r in last.values() if isinstance(v := _value(r, RETURN), int | float)]
    steps = sum(float(_value(r, STEPS) or 0) for r in last.values())
    found = Search(done.wall_s, steps, finals, min(solved) if solved else None)
    print(  # the raw figures as they come, should a later part fail
        f"  {tag}: {found.wall_s:.1f} s, {steps:,.0f} env steps, {found.rate:,.0f}/s, final "
        f"returns {[round(f) for f in finals]}, first 475 at {found.first_solved_s}; "
        f"{LOADS[-2]}; {LOADS[-1]}",
        file=sys.stderr,
        flush=True,
    )
    return found


def _layout(config: dict) -> str:
    """The app's layout, or RLlib's defaults where the side writes its own runners."""
    return "rllib" if "num_env_runners" in config else "app"


def _search(tmp: Path, algo: str, trials: int, iterations: int, config: dict, tag: str) -> Search:
    text = SEARCH.format(
        algo=algo,
        trials=trials,
        iterations=iterations,
        config=_flow(config),
        layout=_layout(config),
    )
    return _run(tmp, text, tag)


def _within(a: list[float], b: list[float]) -> bool:
    """Each side's median inside the other side's range."""
    return bool(a and b) and min(b) <= median(a) <= max(b) and min(a) <= median(b) <= max(a)


def run(quick: bool = False) -> list[Figure]:
    size = SIZES[quick]
    repeats = size["repeats"]
    figures = []
    tags = iter(range(10**6))
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        trials, iterations, batch = size["ppo"]
        ppo_config = {"train_batch_size": batch, "minibatch_size": 128, "num_epochs": 6}
        app_runs: list[Search] = []
        advice_runs: list[Search] = []

        def side(runs: list[Search], algo: str, n: int, its: int, config: dict) -> float:
            found = _search(tmp, algo, n, its, config, f"{algo}{next(tags)}")
            runs.append(found)
            return found.rate

        ppo = paired(
            lambda: side(app_runs, "PPO", trials, iterations, ppo_config),
            lambda: side(advice_runs, "PPO", trials, iterations, {**ppo_config, **ADVICE}),
            repeats,
        )
        work = f"{trials} trials (seeds) x {iterations} iterations x {batch} steps"
        figures.append(
            ppo.figure(
                "layout",
                "PPO search env steps/s: app layout / num_env_runners: 1",
                ">= 3.0",
                "app layout: {:,.0f} env steps/s",
                "num_env_runners: 1: {:,.0f} env steps/s",
                note=f"{work}; all trials' env steps / the command's wall time",
            )
        )
        figures.append(_learning("PPO", app_runs, advice_runs, work))

        app_one: list[Search] = []
        runner_one: list[Search] = []
        one = {**ppo_config, "num_envs_per_env_runner": 8}
        single = paired(
            lambda: side(app_one, "PPO", 1, iterations, ppo_config),
            lambda: side(runner_one, "PPO", 1, iterations, {**one, **ADVICE}),
            repeats,
        )
        figures.append(
            single.figure(
                "layout",
                "one PPO trial env steps/s: app layout / 1 env runner x 8 envs",
                "",
                "app layout: {:,.0f} env steps/s",
                "1 env runner x 8 envs: {:,.0f} env steps/s",
                note=f"1 trial x {iterations} iterations x {batch} steps; is the app's "
                "single-trial layout the faster one (ratio > 1)?",
            )
        )

        dqn_trials, dqn_iterations = size["dqn"]
        dqn_app: list[Search] = []
        dqn_advice: list[Search] = []
        dqn = paired(
            lambda: side(dqn_app, "DQN", dqn_trials, dqn_iterations, {}),
            lambda: side(dqn_advice, "DQN", dqn_trials, dqn_iterations, dict(ADVICE)),
            repeats,
        )
        dqn_work = f"{dqn_trials} trials (seeds) x {dqn_iterations} iterations (RLlib's sizes)"
        figures.append(
            dqn.figure(
                "layout",
                "DQN search env steps/s: app layout / num_env_runners: 1",
                ">= 1.5",
                "app layout (RLlib's 0 runners): {:,.0f} env steps/s",
                "num_env_runners: 1: {:,.0f} env steps/s",
                note=f"{dqn_work}; updates per env step are the same in both",
            )
        )
        figures.append(_learning("DQN", dqn_app, dqn_advice, dqn_work))
        figures.append(_solve(tmp, size["solve"], repeats, tags))
    print("load (uptime) around each measurement:\n  " + "\n  ".join(LOADS), file=sys.stderr)
    return figures


def _learning(algo: str, app: list[Search], advice: list[Search], work: str) -> Figure:
    """The app layout's median final smoothed return over the other's, over the same seeds."""
    a = [v for s in app for v in s.finals]
    b = [v for s in advice for v in s.finals]
    value = median(a) / median(b) if a and b and median(b) else float("nan")
    return Figure(
        "layout",
        f"{algo} final smoothed return: app layout / num_env_runners: 1",
        value,
        "",
        f"app: median {median(a) if a else float('nan'):.1f} ({min(a, default=0):.0f}-"
        f"{max(a, default=0):.0f})",
        f"advice: median {median(b) if b else float('nan'):.1f} ({min(b, default=0):.0f}-"
        f"{max(b, default=0):.0f})",
        note=f"{work}; each median within the other's range: {'yes' if _within(a, b) else 'NO'}",
        repeats=len(app),
    )


def _solve(tmp: Path, size: tuple[int, int], repeats: int, tags: Any) -> Figure:
    """Wall time until the best trial of an 8-configuration ASHA search reaches 475 (the time
    budget where it never does), app layout over the advice's."""
    max_t, budget = size
    space = {
        "lr": "{loguniform: [0.0001, 0.003]}",
        "train_batch_size": 2000,
        "minibatch_size": 128,
        "num_epochs": "{choice: [6, 10]}",
    }

    def solve(config: dict) -> float:
        text = SOLVE.format(
            max_t=max_t, budget=budget, config=_flow(config), layout=_layout(config)
        )
        found = _run(tmp, text, f"solve{next(tags)}")
        return found.first_solved_s if found.first_solved_s is not None else found.wall_s

    times = paired(lambda: solve(space), lambda: solve({**space, **ADVICE}), repeats)
    return times.figure(
        "layout",
        "PPO time to a smoothed return of 475: app layout / num_env_runners: 1",
        "<= 0.5",
        "app layout: {:.0f} s",
        "num_env_runners: 1: {:.0f} s",
        note=f"8 configurations (random search, seed 0) under ASHA, max_t {max_t}, budget "
        f"{budget} s (a search that never solves counts its whole wall time)",
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    bench_main(run, __doc__)
