"""Nested efficiency: one trial with k simulations runs the seeds' moving-average workload split
over its k simulation bundles, against the same work in one simulation, in the same trial;
efficiency = speedup / k, for k = 1, 2, 4, ... and the core count.

Time, `--quick` and the full run alike (the full run's trial works 11 rounds to 5, a few seconds
more): each k is one `tune_app run` per repetition (3), about 15 s on a quiet machine (a Ray
start and stop, the work twice), so about 45 s x (log2(cores) + 1): 1.5 min on 2 cores, 4 min
on 16 (5 values of k), 7 min on 256 (estimated from the whole command's 12 s; on 2 cores shared
at load 8-14, `--quick` took 227 s). Each k from 1 to the cores, as before, took 45 s x cores:
12 min on 16."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from statistics import median

from benchmarks.common import REPEATS, ROOT, Figure, Paired, bench_main, read_results, tune_app

SPEC = """
nested:
  run: benchmarks.workloads:nested_moving_average
  metric: score
  mode: max
  simulations: {k}
  cpu_per_simulation: 1
  resources_per_trial: {{cpu: 0}}
  config: {{series: {series}, length: {length}, window: 10, repeats: {repeats}}}
"""


def machine_efficiency(k: int, series: int, length: int, repeats: int) -> float:
    """The same work split over k plain processes, no Ray: what this machine's cores give."""
    import multiprocessing
    import time

    from benchmarks.workloads import _chunk

    seeds = list(range(series))
    with multiprocessing.get_context("fork").Pool(k) as pool:
        pool.map(_chunk_args, [([0], length)] * k)  # start the processes
        one, many = [], []
        for _ in range(repeats):
            began = time.perf_counter()
            _chunk(seeds, length, 10)
            one.append(time.perf_counter() - began)
            began = time.perf_counter()
            pool.map(_chunk_args, [(seeds[i::k], length) for i in range(k)])
            many.append(time.perf_counter() - began)
    return min(one) / min(many) / k


def _chunk_args(job: tuple[list[int], int]) -> tuple[float, float, float]:
    from benchmarks.workloads import _chunk

    return _chunk(job[0], job[1], 10)


def _app_efficiency(tmp: Path, k: int, series: int, length: int, repeats: int, tag: str):
    spec = tmp / f"k{k}{tag}.yaml"
    spec.write_text(SPEC.format(k=k, series=series, length=length, repeats=repeats))
    out = tmp / f"k{k}{tag}"
    tune_app("run", str(spec), "--storage-path", str(out), "-q", cwd=ROOT)
    (row,) = read_results(out / "nested")
    return row


def ks(cpus: int) -> list[int]:
    """The simulations per trial measured: powers of two below the cores, then the cores."""
    return [2**i for i in range(cpus.bit_length()) if 2**i < cpus] + [cpus]


def run(quick: bool = False) -> list[Figure]:
    cpus = os.cpu_count() or 1
    series, length, repeats = (1000, 1000, 5) if quick else (1000, 1000, 11)
    rows: dict[int, list[dict]] = {k: [] for k in ks(cpus)}
    plain = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for i in range(REPEATS):  # in turn: the app's k = 1 .. cores, then plain processes
            for k in rows:
                rows[k].append(_app_efficiency(tmp, k, series, length, repeats, f"-{i}"))
            plain.append(machine_efficiency(cpus, series, length, repeats))
    work = f"{series} series of length {length}, window 10, fastest of {repeats} in each run"
    ones = (1.0,) * REPEATS
    figures = [
        Paired(tuple(r["efficiency"] for r in rows[k]), ones).figure(
            "nested",
            f"efficiency at k = {k} (speedup / k)",
            "",
            f"{k} simulations: efficiency {{:.3f}} (1 simulation "
            f"{median(r['sequential_s'] for r in rows[k]):.3f} s, {k}: "
            f"{median(r['parallel_s'] for r in rows[k]):.3f} s)",
            "perfect: {:.0f}",
            note=work,
        )
        for k in rows
    ]
    figures += [
        Paired(tuple(plain), ones).figure(
            "nested",
            f"the machine itself: {cpus} plain processes, efficiency",
            "",
            "{:.3f} (multiprocessing, no Ray)",
            "perfect: {:.0f}",
            note="the bound any nested scheme meets on this machine",
        ),
        Paired(tuple(r["efficiency"] for r in rows[cpus]), tuple(plain)).figure(
            "nested",
            f"nested efficiency / the machine's own, k = {cpus}",
            ">= 0.95",
            f"{cpus} simulations in one trial: {{:.3f}}",
            f"{cpus} plain processes: {{:.3f}}",
            note="each repetition's app run paired with the plain processes right after it",
        ),
    ]
    return figures


if __name__ == "__main__":
    bench_main(run, __doc__)
