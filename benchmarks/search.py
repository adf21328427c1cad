"""Search efficiency: HyperBand and ASHA against grid and random on the simulation trainable's
CartPole search, each given the machine in turn. Measured: trial-seconds (summed time of every
trial's iterations) and wall time until a result within 2% of grid's best appears."""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks.common import ROOT, Figure, bench_main, read_results, tune_app

LR = [0.02, 0.1, 0.5]
SIGMA = [0.03, 0.1, 0.3]
POPULATION = [8, 16, 32]

SPEC = """
metric: episode_return_mean
mode: max
seed: 7
search: {search}
scheduler: {scheduler}
experiments:
  cartpole:
    run: es_cartpole
    simulations: 1
    num_samples: {samples}
    stop: {{training_iteration: {iterations}}}
    config:
      episodes: 1
      lr: {lr}
      sigma: {sigma}
      population: {population}
"""


def _spec(method: str, iterations: int, quick: bool) -> str:
    """The same space for every method: a grid of its values, or sampled from its range."""
    grid = method == "grid"
    populations = [16] if quick else POPULATION
    size = len(LR) * len(SIGMA) * len(populations)
    sched = {
        "grid": "fifo",
        "random": "fifo",
        "hyperband": f"{{type: hyperband, max_t: {iterations}, reduction_factor: 3}}",
        "asha": f"{{type: asha, max_t: {iterations}, grace_period: 3, reduction_factor: 3}}",
    }[method]

    def axis(values: list[float]) -> str:
        if grid:
            return f"{{grid_search: {values}}}"
        return f"{{loguniform: [{min(values)}, {max(values)}]}}"

    return SPEC.format(
        search="grid" if grid else "random",
        scheduler=sched,
        samples=1 if grid else size,
        iterations=iterations,
        lr=axis(LR),
        sigma=axis(SIGMA),
        population=(
            populations[0]
            if len(populations) == 1
            else f"{{grid_search: {populations}}}"
            if grid
            else f"{{choice: {populations}}}"
        ),
    )


def _cost_until(rows: list[dict], goal: float) -> tuple[float | None, float | None, float]:
    """Trial-seconds and wall seconds spent until a result reached `goal`, and in all."""
    rows = sorted(rows, key=lambda r: r["logged_at"])
    start = min(r["logged_at"] - r["time_this_iter_s"] for r in rows)
    spent, found = 0.0, (None, None)
    for row in rows:
        spent += row["time_this_iter_s"]
        if found[0] is None and (row.get("episode_return_mean") or 0.0) >= goal:
            found = (spent, row["logged_at"] - start)
    return found[0], found[1], spent


def run(quick: bool = False) -> list[Figure]:
    iterations = 27 if quick else 81
    figures = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        rows = {}
        for method in ("grid", "random", "hyperband", "asha"):
            spec = tmp / f"{method}.yaml"
            spec.write_text(_spec(method, iterations, quick))
            tune_app("run", str(spec), "--storage-path", str(tmp / method), "-q", cwd=ROOT)
            rows[method] = read_results(tmp / method / "cartpole")
        best = max(r.get("episode_return_mean") or 0.0 for r in rows["grid"])
        goal = 0.98 * best
        _, grid_wall, grid_total = _cost_until(rows["grid"], goal)
        full_wall = max(r["logged_at"] for r in rows["grid"]) - min(
            r["logged_at"] - r["time_this_iter_s"] for r in rows["grid"]
        )
        for method in ("grid", "random", "hyperband", "asha"):
            spent, wall, total = _cost_until(rows[method], goal)
            found = spent is not None
            figures.append(
                Figure(
                    "search",
                    f"{method}: trial-seconds to 98% of grid's best / grid's"
                    if found
                    else f"{method}: never reached 98% of grid's best (all it spent / grid's)",
                    (spent if found else total) / grid_total,
                    "<= 0.2" if method in ("hyperband", "asha") else "",
                    f"{method} {spent:.1f} trial-s ({wall:.1f} s wall)"
                    if found
                    else f"{method} spent {total:.1f} trial-s in all",
                    f"grid {grid_total:.1f} trial-s ({full_wall:.1f} s wall)",
                    note=f"goal episode_return_mean >= {goal:.1f}; {iterations} iterations max",
                )
            )
    return figures


if __name__ == "__main__":
    bench_main(run, __doc__)
