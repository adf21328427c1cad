"""Where the driver's time goes: a search run through the app in this process under cProfile,
with the entries that cost the most and the share of the app's own code (its callbacks, stopper,
result writing) in the driver's time.
`python -m benchmarks.profile_driver [ppo|scale|optuna|flood] [--top N]`.

Only the driver is profiled: the trials run in Ray's worker processes. The app's share is the
time Tune spends in the app's functions it calls (their callees included).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

WORKLOADS = {
    "ppo": {
        "ppo": {
            "run": "PPO",
            "env": "CartPole-v1",
            "stop": {"training_iteration": 8},
            "config": {
                "num_env_runners": 1,
                "train_batch_size": 4000,
                "minibatch_size": 128,
                "num_epochs": 1,
            },
        }
    },
    "scale": {
        "e": {
            "run": "benchmarks.workloads:busy",
            "metric": "score",
            "mode": "max",
            "num_samples": 300,
            "config": {"x": {"uniform": [0, 1]}, "seconds": 0.05},
        }
    },
    # The scale search with Optuna's TPE choosing (its study in the run folder's journal).
    "optuna": {
        "search": "optuna",
        "experiments": {
            "e": {
                "run": "benchmarks.workloads:busy",
                "metric": "score",
                "mode": "max",
                "num_samples": 600,
                "config": {"x": {"uniform": [0, 1]}, "seconds": 0.05},
            }
        },
    },
    # Results at full rate: two trials that report 3,000 results each, with nothing between.
    "flood": {
        "e": {
            "run": "benchmarks.workloads:flood",
            "metric": "score",
            "mode": "max",
            "num_samples": 2,
            "config": {"x": {"uniform": [0, 1]}, "results": 3000},
        }
    },
}


def profile(workload: str) -> tuple[pstats.Stats, float]:
    """Run `workload` through `tune_app.run` under cProfile; the stats and the wall time."""
    import tune_app

    with tempfile.TemporaryDirectory() as folder:
        profiler = cProfile.Profile()
        began = time.perf_counter()
        profiler.enable()
        result = tune_app.run(WORKLOADS[workload], storage_path=Path(folder), verbosity=0)
        profiler.disable()
        wall = time.perf_counter() - began
    if not result.passed:
        raise RuntimeError(f"the {workload} search did not pass")
    return pstats.Stats(profiler), wall


def app_share(stats: pstats.Stats) -> float:
    """Seconds inside the app's own functions that Ray Tune calls (callbacks, stopper, searcher
    and scheduler wrappers), their callees included."""
    table = stats.stats  # type: ignore[attr-defined]
    total = 0.0
    for func, (_, _, _, _, callers) in table.items():
        if "/tune_app/" in func[0]:
            total += sum(edge[3] for caller, edge in callers.items() if "/ray/" in caller[0])
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload", nargs="?", default="ppo", choices=sorted(WORKLOADS))
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    stats, wall = profile(args.workload)
    print(
        f"{args.workload}: driver wall {wall:.1f} s; in the app's own code {app_share(stats):.2f} s"
    )
    stats.sort_stats("tottime").print_stats(args.top)
    print("the app's functions Tune calls, by cumulative time:")
    stats.sort_stats("cumulative").print_stats("/tune_app/", args.top)


if __name__ == "__main__":
    main()
