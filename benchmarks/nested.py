"""Nested efficiency: one trial with k simulations (k = 1 .. cores) runs the seeds' moving-average
workload split over its k simulation bundles, against the same work in one simulation, in the
same trial; efficiency = speedup / k."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from benchmarks.common import ROOT, Figure, bench_main, read_results, tune_app

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


def run(quick: bool = False) -> list[Figure]:
    cpus = os.cpu_count() or 1
    series, length, repeats = (1000, 1000, 5) if quick else (1000, 1000, 11)
    figures = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for k in range(1, cpus + 1):
            spec = tmp / f"k{k}.yaml"
            spec.write_text(SPEC.format(k=k, series=series, length=length, repeats=repeats))
            tune_app("run", str(spec), "--storage-path", str(tmp / f"k{k}"), "-q", cwd=ROOT)
            (row,) = read_results(tmp / f"k{k}" / "nested")
            figures.append(
                Figure(
                    "nested",
                    f"efficiency at k = {k} (speedup / k)",
                    row["efficiency"],
                    ">= 0.95" if k == cpus else "",
                    f"{k} simulations: {row['parallel_s']:.3f} s",
                    f"1 simulation: {row['sequential_s']:.3f} s",
                    note=f"{series} series of length {length}, window 10, fastest of {repeats}",
                )
            )
    plain = machine_efficiency(cpus, series, length, repeats)
    figures.append(
        Figure(
            "nested",
            f"the machine itself: {cpus} plain processes, efficiency",
            plain,
            "",
            f"{cpus} processes (multiprocessing, no Ray)",
            "the same work in this process",
            note="the bound any nested scheme meets on this machine",
        )
    )
    return figures


if __name__ == "__main__":
    bench_main(run, __doc__)
