"""At scale the driver stays light: many short trials through the app on the local Ray, in
trials per second against the ideal (cores / trial time), and the driver's peak memory against
the same app's on a search a hundredth the size."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from benchmarks.common import ROOT, Figure, bench_main, read_summary, tune_app

SPEC = """
e:
  run: benchmarks.workloads:busy
  metric: score
  mode: max
  num_samples: {trials}
  config: {{x: {{uniform: [0, 1]}}, seconds: {seconds}}}
"""


def _run(tmp: Path, trials: int, seconds: float):
    spec = tmp / f"scale{trials}.yaml"
    spec.write_text(SPEC.format(trials=trials, seconds=seconds))
    measured = tune_app("run", str(spec), "--storage-path", str(tmp / f"s{trials}"), "-q", cwd=ROOT)
    summary = read_summary(tmp / f"s{trials}" / "e")
    assert summary["counts"] == {"TERMINATED": trials}, summary["counts"]
    return measured, summary["wall_time_s"]


def run(quick: bool = False) -> list[Figure]:
    cpus = os.cpu_count() or 1
    trials, seconds = (200, 0.05) if quick else (1000, 0.05)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        big, big_fit = _run(tmp, trials, seconds)
        small, _ = _run(tmp, max(2, trials // 100), seconds)
    rate = trials / big_fit
    ideal = cpus / seconds
    return [
        Figure(
            "scale",
            f"trials per second / ideal ({trials} trials of {seconds:g} s)",
            rate / ideal,
            "",
            f"{rate:.1f} trials/s (fit {big_fit:.1f} s)",
            f"ideal {ideal:.0f} trials/s ({cpus} cores / {seconds:g} s)",
            note="a trial's own cost in Tune (actor reuse, result handling) bounds this",
        ),
        Figure(
            "scale",
            f"driver peak memory: {trials} trials / {max(2, trials // 100)} trials",
            big.peak_rss_mb / small.peak_rss_mb,
            "",
            f"{big.peak_rss_mb:.0f} MB",
            f"{small.peak_rss_mb:.0f} MB",
        ),
    ]


if __name__ == "__main__":
    bench_main(run, __doc__)
