"""Start-up: from the command to the first trial result (the app against a hand-written Tuner
script), `validate` (against a bare Python start), and the smoke example end to end (against
starting and stopping Ray alone)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.common import (
    PYTHON,
    ROOT,
    Figure,
    bench_main,
    measure,
    read_results,
    tune_app,
)
from benchmarks.common import script as run_script

FIRST = """
import json, sys, time
import ray
from ray import tune
sys.path.insert(0, {root!r})
from benchmarks.workloads import busy



class FirstResult(tune.Callback):
    def on_trial_result(self, iteration, trials, trial, result, **info):
        with open({stamp!r}, "a") as f:
            f.write(f"{{time.time()}}\\n")


ray.init(address="local", include_dashboard=False, logging_level="ERROR", log_to_driver=False)
tune.Tuner(
    busy,
    param_space={{"x": 1, "seconds": 0.0}},
    run_config=tune.RunConfig(
        storage_path={storage!r}, name="hand", verbose=0, callbacks=[FirstResult()]
    ),
).fit()
"""

RAY_ALONE = (
    "import ray; ray.init(address='local', include_dashboard=False, logging_level='ERROR');"
    "ray.shutdown()"
)


def _first_result_s(started: float, rows: list[dict]) -> float:
    return min(r["logged_at"] for r in rows) - started


def run(quick: bool = False) -> list[Figure]:
    figures = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        spec = tmp / "one.yaml"
        spec.write_text("e:\n  run: benchmarks.workloads:busy\n  config: {x: 1, seconds: 0.0}\n")
        started = time.time()
        tune_app("run", str(spec), "--storage-path", str(tmp / "app"), "-q", cwd=ROOT)
        app = _first_result_s(started, read_results(tmp / "app" / "e"))

        script = tmp / "first.py"
        stamp = tmp / "first_result.txt"
        script.write_text(FIRST.format(root=str(ROOT), storage=str(tmp / "hand"), stamp=str(stamp)))
        started = time.time()
        run_script(script, tmp)
        hand = float(stamp.read_text().split()[0]) - started
        figures.append(
            Figure(
                "startup",
                "command to first trial result: app / hand-written Tuner",
                app / hand,
                "",
                f"app {app:.2f} s",
                f"hand-written {hand:.2f} s",
                note="both start a local Ray; the time the driver saw the result",
            )
        )

        bare = measure([PYTHON, "-c", "pass"], tmp).wall_s
        validate = tune_app("validate", str(ROOT / "search_spaces" / "grid.yaml"), cwd=ROOT)
        figures.append(
            Figure(
                "startup",
                "validate grid.yaml / bare Python start",
                validate.wall_s / bare,
                "",
                f"validate {validate.wall_s:.2f} s",
                f"python -c pass {bare:.3f} s",
            )
        )

        ray_alone = measure([PYTHON, "-c", RAY_ALONE], tmp).wall_s
        smoke = tune_app(
            "run",
            str(ROOT / "search_spaces" / "smoke.yaml"),
            "--smoke",
            "--storage-path",
            str(tmp / "smoke"),
            "-q",
            cwd=ROOT,
        )
        figures.append(
            Figure(
                "startup",
                "smoke.yaml --smoke end to end / Ray start and stop alone",
                smoke.wall_s / ray_alone,
                "",
                f"smoke search {smoke.wall_s:.1f} s",
                f"ray.init + shutdown {ray_alone:.1f} s",
                note="the issue asks about 20 s for the smoke example on 2 cores",
            )
        )
    return figures


if __name__ == "__main__":
    bench_main(run, __doc__)
