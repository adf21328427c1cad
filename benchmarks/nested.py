"""Nested efficiency: one trial with k simulations (k = 1 .. cores) runs the seeds' moving-average
workload split over its k simulation bundles, against the same work in one simulation, in the
same trial; efficiency = speedup / k."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from benchmarks.common import ROOT, Figure, read_results, table, tune_app

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


def run(quick: bool = False) -> list[Figure]:
    cpus = os.cpu_count() or 1
    series, length, repeats = (400, 1000, 3) if quick else (1000, 1000, 5)
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
                    note=f"{series} series of length {length}, window 10, median of {repeats}",
                )
            )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    print(table(run(parser.parse_args().quick)))


if __name__ == "__main__":
    main()
