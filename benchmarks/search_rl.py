"""The control of the search benchmark: grid, random, ASHA, HyperBand, BOHB, PBT and Optuna's TPE
with median stopping (the rl-baselines3-zoo recipe), each through the app, on recorded learning
curves of REINFORCE (trainables/reinforce.py) replayed without sleeping (benchmarks/replay.py).

On this problem a fifth of random draws do well and early results rank configurations poorly, so
no method can be much faster than random search: the targets only ask that no scheduler lose to
it (at most 1.25x its cost). `python -m benchmarks search_rl` runs it.

Compute is counted in trial-iterations (results), so the figures do not depend on the machine's
load. Each method except grid runs once per searcher seed; its compute is the number of results
until the first within 2% of the best value in the table (the best any search of this space can
see), or all the run spent when it never gets there. Figures are ratios of medians over seeds,
with a 90% bootstrap interval (seeds resampled on both sides); a target inside the interval is
"not shown". A target bounds a method from above, so there its runs that never got there count
as never, not as the little they spent. `--record` runs REINFORCE over the whole grid on two
seeds through the app (about 6 minutes on 2 cores) and writes benchmarks/search_table.json anew.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from benchmarks.common import Figure, read_results, start_ray, table
from benchmarks.costs import Costs, ratio_interval, reached
from benchmarks.replay import TABLE, Table, load_table

METRIC = "episode_return_mean"
GOAL = 0.98  # within 2% of the best in the table
MAX_T = 81  # iterations a trial may run: the recorded length
CPUS = 2  # trials at once, on every machine: how results interleave changes what a method spends
EXPERIMENT = "search"
# The recorded space: lr in quarter-decade steps over five decades, the entropy bonus in
# decades, three batch sizes. Tune's grid varies the keys in alphabetical order, the first
# fastest: batch, then entropy_coeff, then lr, so grid search starts with the smallest step
# sizes, where no run gets near the goal in 81 iterations.
AXES: dict[str, list[float]] = {
    "lr": [round(10 ** (k / 4), 8) for k in range(-16, 5)],  # 0.0001 .. 10
    "entropy_coeff": [0.0001, 0.001, 0.01, 0.1],
    "batch": [4, 8, 16],
}
# Each recorded curve is the mean of two seeds' runs, as the app's `seeds:` judges a
# configuration. On one seed, whether a configuration reaches the goal is partly luck: at lr
# 1.0, batch 8 and entropy bonus 0.0001, seed 0 holds the pole by iteration 73 and seed 1 never
# gets past 199, which no early result can foretell (17 configurations reach the goal on
# either seed, 5 on their mean). With three seeds a single configuration of the 252 reached
# the goal, too rare for a search of 128 trials to meet.
RECORD_SEEDS = (0, 1)
CHOICES = ("batch",)  # axes searched as a choice of the recorded values; the rest log-uniform
ENV = "benchmarks.tight_cartpole:TightCartPole"
SCHEDULERS = ("asha", "hyperband", "bohb", "pbt")  # the methods with targets
RL_ZOO = "optuna-tpe-median"
NOT_WORSE = "<= 1.25"  # a scheduler against random search: the control's only target


# ---- the arithmetic (Ray-free) ----------------------------------------------------------------


def cost_until(
    rows: list[dict[str, Any]], goal: float, mode: str = "max"
) -> tuple[int | None, int]:
    """Results logged until the first that reaches `goal`, counting it (None if none does), and
    all results of the run: compute in trial-iterations. `rows` in the order they arrived (as
    results.jsonl holds them; not sorted by clock, which may step)."""
    for n, row in enumerate(rows, 1):
        if reached(row.get(METRIC), goal, mode):
            return n, len(rows)
    return None, len(rows)


def missing_rows(rows: list[dict[str, Any]]) -> list[str]:
    """Trials whose iterations do not run 1, 2, 3 ... in the rows (a result lost on the way
    would make the count of compute too low); not for PBT, whose clones jump."""
    last: dict[str, int] = {}
    broken = []
    for row in rows:
        trial, it = row["trial_id"], row["training_iteration"]
        if it != last.get(trial, 0) + 1 and trial not in broken:
            broken.append(trial)
        last[trial] = it
    return broken


def versus(costs: Costs, other: Costs, target: str = "", note: str = "") -> Figure:
    """`costs` against `other`: the ratio of their medians, with its bootstrap interval. Every
    target bounds `costs` from above, so its missed runs count as never reaching the goal and
    `other`'s as all they spent: neither side's misses can make a target look met."""
    repeated = len(costs.values) > 1 or len(other.values) > 1
    return Figure(
        "search_rl",
        f"{costs.method} / {other.method}: trial-iterations to within 2% of the best",
        median(costs.censored) / other.median,
        target,
        costs.describe(),
        other.describe(),
        note=note,
        spread=ratio_interval(costs.censored, other.values) if repeated else None,
        repeats=len(costs.values),
    )


def figures_of(costs: dict[str, Costs], grid_budget: int, goal: float) -> list[Figure]:
    """The control's figures: every method against grid (no target); each scheduler method
    against random search, which it must not lose to (at most 1.25x its cost), and against
    Optuna's TPE with median stopping (no target)."""
    grid = costs["grid"]
    note = f"goal {METRIC} >= {goal:g}; {MAX_T} iterations at most per trial"
    found = [
        Figure(
            "search_rl",
            "grid: trial-iterations to within 2% of the best / grid's whole budget",
            grid.median / grid_budget,
            "",
            grid.describe(),
            f"grid {grid_budget:,} trial-iterations in all",
            note=note,
        )
    ]
    found += [versus(c, grid, "", note) for name, c in costs.items() if name != "grid"]
    if "random" in costs:
        found += [
            versus(costs[n], costs["random"], NOT_WORSE, note) for n in SCHEDULERS if n in costs
        ]
    if RL_ZOO in costs:
        found += [versus(costs[n], costs[RL_ZOO], "", note) for n in SCHEDULERS if n in costs]
    return found


# ---- the methods, as specs of the app ---------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """One search method: its `search:` and `scheduler:` and how many trials it may start."""

    name: str
    search: Any
    scheduler: Any
    samples: tuple[int, int]  # trials it may start at full size and with --quick (0: not run)
    checkpoint: bool = False  # its scheduler pauses or copies trials: the replay checkpoints
    # max_concurrent_trials: trials are then made only as they can start, so they start in the
    # searcher's order (else Tune may start waiting trials out of order) and a model-based
    # searcher learns between them. Not for HyperBand (its paused trials count) or PBT.
    concurrency: int | None = None
    seeded: bool = True  # repeated over searcher seeds (grid is one order)
    # Its trials end once a result reaches the goal (what comes after is not measured). Not for
    # HyperBand: Tune's brackets can wait forever on trials that end between milestones.
    ends_at_goal: bool = True


def sampled(values: list[float]) -> dict[str, list[float]]:
    """A log-uniform range half a step beyond the end values, so each recorded value is the
    nearest for an equal share of it."""
    low = values[0] / math.sqrt(values[1] / values[0])
    high = values[-1] * math.sqrt(values[-1] / values[-2])
    return {"loguniform": [float(f"{low:.6g}"), float(f"{high:.6g}")]}


HYPERBAND = {"type": "hyperband", "max_t": MAX_T, "reduction_factor": 3}
# Two whole bands of max_t 81, reduction_factor 3: one band holds 143 configurations, about
# three good ones, and often loses them all on its first results
HYPERBAND_TRIALS = 2 * (5 + 8 + 15 + 34 + 81)
PBT = {
    "type": "pbt",
    "perturbation_interval": 9,
    "hyperparam_mutations": {
        key: values if key in CHOICES else sampled(values) for key, values in AXES.items()
    },
    "quantile_fraction": 0.25,
    "resample_probability": 0.25,
}
# rl-baselines3-zoo's recipe: TPESampler(n_startup_trials=5) with MedianPruner(n_startup_trials=5,
# n_warmup_steps=a third of the evaluations); here Tune's median stopping rule after a third.
TPE = {"type": "optuna", "sampler": "tpe", "n_startup_trials": 5}
MEDIAN = {
    "type": "median",
    "time_attr": "training_iteration",
    "grace_period": MAX_T // 3,
    "min_samples_required": 5,
}
ASHA = {"type": "asha", "max_t": MAX_T, "grace_period": 3, "reduction_factor": 3}
METHODS = (
    Method("grid", "grid", "fifo", (1, 1), concurrency=CPUS, seeded=False),
    Method("random", "random", "fifo", (128, 32), concurrency=CPUS),
    Method("asha", "random", ASHA, (256, 64), concurrency=CPUS),
    Method("hyperband", "random", HYPERBAND, (HYPERBAND_TRIALS, 28), True, ends_at_goal=False),
    Method(
        "bohb",
        {"type": "bohb"},
        HYPERBAND,
        (HYPERBAND_TRIALS, 81),
        checkpoint=True,
        concurrency=CPUS,
        ends_at_goal=False,
    ),
    Method("pbt", "random", PBT, (8, 8), checkpoint=True),
    Method(RL_ZOO, TPE, MEDIAN, (128, 32), concurrency=CPUS),
    Method("optuna-tpe", TPE, "fifo", (128, 0), concurrency=CPUS),
)


def spec(method: Method, seed: int, goal: float, goal_file: Path, quick: bool) -> dict[str, Any]:
    """The app's spec of one run of `method` on the replayed table."""
    if method.search == "grid":
        space: dict[str, Any] = {k: {"grid_search": v} for k, v in AXES.items()}
    else:
        space = {
            key: {"choice": values} if key in CHOICES else sampled(values)
            for key, values in AXES.items()
        }
    experiment: dict[str, Any] = {
        "run": "benchmarks.replay:replay",
        "num_samples": method.samples[quick],
        "stop": {"training_iteration": MAX_T},
        "config": {**space, "checkpoint": method.checkpoint},
    }
    if method.ends_at_goal:
        experiment["config"].update(goal=goal, goal_file=str(goal_file))
    if method.concurrency:
        experiment["max_concurrent_trials"] = method.concurrency
    return {
        "metric": METRIC,
        "mode": "max",
        "seed": seed,
        "search": method.search,
        "scheduler": method.scheduler,
        "experiments": {EXPERIMENT: experiment},
    }


# ---- running --------------------------------------------------------------------------------

SEEDS = (30, 2)  # searcher seeds per method: full size, --quick


def run_method(
    method: Method, seed: int, goal: float, tmp: Path, quick: bool
) -> tuple[int | None, int]:
    """One run of `method` through the app: its compute to the goal and in all."""
    import tune_app

    folder = tmp / f"{method.name}-{seed}"
    folder.mkdir()
    runs = folder / "runs"
    tune_app.run(spec(method, seed, goal, folder / "goal", quick), storage_path=runs)
    rows = read_results(runs / EXPERIMENT)
    broken = [] if method.scheduler is PBT else missing_rows(rows)
    if broken:  # kept for a look
        raise RuntimeError(f"{runs / EXPERIMENT}: results missing in trials {broken[:5]}")
    shutil.rmtree(folder, ignore_errors=True)
    return cost_until(rows, goal)


def run(quick: bool = False) -> list[Figure]:
    import ray

    replayed = load_table()
    goal = GOAL * replayed.best
    costs: dict[str, Costs] = {}
    start_ray(CPUS)
    try:
        with tempfile.TemporaryDirectory() as folder:
            for method in (m for m in METHODS if m.samples[quick]):
                began = time.monotonic()
                seeds = range(SEEDS[quick] if method.seeded else 1)
                spent = [run_method(method, s, goal, Path(folder), quick) for s in seeds]
                costs[method.name] = Costs(
                    method.name,
                    tuple(until if until is not None else total for until, total in spent),
                    tuple(until is None for until, _ in spent),
                )
                print(
                    f"  {costs[method.name].describe()}; {time.monotonic() - began:.0f} s\n"
                    f"    runs: {costs[method.name].listing()}",
                    flush=True,
                )
    finally:
        ray.shutdown()
    return figures_of(costs, len(replayed.curves) * MAX_T, goal)


# ---- recording the table ----------------------------------------------------------------------


def record_spec(axes: dict[str, list[float]], iterations: int) -> dict[str, Any]:
    """REINFORCE over the whole grid of `axes`, each configuration on `RECORD_SEEDS`."""
    return {
        "metric": METRIC,
        "mode": "max",
        "search": "grid",
        "experiments": {
            "record": {
                "run": "reinforce",
                "env": ENV,
                "stop": {"training_iteration": iterations},
                "config": {
                    **{key: {"grid_search": values} for key, values in axes.items()},
                    "seed": {"grid_search": list(RECORD_SEEDS)},
                },
            }
        },
    }


def curves_from_rows(
    rows: list[dict[str, Any]], axes: dict[str, list[float]], iterations: int
) -> list[list[float]]:
    """Each configuration's metric by iteration, the mean over the seeds it ran with, in the
    table's order (row-major over `axes`); every configuration must have run the same seeds."""
    size = math.prod(len(v) for v in axes.values())
    grid = Table(METRIC, "max", axes, [[0.0]] * size)
    configs = grid.configs()
    runs: dict[tuple[int, Any], list[float | None]] = {}  # (configuration, seed) -> its curve
    trials: dict[str, tuple[int, Any]] = {}  # trial id -> its run (on the trial's first row)
    for row in rows:
        if "config" in row:
            i = grid.nearest(row["config"])
            if configs[i] != {k: row["config"][k] for k in axes}:
                raise ValueError(f"a result of {row['config']}, which is not on the grid")
            trials[row["trial_id"]] = (i, row["config"].get("seed"))
            runs.setdefault(trials[row["trial_id"]], [None] * iterations)
        runs[trials[row["trial_id"]]][row["training_iteration"] - 1] = row[METRIC]
    seeds = sorted({seed for _, seed in runs}, key=str)
    gaps = [(i, seed) for i in range(size) for seed in seeds if None in runs.get((i, seed), [None])]
    if gaps:
        i, seed = gaps[0]
        raise ValueError(f"{len(gaps)} runs lack results, the first {configs[i]} with seed {seed}")
    means = []
    for i in range(size):
        curves = [[v for v in runs[i, seed] if v is not None] for seed in seeds]
        means.append([round(sum(values) / len(values), 3) for values in zip(*curves, strict=True)])
    return means


def record(
    path: Path = TABLE, axes: dict[str, list[float]] = AXES, iterations: int = MAX_T
) -> Table:
    """Run REINFORCE over every configuration of `axes` through the app; write the table."""
    import tune_app

    day = time.strftime("%Y-%m-%d")
    with tempfile.TemporaryDirectory() as folder:
        tune_app.run(record_spec(axes, iterations), storage_path=folder)
        rows = read_results(Path(folder) / "record")
    recorded = Table(
        metric=METRIC,
        mode="max",
        axes=axes,
        curves=curves_from_rows(rows, axes, iterations),
        about=(
            f"reinforce (trainables/reinforce.py) on {ENV}: {METRIC} (the last 100 "
            f"episodes) of its first {iterations} iterations for every configuration "
            f"of the axes, the mean over seeds {', '.join(map(str, RECORD_SEEDS))}, recorded "
            f"through the app by `python -m benchmarks.search_rl --record` on {day}"
        ),
    )
    path.write_text(json.dumps(recorded.to_json(), separators=(",", ":")) + "\n")
    return recorded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--record", action="store_true", help=f"record {TABLE.name} anew")
    args = parser.parse_args()
    if args.record:
        recorded = record()
        print(f"{TABLE}: {len(recorded.curves)} curves, best {recorded.best:g}")
        return
    print(table(run(args.quick)))


if __name__ == "__main__":
    main()
