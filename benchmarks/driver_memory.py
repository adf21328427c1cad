"""Where the driver's memory grows with finished trials: two searches of many short trials run
through `tune_app run` in this process under tracemalloc, and what each traced allocation grew
by between them, grouped by the innermost frame of the app's own code ("Tune" where none is:
Tune's loop and Ray). The growth from the smaller search to the larger, over the trials between
them, is the cost per finished trial with the one-time costs (imports, first use) left out.

`python -m benchmarks.driver_memory [--trials A B] [--frames N]`; tracemalloc slows the driver
about tenfold (200 and 600 trials: 16 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import collections
import gc
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

SPEC = """
e:
  run: benchmarks.workloads:busy
  metric: score
  mode: max
  num_samples: {trials}
  config: {{x: {{uniform: [0, 1]}}, seconds: 0.01}}
"""
OURS = ("/tune_app/",)  # the trials' own code runs in workers, not here


def grown(trials: int, folder: Path, frames: int) -> collections.Counter[str]:
    """Bytes each app frame (or "Tune") holds after a search's fit that it did not before."""
    from ray import tune

    from tune_app.cli import main
    from tune_app.ray_internals.replacing import replaced

    spec = folder / f"s{trials}.yaml"
    spec.write_text(SPEC.format(trials=trials))
    fit, snaps = tune.Tuner.fit, []

    def traced(self: Any) -> Any:
        gc.collect()
        tracemalloc.start(frames)
        snaps.append(tracemalloc.take_snapshot())
        try:
            return fit(self)
        finally:
            gc.collect()
            snaps.append(tracemalloc.take_snapshot())
            tracemalloc.stop()

    with replaced(tune.Tuner, "fit", traced):
        code = main(["run", str(spec), "--storage-path", str(folder / f"out{trials}"), "-q"])
    if code != 0:
        raise SystemExit(f"the {trials}-trial search exited {code}")
    keep = [tracemalloc.Filter(False, tracemalloc.__file__)]
    before, after = (s.filter_traces(keep) for s in snaps)
    by: collections.Counter[str] = collections.Counter()
    for stat in after.compare_to(before, "traceback"):
        ours = [f for f in stat.traceback if any(p in f.filename for p in OURS)]
        where = "Tune"
        # The innermost app frame in runner/experiment.py is its call of Tuner.fit: what Tune does
        # within.
        if ours and not ours[-1].filename.endswith("tune_app/runner/experiment.py"):
            where = f"{Path(ours[-1].filename).relative_to(ROOT)}:{ours[-1].lineno}"
        by[where] += stat.size_diff
    return by


ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs=2, default=(100, 300), metavar=("A", "B"))
    parser.add_argument("--frames", type=int, default=30, help="frames traced per allocation")
    args = parser.parse_args(argv)
    small, large = sorted(args.trials)
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        grown(2, Path(tmp), 1)  # first uses (imports, caches) land here, counted in neither
        a = grown(small, Path(tmp), args.frames)
        b = grown(large, Path(tmp), args.frames)
    between = large - small
    rows = sorted(set(a) | set(b), key=lambda k: b[k] - a[k], reverse=True)
    total_app = sum(b[k] - a[k] for k in rows if k != "Tune")
    print(f"growth per finished trial, {small} -> {large} trials (KB a trial):")
    print(f"  Tune (its loop and Ray): {(b['Tune'] - a['Tune']) / 1024 / between:.2f}")
    print(f"  the app's own frames:    {total_app / 1024 / between:.2f}")
    for k in rows:
        per = (b[k] - a[k]) / 1024 / between
        if k != "Tune" and abs(per) >= 0.02:
            print(f"    {per:6.2f}  {k}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
