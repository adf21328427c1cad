"""App overhead: `tune_app run` against the ideal (total work / cores) and against a hand-written
Tuner script with Tune's defaults, on N trials of fixed CPU work and on the grid example.

Wall times are the tuning loops' own (`Tuner.fit()`, which both record), so Ray's start-up,
the same for both, does not blur the ratio; whole-process times are in the notes.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from benchmarks.common import ROOT, Figure, Measured, bench_main, read_summary, tune_app
from benchmarks.common import script as run_script

HAND = """
import json, resource, sys, time
import ray
from ray import tune
sys.path.insert(0, {root!r})
from {module} import {function} as fn

ray.init(address="local", num_cpus={cpus}, include_dashboard=False, logging_level="ERROR",
         log_to_driver=False)
tuner = tune.Tuner(
    tune.with_resources(fn, {{"cpu": 1}}),
    param_space={space},
    tune_config=tune.TuneConfig(metric={metric!r}, mode="max"),
    run_config=tune.RunConfig(storage_path={storage!r}, name="hand", stop={stop}, verbose=0),
)
began = time.perf_counter()
grid = tuner.fit()
fit_s = time.perf_counter() - began
assert not grid.errors, grid.errors
print(json.dumps({{"fit_s": fit_s}}))
"""


def _hand(tmp: Path, module: str, function: str, space: str, metric: str, cpus: int, stop=None):
    script = tmp / f"hand_{function}.py"
    script.write_text(
        HAND.format(
            root=str(ROOT),
            module=module,
            function=function,
            space=space,
            metric=metric,
            cpus=cpus,
            stop=repr(stop or {}),
            storage=str(tmp / "hand" / function),
        )
    )
    measured = run_script(script, tmp)
    measured.extra = json.loads(measured.stdout.strip().splitlines()[-1])
    return measured


def _app(tmp: Path, spec: str, name: str):
    path = tmp / f"{name}.yaml"
    path.write_text(spec)
    measured = tune_app("run", str(path), "--storage-path", str(tmp / name), "-q", cwd=ROOT)
    summaries = [read_summary(p) for p in (tmp / name).iterdir() if (p / "summary.json").exists()]
    measured.extra = {"fit_s": sum(s["wall_time_s"] for s in summaries)}
    return measured


def _versus(app: Measured, hand: Measured, what: str) -> list[Figure]:
    """The app against the hand-written script on one workload: tuning-loop wall time and the
    driver's peak memory."""
    return [
        Figure(
            "overhead",
            f"app / hand-written, wall ({what})",
            app.extra["fit_s"] / hand.extra["fit_s"],
            "<= 1.02",
            f"app fit {app.extra['fit_s']:.2f} s",
            f"hand-written fit {hand.extra['fit_s']:.2f} s",
        ),
        Figure(
            "overhead",
            f"app / hand-written, driver peak memory ({what})",
            app.peak_rss_mb / hand.peak_rss_mb,
            "<= 1.05",
            f"app {app.peak_rss_mb:.0f} MB",
            f"hand-written {hand.peak_rss_mb:.0f} MB",
        ),
    ]


def run(quick: bool = False) -> list[Figure]:
    cpus = os.cpu_count() or 1
    trials, seconds = (8, 1.0) if quick else (16, 2.0)
    figures = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        xs = list(range(trials))
        spec = (
            f"e:\n  run: benchmarks.workloads:busy\n  metric: score\n  mode: max\n"
            f"  config: {{x: {{grid_search: {xs}}}, seconds: {seconds}}}\n"
        )
        app = _app(tmp, spec, "busy")
        hand = _hand(
            tmp,
            "benchmarks.workloads",
            "busy",
            f"{{'x': tune.grid_search({xs}), 'seconds': {seconds}}}",
            "score",
            cpus,
        )
        ideal = trials * seconds / cpus
        work = f"{trials} trials x {seconds:g} s"
        figures += [
            Figure(
                "overhead",
                f"app / ideal ({work})",
                app.extra["fit_s"] / ideal,
                "<= 1.15",
                f"app fit {app.extra['fit_s']:.2f} s",
                f"ideal {ideal:.2f} s (work / {cpus} cores)",
                note=f"whole process: app {app.wall_s:.1f} s, hand-written {hand.wall_s:.1f} s",
            ),
            Figure(
                "overhead",
                f"hand-written Tune defaults / ideal ({work})",
                hand.extra["fit_s"] / ideal,
                "",
                f"hand-written fit {hand.extra['fit_s']:.2f} s",
                f"ideal {ideal:.2f} s",
            ),
            *_versus(app, hand, work),
        ]
        grid = (ROOT / "search_spaces" / "grid.yaml").read_text()
        app = _app(tmp, grid, "grid")
        hand = _hand(
            tmp,
            "benchmarks.workloads",
            "my_func_tune",
            "{'alpha': tune.grid_search([0.2, 0.4, 0.6]), 'beta': tune.grid_search([1, 2])}",
            "mean_accuracy",
            cpus,
            stop={"mean_accuracy": 100, "training_iteration": 50},
        )
        figures += _versus(app, hand, "grid.yaml")
    return figures


if __name__ == "__main__":
    bench_main(run, __doc__)
