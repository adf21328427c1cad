"""Search efficiency on a published multi-fidelity problem: LCBench (YAHPO Gym's surrogate,
trainables/lcbench.py) on the YAHPO-SO suite's three tasks, through the app. Random search,
ASHA, HyperBand, BOHB, Optuna's TPE with median stopping (the rl-baselines3-zoo recipe) and
hyperopt's TPE each run once per searcher seed on each task.

Compute is counted in epochs (results), so the figures do not depend on the machine's load. A
run's cost is the epochs it consumed until the first trial reports an epoch-52 val_accuracy in
the top 1% of a random pool of configurations (`POOL`, drawn and evaluated once per task with
the surrogate), or all it spent when none does. Its regret is the pool's best epoch-52
val_accuracy less the best epoch-52 val_accuracy the run reported within its first `BUDGET`
epochs. Per task: ratios of medians over seeds against random search; pooled: their geometric
mean over the tasks; both with a 95% bootstrap interval (each task's seeds resampled on both
sides). Targets are judged on the pooled figures' intervals. Every run is also written, one
line each, to a records file, so figures can be worked out again from it (`--records`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from benchmarks.common import Figure, _finite, read_results, start_ray, table, write_json
from benchmarks.costs import (
    Costs,
    difference_interval,
    geometric_mean,
    pooled_interval,
    ratio_interval,
)
from trainables import lcbench
from tune_app.rundir import rungs

TASKS = lcbench.TASKS
EPOCHS = lcbench.EPOCHS
TOP = 0.01  # the goal: an epoch-52 val_accuracy in the top 1% of the pool
POOL = 100_000  # random configurations per task behind the goal and the regret
BUDGET = 20 * EPOCHS  # regret is measured after this many epochs (20 full trainings)
CPUS = 2  # trials at once, on every machine: how results interleave changes what a method spends
EXPERIMENT = "lcbench"
METRIC = "val_accuracy"
SEEDS = (20, 1)  # searcher seeds per method and task: full size, --quick
LEVEL = 0.95  # of the bootstrap intervals


# ---- the problem (Ray-free) -------------------------------------------------------------------


def sample(n: int, seed: int) -> list[dict[str, float]]:
    """`n` random configurations of LCBench's space, as the searches' space draws them."""
    rng = np.random.default_rng(seed)
    columns = {}
    for key, (low, high, log, integer) in lcbench.SPACE.items():
        top = high + 1 if integer else high  # integers: upper bound included, as in the space
        draw = (
            np.exp(rng.uniform(math.log(low), math.log(top), n))
            if log
            else rng.uniform(low, top, n)
        )
        columns[key] = np.clip(np.floor(draw), low, high) if integer else draw
    return [{k: float(columns[k][i]) for k in columns} for i in range(n)]


@dataclass(frozen=True)
class Goal:
    """What a search of one task is judged against: from the pool's epoch-52 values."""

    task: str
    threshold: float  # the top `TOP` of the pool starts here
    best: float  # the pool's best
    typical: float  # the pool's median: a run that finished no trial within the budget
    size: int


def goal_of(task: str, finals: Iterable[float], top: float = TOP) -> Goal:
    values = np.sort(np.asarray(list(finals), dtype=float))
    return Goal(
        task=task,
        threshold=float(np.quantile(values, 1 - top)),
        best=float(values[-1]),
        typical=float(np.median(values)),
        size=len(values),
    )


def pool_goal(task: str, size: int = POOL, seed: int = 0, data: str | None = None) -> Goal:
    """The goal of `task` from `size` random configurations evaluated at epoch 52."""
    model = lcbench.surrogate(str(lcbench.locate(data)))
    finals = model.curves(task, sample(size, seed), [EPOCHS])[:, 0, 1]
    return goal_of(task, finals)


@dataclass(frozen=True)
class Run:
    """One search's outcome: epochs until the goal (None: never), epochs in all, and regret;
    for a scheduler with rungs, each rung's Spearman with the final epoch (`rung_spearman`)."""

    cost: int | None
    spent: int
    regret: float
    rungs: dict[str, float | None] = field(default_factory=dict)  # epoch -> Spearman


def judge(rows: list[dict[str, Any]], goal: Goal, budget: int = BUDGET) -> Run:
    """A run's cost and regret from its results in arrival order (one result per epoch)."""
    cost, best = None, None
    for n, row in enumerate(rows, 1):
        if row.get("epoch") != EPOCHS or not isinstance(row.get(METRIC), int | float):
            continue
        value = float(row[METRIC])
        if n <= budget:
            best = value if best is None else max(best, value)
        if cost is None and value >= goal.threshold:
            cost = n
    regret = goal.best - (best if best is not None else goal.typical)
    return Run(cost, len(rows), regret)


# ASHA's rungs and the epochs where HyperBand's and BOHB's brackets start (2 * 3^k).
RUNGS = (2, 6, 18)


def rung_spearman(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """At each of `RUNGS`, the Spearman correlation of the val_accuracy there with the epoch-52
    val_accuracy over the run's trials that reached epoch 52 (the app's check,
    `tune_app.rundir.rungs`, on the known rungs: a run ended by the budget cuts trials at any
    epoch, which the app's own reading would take for rungs)."""
    curves: rungs.Curves = {}
    for row in rows:
        if isinstance(row.get(METRIC), int | float) and isinstance(row.get("epoch"), int):
            curves.setdefault(str(row.get("trial_id")), {})[row["epoch"]] = float(row[METRIC])
    finals = {t: v for t, c in curves.items() if (v := c.get(EPOCHS)) is not None}
    return {str(c.rung): c.spearman for c in rungs.check(curves, finals, RUNGS)}


def pool_spearman(task: str, size: int = 5000, seed: int = 0, data: str | None = None) -> Any:
    """Over `size` random configurations: each rung's Spearman with epoch 52, over them all and
    over the top third at the rung (what a rung of reduction factor 3 keeps)."""
    model = lcbench.surrogate(str(lcbench.locate(data)))
    values = model.curves(task, sample(size, seed), [*RUNGS, EPOCHS])[:, :, 1]
    out = {}
    for i, rung in enumerate(RUNGS):
        kept = values[:, i] >= np.quantile(values[:, i], 2 / 3)
        out[rung] = (
            rungs.spearman(list(values[:, i]), list(values[:, -1])),
            rungs.spearman(list(values[kept, i]), list(values[kept, -1])),
        )
    return out


# ---- the figures (Ray-free) -------------------------------------------------------------------

SCHEDULERS = {"asha": "<= 0.4", "hyperband": "<= 0.5", "bohb": "<= 0.5"}  # against random
RL_ZOO = "optuna-tpe-median"


def costs_of(runs: list[Run], method: str) -> Costs:
    return Costs(
        method,
        tuple(r.cost if r.cost is not None else r.spent for r in runs),
        tuple(r.cost is None for r in runs),
        unit="epochs",
    )


def per_task(
    method: str, other: str, runs: dict[str, dict[str, list[Run]]], goals: dict[str, Goal]
) -> list[Figure]:
    """`method` against `other` on each task: the ratio of median costs, no target."""
    found = []
    for task, by_method in runs.items():
        a, b = costs_of(by_method[method], method), costs_of(by_method[other], other)
        found.append(
            Figure(
                "search",
                f"{task}: {method} / {other}, epochs to the top 1%",
                median(a.censored) / b.median,
                "",
                a.describe(),
                b.describe(),
                note=f"val_accuracy >= {goals[task].threshold:.2f} (pool {goals[task].size:,})",
                spread=ratio_interval(a.censored, b.values, level=LEVEL),
                repeats=len(a.values),
            )
        )
    return found


def pooled(method: str, other: str, target: str, runs: dict[str, dict[str, list[Run]]]) -> Figure:
    """`method` against `other` over all tasks: the geometric mean of the per-task ratios. The
    side a target bounds counts its misses as never reaching the goal."""
    pairs = [
        (costs_of(r[method], method).censored, costs_of(r[other], other).values)
        for r in runs.values()
    ]
    medians = {
        name: [costs_of(r[name], name).median for r in runs.values()] for name in (method, other)
    }
    missed = {name: sum(costs_of(r[name], name).missed for r in runs.values()) for name in medians}
    seeds = sum(len(r[method]) for r in runs.values())

    def said(name: str) -> str:
        values = ", ".join(f"{m:,.0f}" for m in medians[name])
        return f"{name} median epochs per task {values}; {missed[name]} runs never got there"

    return Figure(
        "search",
        f"pooled: {method} / {other}, epochs to the top 1% (geometric mean over tasks)",
        geometric_mean([median(num) / median(den) for num, den in pairs]),
        target,
        said(method),
        said(other),
        note=f"{len(runs)} tasks",
        spread=pooled_interval(pairs, level=LEVEL),
        repeats=seeds,
    )


def regret_figures(runs: dict[str, dict[str, list[Run]]], methods: list[str]) -> list[Figure]:
    """Each method's regret at the budget (the mean over tasks of its median), and BOHB's less
    HyperBand's, which must not be above 0."""
    found = []
    for method in methods:
        medians = [median(r.regret for r in by[method]) for by in runs.values()]
        found.append(
            Figure(
                "search",
                f"pooled: {method} regret after {BUDGET:,} epochs (val_accuracy points)",
                sum(medians) / len(medians),
                "",
                f"median per task {', '.join(f'{m:.2f}' for m in medians)}",
                "the pool's best epoch-52 val_accuracy",
                repeats=sum(len(by[method]) for by in runs.values()),
            )
        )
    if {"bohb", "hyperband"} <= set(methods):
        pairs = [
            ([r.regret for r in by["bohb"]], [r.regret for r in by["hyperband"]])
            for by in runs.values()
        ]
        diffs = [median(a) - median(b) for a, b in pairs]
        found.append(
            Figure(
                "search",
                f"pooled: bohb regret - hyperband regret after {BUDGET:,} epochs",
                sum(diffs) / len(diffs),
                "<= 0",
                "bohb median regret per task",
                "hyperband's",
                spread=difference_interval(pairs, level=LEVEL),
                repeats=sum(len(p[0]) for p in pairs),
            )
        )
    return found


def figures_of(runs: dict[str, dict[str, list[Run]]], goals: dict[str, Goal]) -> list[Figure]:
    """Every method against random search per task and pooled (targets on the pooled ratios of
    the schedulers), the schedulers against Optuna's TPE with median stopping (at least one must
    beat it; all are shown, so the one that does is not picked after the fact), and regrets."""
    methods = list(next(iter(runs.values())))
    found: list[Figure] = []
    others = [m for m in methods if m != "random"]
    if "random" in methods:
        for m in others:
            found += per_task(m, "random", runs, goals)
        found += [pooled(m, "random", SCHEDULERS.get(m, ""), runs) for m in others]
    if RL_ZOO in methods:
        found += [pooled(m, RL_ZOO, "< 1", runs) for m in SCHEDULERS if m in methods]
    return found + regret_figures(runs, methods)


# ---- the methods, as specs of the app ---------------------------------------------------------


@dataclass(frozen=True)
class Finalists:
    """A second phase after a search of short trials (Egele et al.'s one-epoch baseline): every
    trial of the first search runs `epochs` epochs, then the `keep` configurations with the best
    val_accuracy there are trained to epoch 52 by a second search, a grid over them in rank
    order (Tune's grid starts its values in order, so the best at `epochs` starts first)."""

    epochs: int  # k: the first search's trials stop here
    keep: tuple[int, int]  # configurations trained to the end, at full size and with --quick


@dataclass(frozen=True)
class Method:
    """One search method: its `search:` and `scheduler:` and how many trials it may start."""

    name: str
    search: Any
    scheduler: Any
    samples: tuple[int, int]  # trials it may start at full size and with --quick
    checkpoint: bool = False  # its scheduler pauses trials
    # Trials made only as they can start, so a model-based searcher learns between them; not
    # for HyperBand (its paused trials count against the limit).
    concurrency: int | None = CPUS
    finalists: Finalists | None = None  # its trials stop early, and the best go on in a grid


SPACE = {
    "batch_size": {"lograndint": [16, 513]},
    "learning_rate": {"loguniform": [1e-4, 0.1]},
    "momentum": {"uniform": [0.1, 0.99]},
    "weight_decay": {"uniform": [1e-5, 0.1]},
    "num_layers": {"randint": [1, 6]},
    "max_units": {"lograndint": [64, 1025]},
    "max_dropout": {"uniform": [0.0, 1.0]},
}
# Rungs at 2, 6 and 18 epochs (2 * 3^k): epoch 1 ranks configurations at chance on 167168.
ASHA = {"type": "asha", "time_attr": "epoch", "max_t": EPOCHS, "grace_period": 2}
ASHA["reduction_factor"] = 3
# Tune's HyperBand starts bracket s at int(max_t / 3^s) epochs: with max_t 52 its fourth
# bracket would start at 1. With 54 (2 * 3^3) the brackets start at 54, 18, 6 and 2 epochs;
# trials end at 52 on their own.
HYPERBAND = {"type": "hyperband", "time_attr": "epoch", "max_t": 54, "reduction_factor": 3}
BAND = 5 + 8 + 15 + 34  # trials in one band of those brackets
# rl-baselines3-zoo's recipe: TPESampler(n_startup_trials=5) with MedianPruner(n_startup_trials=5,
# n_warmup_steps=a third of the evaluations); here Tune's median stopping rule after a third.
TPE = {"type": "optuna", "sampler": "tpe", "n_startup_trials": 5}
MEDIAN = {
    "type": "median",
    "time_attr": "epoch",
    "grace_period": EPOCHS // 3,
    "min_samples_required": 5,
}
METHODS = (
    Method("random", "random", "fifo", (300, 20)),
    Method("asha", "random", ASHA, (1000, 60)),
    Method("hyperband", "random", HYPERBAND, (6 * BAND, BAND), True, concurrency=None),
    Method("bohb", {"type": "bohb"}, HYPERBAND, (6 * BAND, BAND), True),
    Method(RL_ZOO, TPE, MEDIAN, (300, 20)),
    Method("hyperopt-tpe", {"type": "hyperopt"}, "fifo", (300, 20)),
    # Egele et al. (2023), "Is one epoch all you need for multi-fidelity hyperparameter
    # optimization?": as many configurations as random search may start, each trained 1 epoch,
    # then the top 10% to epoch 52, best first; and the same with 2 epochs, LCBench's first
    # epoch that ranks configurations (see RUNGS).
    Method("one-epoch", "random", "fifo", (300, 20), finalists=Finalists(1, (30, 4))),
    Method("two-epoch", "random", "fifo", (300, 20), finalists=Finalists(2, (30, 4))),
)


def finalists(rows: list[dict[str, Any]], epochs: int, keep: int) -> list[dict[str, Any]]:
    """The searched values of the `keep` trials with the best val_accuracy at epoch `epochs`,
    best first (a tie goes to the trial that reported first); a trial that never reported that
    epoch is not among them."""
    configs: dict[str, dict[str, Any]] = {}
    scores: dict[str, float] = {}
    for row in rows:
        trial_id = str(row.get("trial_id"))
        if isinstance(row.get("config"), dict):
            configs.setdefault(trial_id, {k: row["config"][k] for k in SPACE})
        if row.get("epoch") == epochs and isinstance(row.get(METRIC), int | float):
            scores.setdefault(trial_id, float(row[METRIC]))
    ranked = sorted(scores, key=lambda t: -scores[t])  # stable: ties keep arrival order
    return [configs[t] for t in ranked[:keep]]


def spec(
    method: Method,
    task: str,
    seed: int,
    goal: Goal,
    folder: Path,
    quick: bool,
    data: str | None,
    chosen: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The app's spec of one run of `method` on `task`; with `chosen`, the spec of its second
    phase: a grid over those configurations, each trained to the end."""
    searched: dict[str, Any] = {"finalist": {"grid_search": chosen}} if chosen else SPACE
    stop = method.finalists.epochs if method.finalists and chosen is None else EPOCHS
    config: dict[str, Any] = {
        **searched,
        "task": task,
        "checkpoint": method.checkpoint,
        "goal": goal.threshold,
        "budget": BUDGET,
        "folder": str(folder),
    }
    if data:
        config["data"] = data
    experiment: dict[str, Any] = {
        "run": "benchmarks.search:trial",
        "num_samples": 1 if chosen else method.samples[quick],
        "stop": {"epoch": stop},
        "config": config,
        "fail_fast": True,
    }
    if method.concurrency:
        experiment["max_concurrent_trials"] = method.concurrency
    return {
        "metric": METRIC,
        "mode": "max",
        "seed": seed,
        "search": "grid" if chosen else method.search,
        "scheduler": "fifo" if chosen else method.scheduler,
        "experiments": {EXPERIMENT: experiment},
    }


class SearchOver(Exception):
    """Raised by a trial once its search has met the goal and spent the budget: with the
    experiment's `fail_fast`, Tune ends the whole run there."""


def trial(config: dict[str, Any]) -> None:
    """The benchmark's trainable: LCBench's, ending the search once the goal was met and the
    budget spent (what a search does after that is not measured). Before each epoch's report,
    the trial adds a byte to `spent` and creates `met` if that epoch meets the goal; once both
    hold, the next epoch of any trial raises `SearchOver` instead, which ends the run. A
    finalist's configuration comes as the value of `finalist`."""
    config = {**config, **config.get("finalist", {})}
    folder = Path(config["folder"])
    spent, met = folder / "spent", folder / "met"

    def before(epoch: int, value: float) -> None:
        if met.exists() and spent.stat().st_size >= config["budget"]:
            raise SearchOver()
        with spent.open("ab") as f:
            f.write(b".")
        if epoch == EPOCHS and value >= config["goal"]:
            met.touch()

    lcbench.run_epochs(config, before)


# ---- running ---------------------------------------------------------------------------------


def start_search_ray() -> None:
    """One local Ray for every run; its workers import `benchmarks` from the checkout. Tune
    buffers results of trials without checkpoints (a trial runs a few epochs ahead, and those
    are dropped when it is stopped): one result per call, so the epochs a trial computes are
    the epochs logged, and the budget counted in `spent` is the one in the rows."""
    os.environ["TUNE_RESULT_BUFFER_LENGTH"] = "1"
    start_ray(CPUS)


def run_search(experiment: dict[str, Any], folder: Path, runs: Path) -> list[dict[str, Any]]:
    """One search through the app; its results in arrival order."""
    import tune_app

    try:
        tune_app.run(experiment, storage_path=runs)
    except RuntimeError as err:
        # Ended by `fail_fast` with trials never started, Tune's result grid can fail on them;
        # every result is logged by then. Anything else is the caller's.
        if "trial_fs_path" not in str(err) or not (folder / "met").exists():
            raise
    return read_results(runs / EXPERIMENT)


def run_method(
    method: Method, task: str, seed: int, goal: Goal, tmp: Path, quick: bool, data: str | None
) -> Run:
    """One run of `method` on `task` through the app: one search, or two with `finalists`
    (their results one after the other, as the epochs were spent; both count the same budget
    in `spent`, so the second is ended like any other once the goal is met and it is spent)."""
    folder = tmp / f"{method.name}-{task}-{seed}"
    folder.mkdir()
    rows = run_search(spec(method, task, seed, goal, folder, quick, data), folder, folder / "runs")
    if method.finalists:
        chosen = finalists(rows, method.finalists.epochs, method.finalists.keep[quick])
        second = spec(method, task, seed, goal, folder, quick, data, chosen)
        rows += run_search(second, folder, folder / "finalists")
    shutil.rmtree(folder, ignore_errors=True)
    done = judge(rows, goal)
    if method.name in SCHEDULERS:
        done = replace(done, rungs=rung_spearman(rows))
    return done


def recorded(*paths: Path) -> dict[tuple[str, str, int], Run]:
    """Every run in records files, by (task, method, seed); a later line wins."""
    found = {}
    for path in paths:
        for line in path.read_text().splitlines():
            r = json.loads(line)
            found[r["task"], r["method"], r["seed"]] = Run(
                r["cost"], r["spent"], r["regret"], r.get("rungs") or {}
            )
    return found


def load_records(*paths: Path) -> dict[str, dict[str, list[Run]]]:
    """Runs by task and method from records files, by seed; on each task only the seeds that
    every method ran there (a run cut short leaves its last seed incomplete)."""
    found = recorded(*paths)
    methods = [m.name for m in METHODS if any(k[1] == m.name for k in found)]
    runs = {}
    for task in sorted({t for t, _, _ in found}):
        seeds = sorted(
            s for s in {k[2] for k in found} if all((task, m, s) in found for m in methods)
        )
        if seeds:
            runs[task] = {m: [found[task, m, s] for s in seeds] for m in methods}
    return runs


def run(
    quick: bool = False,
    records: Path | None = None,
    data: str | None = None,
    tasks: tuple[str, ...] = TASKS,
    first_seed: int = 0,
    skip: frozenset[tuple[str, str, int]] = frozenset(),
    methods: tuple[str, ...] = (),
) -> list[Figure]:
    """Every method (or those named in `methods`) on every task over `SEEDS` searcher seeds,
    seed by seed (so a cut-short run still leaves whole seeds in `records`), but the (task,
    method, seed) runs in `skip`; the figures of the runs made, or with `skip` of the whole
    records file."""
    import ray

    data = data or os.environ.get("LCBENCH_DATA") or None
    goals = {task: pool_goal(task, data=data) for task in tasks}
    for g in goals.values():
        print(
            f"  {g.task}: pool {g.size:,}, top 1% from {g.threshold:.2f}, best {g.best:.2f}",
            flush=True,
        )
    chosen = [m for m in METHODS if not methods or m.name in methods]
    runs: dict[str, dict[str, list[Run]]] = {t: {m.name: [] for m in chosen} for t in tasks}
    records = records or Path(tempfile.gettempdir()) / f"lcbench-search-{os.getpid()}.jsonl"
    start_search_ray()
    try:
        with tempfile.TemporaryDirectory() as folder:
            for seed in range(first_seed, SEEDS[quick]):
                for task in tasks:
                    for method in chosen:
                        if (task, method.name, seed) in skip:
                            continue
                        began = time.monotonic()
                        goal, tmp = goals[task], Path(folder)
                        try:
                            done = run_method(method, task, seed, goal, tmp, quick, data)
                        except Exception as err:  # noqa: BLE001 - Tune's, under load: left out
                            print(f"  left out: {method.name} {task} {seed}: {err}", flush=True)
                            ray.shutdown()  # Tune's state after a failed fit is not reusable
                            start_search_ray()
                            continue
                        runs[task][method.name].append(done)
                        line = {"task": task, "method": method.name, "seed": seed, **asdict(done)}
                        with records.open("a") as f:
                            f.write(json.dumps(line) + "\n")
                        print(f"  {line} {time.monotonic() - began:.0f} s", flush=True)
    finally:
        ray.shutdown()
    print(f"  runs recorded in {records}", flush=True)
    if skip:  # the figures of the whole records file, not of the holes filled
        runs = {t: by for t, by in load_records(records).items() if t in goals}
    return figures_of(runs, goals)


def rung_runs(
    tasks: Iterable[str], records: Path, data: str | None = None, seed: int = 0
) -> dict[tuple[str, str, int], Run]:
    """One run of ASHA, HyperBand and BOHB on each task (searcher seed `seed`), each appended
    to `records` as `run` writes it; the runs made."""
    import ray

    done: dict[tuple[str, str, int], Run] = {}
    start_search_ray()
    try:
        with tempfile.TemporaryDirectory() as folder:
            for task in tasks:
                goal = pool_goal(task, data=data)
                for method in (m for m in METHODS if m.name in SCHEDULERS):
                    try:
                        found = run_method(method, task, seed, goal, Path(folder), False, data)
                    except Exception as err:  # noqa: BLE001 - as in `run`: left out, said
                        print(f"  left out: {method.name} {task} {seed}: {err}", flush=True)
                        ray.shutdown()
                        start_search_ray()
                        continue
                    done[task, method.name, seed] = found
                    line = {"task": task, "method": method.name, "seed": seed, **asdict(found)}
                    with records.open("a") as f:
                        f.write(json.dumps(line) + "\n")
                    print(f"  {line}", flush=True)
    finally:
        ray.shutdown()
    return done


def rung_table(
    tasks: Iterable[str], records: dict[tuple[str, str, int], Run], data: str | None = None
) -> str:
    """Markdown: at each rung of each task, its Spearman with epoch 52 over a random pool (all
    of it, and the top third at the rung) and in the runs of `records` (the app's check, the
    median over their seeds, with their count)."""
    methods = list(SCHEDULERS)
    head = "| task | rung (epoch) | pool: all | pool: top third | " + " | ".join(methods) + " |"
    lines = [head, "|" + "---|" * (4 + len(methods))]
    for task in tasks:
        pool = pool_spearman(task, data=data)
        for rung in RUNGS:
            cells = []
            for m in methods:
                found = [
                    r.rungs.get(str(rung)) for (t, name, _), r in records.items()
                    if t == task and name == m and r.rungs
                ]  # fmt: skip
                judged = [v for v in found if v is not None]
                cells.append(
                    f"{median(judged):.2f} ({len(judged)} of {len(found)} runs)"
                    if judged
                    else f"- ({len(found)} runs)"
                )
            everyone, kept = pool[rung]
            lines.append(
                f"| {task} | {rung} | {everyone:.2f} | {kept:.2f} | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


def _kind(name: str) -> tuple[bool, bool]:
    """Where a figure's row goes in the table: pooled or per task, a regret or a ratio."""
    return name.startswith("pooled:"), "regret" in name


def add_to(path: Path, figures: list[Figure], methods: Iterable[str], source: str) -> str:
    """Put the figures of `methods` (those with one of them before " / " or " regret") into
    the results file at `path`, each beside the rows of its kind (a row of the same name is
    replaced), its other rows, note and sources kept, `source` said for them; the table of the
    whole file."""
    data = json.loads(path.read_text())
    rows: list[dict[str, Any]] = data["figures"]
    names = tuple(f"{m} /" for m in methods) + tuple(f"{m} regret" for m in methods)
    for figure in (f for f in figures if any(n in f.name for n in names)):
        row = {**{k: _finite(v) for k, v in asdict(figure).items()}}
        row.update(met=figure.met, verdict=figure.verdict)
        same = [i for i, r in enumerate(rows) if r["name"] == figure.name]
        kind = [
            i
            for i, r in enumerate(rows)
            if r["benchmark"] == figure.benchmark and _kind(r["name"]) == _kind(figure.name)
        ]
        if same:
            rows[same[0]] = row
        else:
            rows.insert(kind[-1] + 1 if kind else len(rows), row)
    data.setdefault("sources", {})[f"search ({', '.join(methods)})"] = source
    path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
    return table([_figure(r) for r in rows])


def _figure(row: dict[str, Any]) -> Figure:
    """A row of a results file as the `Figure` it was written from (null: infinite)."""

    def number(v: Any) -> float:
        return math.inf if v is None else float(v)

    kept = {k: v for k, v in row.items() if k not in ("met", "verdict")}
    spread = kept.get("spread")
    kept["spread"] = tuple(number(v) for v in spread) if spread else None
    return Figure(**{**kept, "value": number(kept["value"])})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--data", help="folder of the LCBench surrogate")
    parser.add_argument("--records", type=Path, help="append each run here (JSON lines)")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--first-seed", type=int, default=0, help="go on from this seed")
    parser.add_argument(
        "--methods",
        nargs="+",
        default=[],
        choices=[m.name for m in METHODS],
        help="run only these methods (default: all)",
    )
    parser.add_argument(
        "--fill",
        action="store_true",
        help="run only what --records lacks (a cut-short or left-out run's seeds), appending it",
    )
    parser.add_argument(
        "--from-records",
        type=Path,
        nargs="+",
        help="only work the figures out from records files (their common seeds)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--add-to",
        type=Path,
        help="put the figures of --methods (but random) into this results file "
        "(benchmarks/results.json), beside its rows, and print its whole table",
    )
    parser.add_argument(
        "--rungs",
        action="store_true",
        help="each rung's Spearman with epoch 52, over a random pool and in ASHA, HyperBand "
        "and BOHB runs: one each per task (seed --first-seed, appended to --records), or "
        "those of --from-records files",
    )
    args = parser.parse_args()
    if args.rungs:
        if args.from_records:
            found = recorded(*args.from_records)
        else:
            records = args.records or Path(tempfile.gettempdir()) / f"rungs-{os.getpid()}.jsonl"
            found = rung_runs(args.tasks, records, args.data, args.first_seed)
        print(rung_table(args.tasks, found, args.data))
        return
    if args.from_records:
        runs = load_records(*args.from_records)
        goals = {task: pool_goal(task, data=args.data) for task in runs}
        figures = figures_of(runs, goals)
    else:
        skip: frozenset[tuple[str, str, int]] = frozenset()
        if args.fill:
            if not (args.records and args.records.exists()):
                parser.error("--fill needs --records FILE, an existing records file")
            skip = frozenset(recorded(args.records))
        tasks = tuple(args.tasks)
        figures = run(
            args.quick, args.records, args.data, tasks, args.first_seed, skip, tuple(args.methods)
        )
    if args.json:
        write_json(args.json, figures, args.quick)
    if args.add_to:
        added = [m for m in args.methods if m != "random"]
        if not added:
            parser.error("--add-to needs --methods naming the methods whose figures it adds")
        when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        source = f"{when} (python -m benchmarks.search {' '.join(sys.argv[1:])})"
        print(add_to(args.add_to, figures, added, source))
        return
    print(table(figures))


if __name__ == "__main__":
    main()
