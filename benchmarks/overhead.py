"""App overhead: `tune_app run` against the ideal (total work / cores) and against a hand-written
Tuner script with Tune's defaults, on N trials of fixed CPU work and on the grid example; on the
first, also against a lean hand-written Tuner (actors reused, Tune's loggers off): the floor
Tune's own loop and Ray's workers set under the app.

Inside Tune: the tuning loops' own wall time (`Tuner.fit()`, which both record). Whole process:
from the command's start to its exit, Python, Ray's start and its stop included. Each ratio is
the median of REPEATS runs made in turn (app, hand-written, app, ...).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from benchmarks.common import (
    REPEATS,
    ROOT,
    Figure,
    Measured,
    Paired,
    bench_main,
    read_summary,
    tune_app,
)
from benchmarks.common import script as run_script

HAND = """
import json, resource, sys, time
import ray
from ray import tune
sys.path.insert(0, {root!r})
from {module} import {function} as fn
{imports}

ray.init(address="local", num_cpus={cpus}, include_dashboard=False, logging_level="ERROR",
         log_to_driver=False)
tuner = tune.Tuner(
    tune.with_resources(fn, {{"cpu": 1}}),
    param_space={space},
    tune_config=tune.TuneConfig(metric={metric!r}, mode="max"{tune_config}),
    run_config=tune.RunConfig(storage_path={storage!r}, name="hand", stop={stop}, verbose=0),
)
began = time.perf_counter()
grid = tuner.fit()
fit_s = time.perf_counter() - began
assert not grid.errors, grid.errors
print(json.dumps({{"fit_s": fit_s}}))
"""


# Ray alone: the same local Ray started and stopped, nothing run on it (the floor of any script).
BARE = """
import ray
ray.init(address="local", num_cpus={cpus}, include_dashboard=False, logging_level="ERROR",
         log_to_driver=False)
ray.shutdown()
"""


def ray_alone(tmp: Path, cpus: int) -> Measured:
    """A process that starts a local Ray and stops it: Python's start, `import ray`, Ray's
    daemons up and down."""
    tmp.mkdir(parents=True, exist_ok=True)
    script = tmp / "bare.py"
    script.write_text(BARE.format(cpus=cpus))
    return run_script(script, tmp)


# What search_spaces/grid.yaml searches, as a hand-written param_space.
GRID_SPACE = "{'alpha': tune.grid_search([0.2, 0.4, 0.6]), 'beta': tune.grid_search([1, 2])}"


def hand_written(
    tmp: Path,
    module: str,
    function: str,
    space: str,
    metric: str,
    cpus: int,
    stop: dict | None = None,
    tune_config: str = "",
    env: dict[str, str] | None = None,
    imports: str = "",
) -> Measured:
    """A hand-written Tuner script with Tune's defaults, run as its own process: its fit time
    in `extra["fit_s"]`. `tune_config` adds TuneConfig arguments (", num_samples=10"), which
    `imports` (a line) may name; `env` adds to the script's environment."""
    tmp.mkdir(parents=True, exist_ok=True)
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
            tune_config=tune_config,
            imports=imports,
        )
    )
    measured = run_script(script, tmp, env)
    measured.extra = json.loads(measured.stdout.strip().splitlines()[-1])
    return measured


def _app(tmp: Path, spec: str, name: str):
    path = tmp / f"{name}.yaml"
    path.write_text(spec)
    measured = tune_app("run", str(path), "--storage-path", str(tmp / name), "-q", cwd=ROOT)
    summaries = [read_summary(p) for p in (tmp / name).iterdir() if (p / "summary.json").exists()]
    measured.extra = {"fit_s": sum(s["wall_time_s"] for s in summaries)}
    return measured


def _versus(apps: list[Measured], hands: list[Measured], what: str) -> list[Figure]:
    """The app against the hand-written script on one workload, run in turn: tuning-loop wall
    time and the driver's peak memory."""
    fit = Paired(_fits(apps), _fits(hands))
    memory = Paired(tuple(a.peak_rss_mb for a in apps), tuple(h.peak_rss_mb for h in hands))
    return [
        fit.figure(
            "overhead",
            f"app / hand-written, wall ({what})",
            "<= 1.02",
            "app fit {:.2f} s",
            "hand-written fit {:.2f} s",
        ),
        memory.figure(
            "overhead",
            f"app / hand-written, driver peak memory ({what})",
            "<= 1.05",
            "app {:.0f} MB",
            "hand-written {:.0f} MB",
        ),
    ]


def _walls(runs: list[Measured]) -> tuple[float, ...]:
    return tuple(m.wall_s for m in runs)


def _fits(runs: list[Measured]) -> tuple[float, ...]:
    return tuple(m.extra["fit_s"] for m in runs)


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
        space = f"{{'x': tune.grid_search({xs}), 'seconds': {seconds}}}"
        apps, hands, leans, bares = [], [], [], []
        for i in range(REPEATS):  # in turn: app, hand-written, lean, Ray alone, app, ...
            apps.append(_app(tmp, spec, f"busy{i}"))
            hands.append(
                hand_written(tmp / f"h{i}", "benchmarks.workloads", "busy", space, "score", cpus)
            )
            leans.append(
                hand_written(
                    tmp / f"l{i}",
                    "benchmarks.workloads",
                    "busy",
                    space,
                    "score",
                    cpus,
                    tune_config=", reuse_actors=True",
                    env={"TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1"},
                )
            )
            bares.append(ray_alone(tmp / f"r{i}", cpus))
        ideal = trials * seconds / cpus
        ideals = (ideal,) * REPEATS
        work = f"{trials} trials x {seconds:g} s"
        against = f"ideal {ideal:.2f} s (work / {cpus} cores)"
        figures += [
            Paired(_fits(apps), ideals).figure(
                "overhead",
                f"app / ideal, inside Tune ({work})",
                "<= 1.15",
                "app fit {:.2f} s",
                against,
            ),
            Paired(tuple(a.wall_s for a in apps), ideals).figure(
                "overhead",
                f"app / ideal, whole process ({work})",
                "<= 1.35",
                "app, command to exit {:.2f} s",
                against,
                note="Python and Ray start and stop included",
            ),
            Paired(_fits(hands), ideals).figure(
                "overhead",
                f"hand-written Tune defaults / ideal, inside Tune ({work})",
                "",
                "hand-written fit {:.2f} s",
                against,
            ),
            Paired(tuple(h.wall_s for h in hands), ideals).figure(
                "overhead",
                f"hand-written Tune defaults / ideal, whole process ({work})",
                "",
                "hand-written, start to exit {:.2f} s",
                against,
            ),
            # Tune at its leanest: what Tune's own loop and Ray's workers cost, under the app.
            Paired(_fits(leans), ideals).figure(
                "overhead",
                f"hand-written lean / ideal, inside Tune ({work})",
                "",
                "lean fit {:.2f} s",
                against,
                note="actors reused, Tune's loggers off: Tune's floor",
            ),
            Paired(_fits(apps), _fits(leans)).figure(
                "overhead",
                f"app / hand-written lean, inside Tune ({work})",
                "<= 1.02",
                "app fit {:.2f} s",
                "lean fit {:.2f} s",
            ),
            Paired(tuple(a.wall_s - a.extra["fit_s"] for a in apps), _walls(bares)).figure(
                "overhead",
                f"app outside Tune / Ray alone, start to exit ({work})",
                "",
                "app, command to exit minus fit {:.2f} s",
                "Ray alone, start to exit {:.2f} s",
                note="what the app adds around the search beyond Ray's own start and stop",
            ),
            *_versus(apps, hands, work),
        ]
        grid = (ROOT / "search_spaces" / "grid.yaml").read_text()
        apps, hands = [], []
        for i in range(REPEATS):
            apps.append(_app(tmp, grid, f"grid{i}"))
            hands.append(
                hand_written(
                    tmp / f"g{i}",
                    "benchmarks.workloads",
                    "my_func_tune",
                    GRID_SPACE,
                    "mean_accuracy",
                    cpus,
                    stop={"mean_accuracy": 100, "training_iteration": 50},
                )
            )
        figures += _versus(apps, hands, "grid.yaml")
    return figures


if __name__ == "__main__":
    bench_main(run, __doc__)
