"""Warm start on LCBench (issue 46, item 4): Optuna's TPE continued from an earlier run
(`warm_start`) against a cold search of the same size, through the app, on the `search`
benchmark's problem (its tasks, space, TPE settings, pool and judge; benchmarks/search.py).

Per task and searcher seed, three arms of `TRIALS` trials each, every trial trained to epoch 52
under the FIFO scheduler, two trials at a time (the `search` benchmark's `CPUS`):

- cold: one search of `TRIALS` trials (searcher seed s);
- warm: a search of half of them (seed s), then a second search of the other half (seed
  s + `SECOND`) whose experiment has `warm_start: [<the first run's folder>]`;
- restart: the same first search, then a second search of the other half with seed s +
  `SECOND` and no warm start: the best of both. It differs from warm only in the key.

A search here is never ended early: the benchmark's trial ends a run once the goal is met and
its budget spent, and these runs' goal (`NEVER`) is above any val_accuracy. An arm's regret is
the pool's best epoch-52 val_accuracy less the best epoch-52 val_accuracy among its trials
(`search.judge` over all its results); also after its first half of epochs, and of its second
half alone. Its cost: epochs until the first epoch-52 val_accuracy in the pool's top 1% (the
`search` benchmark's cost), the epochs it spent, and its wall time. Per task: medians over
seeds, the difference of median regrets (warm less cold, restart less cold, warm less
restart) with a 95% bootstrap interval (seeds resampled on both sides); pooled: their mean
over tasks. Every arm is written, one line each, to a records file (`--from-records`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from statistics import median
from typing import Any

from benchmarks import search
from benchmarks.common import Figure, table, write_json
from benchmarks.costs import difference_interval, ratio_interval
from benchmarks.search import EPOCHS, EXPERIMENT, LEVEL, TASKS, Goal, Method

TRIALS = (100, 8)  # trials per arm, at full size and with --quick; each half one search
SEEDS = (3, 1)  # searcher seeds per task: full size, --quick
SECOND = 10_000  # added to the searcher seed of the second searches (warm and restart alike)
NEVER = 101.0  # the runs' goal: above any val_accuracy (percent), so no run ends early
ARMS = ("cold", "warm", "restart")
TPE = Method("optuna-tpe", search.TPE, "fifo", (TRIALS[0], TRIALS[1]))  # FIFO: no early stops
# Each arm's searches by name, in order: the first search is warm's and restart's alike.
SEARCHES = {"cold": ("cold",), "warm": ("first", "warm"), "restart": ("first", "restart")}


# ---- the searches, as specs of the app (Ray-free) ---------------------------------------------


@dataclass(frozen=True)
class Search:
    """One search of an arm: the app's spec, and the storage path its run folder goes under."""

    name: str
    spec: dict[str, Any]
    storage: Path

    @property
    def folder(self) -> Path:
        """Its run folder (the experiment's, under its own storage path)."""
        return self.storage / EXPERIMENT


def searches(
    task: str, seed: int, folder: Path, trials: int, data: str | None = None
) -> dict[str, Search]:
    """The four searches behind the arms on `task` with searcher seed `seed`, by name (see
    `SEARCHES`): `search.spec`'s TPE run, its goal out of reach; the warm one's experiment
    has `warm_start` naming the first one's run folder."""
    never = Goal(task, threshold=NEVER, best=NEVER, typical=NEVER, size=0)

    def one(name: str, samples: int, searcher_seed: int) -> Search:
        method = replace(TPE, samples=(samples, samples))
        spec = search.spec(method, task, searcher_seed, never, folder, False, data)
        return Search(name, spec, folder / name)

    half = trials // 2
    found = {
        "cold": one("cold", trials, seed),
        "first": one("first", half, seed),
        "warm": one("warm", trials - half, seed + SECOND),
        "restart": one("restart", trials - half, seed + SECOND),
    }
    found["warm"].spec["experiments"][EXPERIMENT]["warm_start"] = [str(found["first"].folder)]
    return found


# ---- an arm's outcome and the figures (Ray-free) ----------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One arm on one task and seed: regrets (val_accuracy points), costs, and how many earlier
    trials its searcher was told (warm; 0 for the others)."""

    task: str
    arm: str
    seed: int
    regret: float  # over all its trials
    first: float  # over its first half of epochs
    second: float  # over its second half of epochs alone
    cost: int | None  # epochs to the top 1% (None: never)
    spent: int  # epochs in all
    wall_s: float
    told: int = 0


def judged(rows: list[dict[str, Any]], goal: Goal, half: int) -> dict[str, Any]:
    """An arm's regrets and costs (`Outcome`'s fields) from its results in arrival order (both
    searches', one after the other) and its first search's trial count `half`, whose epochs
    split the halves."""
    cut = half * EPOCHS
    every = search.judge(rows, goal, budget=len(rows))
    return {
        "regret": every.regret,
        "first": search.judge(rows[:cut], goal, budget=cut).regret,
        "second": search.judge(rows[cut:], goal, budget=len(rows)).regret,
        "cost": every.cost,
        "spent": every.spent,
    }


def by_task(outcomes: Iterable[Outcome]) -> dict[str, dict[str, list[Outcome]]]:
    """Outcomes by task and arm, in seed order; on each task only the seeds every arm ran."""
    found = {(o.task, o.arm, o.seed): o for o in outcomes}
    grouped: dict[str, dict[str, list[Outcome]]] = {}
    for task in sorted({t for t, _, _ in found}):
        seeds = sorted(s for s in {k[2] for k in found} if all((task, a, s) in found for a in ARMS))
        if seeds:
            grouped[task] = {a: [found[task, a, s] for s in seeds] for a in ARMS}
    return grouped


def _said(arm: str, values: list[float]) -> str:
    return f"{arm} median {median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def _regret_figure(
    name: str, a: str, b: str, pairs: list[tuple[list[float], list[float]]]
) -> Figure:
    diffs = [median(x) - median(y) for x, y in pairs]
    return Figure(
        "warm_start",
        name,
        sum(diffs) / len(diffs),
        "",
        _said(a, [v for x, _ in pairs for v in x]),
        _said(b, [v for _, y in pairs for v in y]),
        spread=difference_interval(pairs, level=LEVEL),
        repeats=len(pairs[0][0]) * len(pairs),
    )


COMPARED = (("warm", "cold"), ("restart", "cold"), ("warm", "restart"))


def figures_of(grouped: dict[str, dict[str, list[Outcome]]], trials: int) -> list[Figure]:
    """Per task and pooled: each pair of `COMPARED`'s difference of median regrets with its
    bootstrap interval; per task, warm's median wall time against cold's."""
    found = []
    for a, b in COMPARED:
        pairs = {
            task: ([o.regret for o in arms[a]], [o.regret for o in arms[b]])
            for task, arms in grouped.items()
        }
        for task, pair in pairs.items():
            found.append(
                _regret_figure(f"{task}: {a} - {b}, regret after {trials} trials", a, b, [pair])
            )
        if len(pairs) > 1:
            name = f"pooled: {a} - {b}, regret after {trials} trials (mean over tasks)"
            found.append(_regret_figure(name, a, b, list(pairs.values())))
    for task, arms in grouped.items():
        found.append(_wall(task, arms))
    return found


def _wall(task: str, arms: dict[str, list[Outcome]]) -> Figure:
    warm, cold = tuple(o.wall_s for o in arms["warm"]), tuple(o.wall_s for o in arms["cold"])
    return Figure(
        "warm_start",
        f"{task}: warm / cold, wall time",
        median(warm) / median(cold),
        "",
        f"warm median {median(warm):,.0f} s",
        f"cold median {median(cold):,.0f} s",
        spread=ratio_interval(warm, cold, level=LEVEL),
        repeats=len(warm),
    )


def summary(grouped: dict[str, dict[str, list[Outcome]]], trials: int) -> str:
    """Markdown, one row per task and arm: median regrets (all trials, first half, second half
    alone), epochs to the top 1% (never-reached runs counted as all they spent, and how many),
    wall time, and the trials told; and warm's median regret less the arm's, with its
    bootstrap interval."""
    lines = [
        f"| task | arm | seeds | regret after {trials} trials | first half | second half alone "
        "| warm - arm (95%) | epochs to the top 1% | wall time | told |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for task, arms in grouped.items():
        warm = [o.regret for o in arms["warm"]]
        for arm, runs in arms.items():
            costs = search.costs_of([search.Run(o.cost, o.spent, o.regret) for o in runs], arm)
            never = f" ({costs.missed} never)" if costs.missed else ""
            if arm == "warm":
                versus = "-"
            else:
                pair = (warm, [o.regret for o in runs])
                low, high = difference_interval([pair], level=LEVEL)
                versus = f"{median(pair[0]) - median(pair[1]):+.2f} ({low:+.2f} to {high:+.2f})"
            lines.append(
                f"| {task} | {arm} | {len(runs)} | {median(o.regret for o in runs):.2f} "
                f"| {median(o.first for o in runs):.2f} | {median(o.second for o in runs):.2f} "
                f"| {versus} | {costs.median:,.0f}{never} "
                f"| {median(o.wall_s for o in runs):.0f} s | {median(o.told for o in runs):.0f} |"
            )
    return "\n".join(lines)


# ---- running ---------------------------------------------------------------------------------


def _told(folder: Path) -> int:
    """How many earlier trials a run's searcher was told (its run.json's `warm_start`)."""
    from tune_app.rundir.read import read_experiment

    return sum(r.trials for r in read_experiment(folder).warm_start)


def run_seed(
    task: str, seed: int, goal: Goal, tmp: Path, trials: int, data: str | None
) -> list[Outcome]:
    """The three arms on `task` with searcher seed `seed`: four searches, one after another."""
    folder = tmp / f"{task}-{seed}"
    folder.mkdir()
    planned = searches(task, seed, folder, trials, data)
    rows: dict[str, list[dict[str, Any]]] = {}
    wall: dict[str, float] = {}
    for name, one in planned.items():
        began = time.monotonic()
        rows[name] = search.run_search(one.spec, folder, one.storage)
        wall[name] = time.monotonic() - began
    told = _told(planned["warm"].folder)
    shutil.rmtree(folder, ignore_errors=True)
    found = []
    for arm, names in SEARCHES.items():
        joined = [r for name in names for r in rows[name]]
        spent_s = sum(wall[name] for name in names)
        warmed = told if arm == "warm" else 0
        found.append(
            Outcome(
                task, arm, seed, **judged(joined, goal, trials // 2), wall_s=spent_s, told=warmed
            )
        )
    return found


def recorded(*paths: Path) -> list[Outcome]:
    """Every arm in records files; for a (task, arm, seed) a later line wins (`by_task`)."""
    return [Outcome(**json.loads(line)) for p in paths for line in p.read_text().splitlines()]


def run(
    quick: bool = False,
    records: Path | None = None,
    data: str | None = None,
    tasks: tuple[str, ...] = TASKS,
    seeds: int | None = None,
    first_seed: int = 0,
    trials: int | None = None,
) -> list[Figure]:
    """Every arm on every task over `seeds` searcher seeds from `first_seed`, seed by seed (a
    cut-short run leaves whole seeds in `records`); the figures, and the summary printed."""
    import ray

    data = data or os.environ.get("LCBENCH_DATA") or None
    trials = trials or TRIALS[quick]
    goals = {task: search.pool_goal(task, data=data) for task in tasks}
    records = records or Path(tempfile.gettempdir()) / f"lcbench-warm-{os.getpid()}.jsonl"
    outcomes: list[Outcome] = []
    search.start_search_ray()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for seed in range(first_seed, first_seed + (seeds or SEEDS[quick])):
                for task in tasks:
                    began = time.monotonic()
                    try:
                        found = run_seed(task, seed, goals[task], Path(tmp), trials, data)
                    except Exception as err:  # noqa: BLE001 - as in `search.run`: left out, said
                        print(f"  left out: {task} {seed}: {err}", flush=True)
                        ray.shutdown()  # Tune's state after a failed fit is not reusable
                        search.start_search_ray()
                        continue
                    outcomes += found
                    with records.open("a") as f:
                        f.writelines(json.dumps(asdict(o)) + "\n" for o in found)
                    regrets = ", ".join(f"{o.arm} {o.regret:.2f}" for o in found)
                    print(
                        f"  {task} seed {seed}: regret {regrets}; {time.monotonic() - began:.0f} s",
                        flush=True,
                    )
    finally:
        ray.shutdown()
    print(f"  runs recorded in {records}", flush=True)
    grouped = by_task(outcomes)
    print(summary(grouped, trials), flush=True)
    return figures_of(grouped, trials)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--data", help="folder of the LCBench surrogate")
    parser.add_argument("--records", type=Path, help="append each arm here (JSON lines)")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--seeds", type=int, help=f"searcher seeds per task (default {SEEDS[0]})")
    parser.add_argument("--first-seed", type=int, default=0, help="go on from this seed")
    parser.add_argument("--trials", type=int, help=f"trials per arm (default {TRIALS[0]})")
    parser.add_argument(
        "--from-records",
        type=Path,
        nargs="+",
        help="only work the figures out from records files (their common seeds)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.from_records:
        grouped = by_task(recorded(*args.from_records))
        trials = args.trials or TRIALS[args.quick]
        print(summary(grouped, trials))
        figures = figures_of(grouped, trials)
    else:
        figures = run(
            args.quick,
            args.records,
            args.data,
            tuple(args.tasks),
            args.seeds,
            args.first_seed,
            args.trials,
        )
    if args.json:
        write_json(args.json, figures, args.quick)
    print(table(figures))


if __name__ == "__main__":
    main()
