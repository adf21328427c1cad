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
    paired,
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


GRID = ROOT / "search_spaces" / "grid.yaml"


def _first_result_s(started: float, rows: list[dict]) -> float:
    return min(r["logged_at"] for r in rows) - started


def run(quick: bool = False) -> list[Figure]:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        tags = iter(range(10**6))
        spec = tmp / "one.yaml"
        spec.write_text("e:\n  run: benchmarks.workloads:busy\n  config: {x: 1, seconds: 0.0}\n")

        def app() -> float:
            out = tmp / f"app{next(tags)}"
            started = time.time()
            tune_app("run", str(spec), "--storage-path", str(out), "-q", cwd=ROOT)
            return _first_result_s(started, read_results(out / "e"))

        def hand() -> float:
            script = tmp / f"first{next(tags)}.py"
            stamp = script.with_suffix(".txt")
            script.write_text(
                FIRST.format(root=str(ROOT), storage=str(tmp / script.stem), stamp=str(stamp))
            )
            started = time.time()
            run_script(script, tmp)
            return float(stamp.read_text().split()[0]) - started

        def smoke() -> float:
            return tune_app(
                "run",
                str(ROOT / "search_spaces" / "smoke.yaml"),
                "--smoke",
                "--storage-path",
                str(tmp / f"smoke{next(tags)}"),
                "-q",
                cwd=ROOT,
            ).wall_s

        first = paired(app, hand)
        validate = paired(
            lambda: (
                tune_app("validate", str(ROOT / "search_spaces" / "grid.yaml"), cwd=ROOT).wall_s
            ),
            lambda: measure([PYTHON, "-c", "pass"], tmp).wall_s,
        )
        end_to_end = paired(smoke, lambda: measure([PYTHON, "-c", RAY_ALONE], tmp).wall_s)
    return [
        first.figure(
            "startup",
            "command to first trial result: app / hand-written Tuner",
            "",
            "app {:.2f} s",
            "hand-written {:.2f} s",
            note="both start a local Ray; the time the driver saw the result",
        ),
        validate.figure(
            "startup",
            "validate grid.yaml / bare Python start",
            "",
            "validate {:.2f} s",
            "python -c pass {:.3f} s",
        ),
        end_to_end.figure(
            "startup",
            "smoke.yaml --smoke end to end / Ray start and stop alone",
            "",
            "smoke search {:.1f} s",
            "ray.init + shutdown {:.1f} s",
            note="the issue asks about 20 s for the smoke example on 2 cores",
        ),
    ]


if __name__ == "__main__":
    bench_main(run, __doc__)
