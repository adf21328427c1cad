"""Whether Tune's trial actors on a local Ray's prestarted workers are worth their patch
(`ray_internals.startup.trials_on_prestarted_workers`): the app's command to its first trial
result (one trial, one result), and `grid.yaml --smoke` end to end, each run with the patch and
without it in turn (with, without, with, ...), `--runs` times each way. Prints every run, the
medians, the paired differences and the machine's load.

`python -m benchmarks.prestarted [--runs N]`; not one of `python -m benchmarks`' figures (it
measures a choice inside the app, not the app against a baseline).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from statistics import median

from benchmarks.common import PYTHON, ROOT, measure, read_results

# The app's command line, with the patch replaced by a context that does nothing.
WITHOUT = (
    "import contextlib, sys; import tune_app.ray_internals.startup as r; "
    "r.trials_on_prestarted_workers = contextlib.nullcontext; "
    "from tune_app.cli import main; sys.exit(main())"
)
ONE = "e:\n  run: benchmarks.workloads:busy\n  config: {x: 1, seconds: 0.0}\n"
GRID = ROOT / "search_spaces" / "grid.yaml"


def _command(patched: bool) -> list[str]:
    return [PYTHON, "-m", "tune_app"] if patched else [PYTHON, "-c", WITHOUT]


def first_result_s(patched: bool, spec: Path, out: Path) -> float:
    """Seconds from the command's start to the driver logging the first result."""
    started = time.time()
    measure([*_command(patched), "run", str(spec), "--storage-path", str(out), "-q"], ROOT)
    return min(r["logged_at"] for r in read_results(out / "e")) - started


def grid_s(patched: bool, out: Path) -> float:
    """`grid.yaml --smoke`'s whole command, in seconds."""
    cmd = [*_command(patched), "run", str(GRID), "--smoke", "--storage-path", str(out), "-q"]
    return measure(cmd, ROOT).wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=4, help="runs each way, per workload")
    runs = parser.parse_args().runs
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        spec = tmp / "one.yaml"
        spec.write_text(ONE)
        tags = iter(range(10**6))
        for name, measure_one in (
            ("first result", lambda p: first_result_s(p, spec, tmp / f"r{next(tags)}")),
            ("grid.yaml --smoke", lambda p: grid_s(p, tmp / f"r{next(tags)}")),
        ):
            with_, without = [], []
            for i in range(runs):
                for patched, into in ((True, with_), (False, without)):
                    into.append(measure_one(patched))
                    loads.append(os.getloadavg()[0])
                    side = "with" if patched else "without"
                    print(f"{name} run {i + 1} {side}: {into[-1]:.2f} s", flush=True)
            diffs = [w - o for w, o in zip(with_, without, strict=True)]
            print(
                f"{name}: median with {median(with_):.2f} s, without {median(without):.2f} s;"
                f" paired (with - without) {', '.join(f'{d:+.2f}' for d in diffs)} s",
                flush=True,
            )
    print(
        f"{os.cpu_count()} cores, 1-minute load {min(loads):.1f}-{max(loads):.1f} while it ran",
        flush=True,
    )


if __name__ == "__main__":
    main()
