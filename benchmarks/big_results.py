"""The readers stream: `analyze`, `best` and `report` of a finished run whose results.jsonl is
about 500 MB (200 trials of up to 10,000 results), each in its wall time and peak memory
(the process's own high-water mark) beside the file's size; and `report` of a run of 10,000
trials of a few results each, whose figures draw every trial.

The run is synthetic but laid out as `tune_app run` leaves one (run.json, summary.json,
finished.jsonl, results.jsonl with Tune's keys, one folder per trial): an ASHA search of
`my_func`'s `alpha` and `beta` where a quarter of the trials were stopped at the first rung.
Make one alone with `python -m benchmarks.big_results make DIR [--mb 500]`.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, Figure, table, tune_app
from tune_app.rundir.layout import (
    FINISHED_FILE,
    RESULTS_FILE,
    RUN_FILE,
    SPEC_FILE,
    SUMMARY_FILE,
)
from tune_app.rundir.records import FINISHED, RunRecord, RunSummary, TrialOutcome

TRIALS = 200
EXPERIMENT = "big"
METRIC = "mean_accuracy"
SECONDS = 60.0  # the bound on each reader's wall time
WIDE_TRIALS = 10_000  # a search of many short trials: the report's figures draw every one
WIDE_SECONDS = 5.0  # the bound on that report's render (issue 46: a live page's rewrite)
MEGABYTES = 1024.0  # and on its peak memory
START = 1_795_000_000.0  # the run's first logged_at (unix time)
SPEC = """
metric: mean_accuracy
mode: max
search: random
scheduler: {{type: asha, max_t: {rows}, grace_period: {rung}, reduction_factor: 4}}
experiments:
  big:
    run: my_func
    num_samples: {trials}
    stop: {{training_iteration: {rows}}}
    config:
      alpha: {{loguniform: [0.01, 1.0]}}
      beta: {{choice: [1, 2, 3, 4]}}
"""


def _iterations(rows: int, index: int) -> int:
    """A trial's iteration count: a quarter stopped by ASHA at the first rung (rows / 4)."""
    return rows // 4 if index % 4 == 3 else rows


def _line(trial_id: str, it: int, value: float, loss: float, config: dict | None) -> str:
    """One result row as the app's results log writes it: Tune's keys, `logged_at` first."""
    logged = START + it * 0.5 + random.random() * 0.1
    head = f'{{"trial_id": "{trial_id}", "logged_at": {logged!r}, '
    body = (
        f'"{METRIC}": {value!r}, "loss": {loss!r}, "timestamp": {int(logged)}, '
        f'"checkpoint_dir_name": null, "training_iteration": {it}, "time_this_iter_s": 0.5, '
        f'"time_total_s": {it * 0.5!r}, "pid": 4242, "time_since_restore": {it * 0.5!r}, '
        f'"iterations_since_restore": {it}'
    )
    tail = f', "config": {json.dumps(config)}}}\n' if config is not None else "}\n"
    return head + body + tail


def make(folder: Path, megabytes: float = 500.0, trials: int = TRIALS, seed: int = 0) -> Path:
    """Write a finished run of `trials` trials whose results.jsonl is about `megabytes` MB."""
    random.seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    configs = [
        {"alpha": 10 ** random.uniform(-2, 0), "beta": random.choice([1, 2, 3, 4])}
        for _ in range(trials)
    ]
    ids = [f"b16a0_{i:05d}" for i in range(trials)]
    one = len(_line(ids[0], 5000, 0.123456789012, 0.98765432109, None))
    share = sum(_iterations(4, i) for i in range(trials)) / (4 * trials)
    rows = max(8, int(megabytes * 1e6 / one / trials / share))
    ceiling = [random.uniform(0.5, 1.0) for _ in range(trials)]
    last: dict[int, float] = {}
    best: dict[int, float] = {}
    with (folder / RESULTS_FILE).open("w", encoding="utf-8") as out:
        for it in range(1, rows + 1):  # Tune interleaves the trials' results
            batch = []
            for i in range(trials):
                if it > _iterations(rows, i):
                    continue
                value = ceiling[i] * (1 - math.exp(-it / (rows / 5))) + random.gauss(0, 0.02)
                last[i], best[i] = value, max(value, best.get(i, -math.inf))
                config = configs[i] if it == 1 else None
                batch.append(_line(ids[i], it, value, 1 - value, config))
            out.write("".join(batch))
    outcomes = []
    for i in range(trials):
        iterations = _iterations(rows, i)
        alpha, beta = configs[i]["alpha"], configs[i]["beta"]
        name = f"my_func_{ids[i]}_{i}_alpha={alpha:.4f},beta={beta}_2026-11-28_12-00-00"
        (folder / name).mkdir(exist_ok=True)
        outcomes.append(
            TrialOutcome(
                trial_id=ids[i],
                status=FINISHED,
                config=configs[i],
                score=last[i],
                iterations=iterations,
                folder=name,
                time_total_s=iterations * 0.5,
                params=dict(configs[i]),
                last=last[i],
                best=best[i],
                stopped_early=iterations < rows,
            )
        )
    record = RunRecord(
        experiment=EXPERIMENT,
        spec_file=str(folder / SPEC_FILE),
        trainable="my_func",
        metric=METRIC,
        mode="max",
        scope="last",
        searched=("alpha", "beta"),
        log_scaled=("alpha",),
        scheduler="asha",
        reduction_factor=4.0,
        stop={"training_iteration": rows},
        trials=trials,
    )
    (folder / RUN_FILE).write_text(json.dumps(record.to_json(), indent=2))
    (folder / SPEC_FILE).write_text(SPEC.format(rows=rows, rung=rows // 4, trials=trials))
    summary = RunSummary(EXPERIMENT, METRIC, "max", rows * 0.5, trials=outcomes)
    (folder / SUMMARY_FILE).write_text(json.dumps(summary.to_json(), indent=2))
    with (folder / FINISHED_FILE).open("w", encoding="utf-8") as out:
        for t in outcomes:
            end = {"training_iteration": t.iterations, METRIC: t.last, "config": t.config}
            out.write(json.dumps({"trial_id": t.trial_id, "status": FINISHED, "last_result": end}))
            out.write("\n")
    return folder


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run(quick: bool = False) -> list[Figure]:
    megabytes = 50.0 if quick else 500.0
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = make(Path(tmp) / EXPERIMENT, megabytes)
        size = (folder / RESULTS_FILE).stat().st_size / 1e6
        rows = sum(1 for _ in (folder / RESULTS_FILE).open("rb"))
        what = f"results.jsonl {size:,.0f} MB, {rows:,} rows, {TRIALS} trials"
        print(f"{what}; {_load()}", file=sys.stderr, flush=True)
        commands = {
            "analyze": ["analyze", str(folder)],
            "best": ["best", str(folder)],
            "report": ["report", str(folder), "--out", str(Path(tmp) / "report.html")],
        }
        for name, args in commands.items():
            got = tune_app(*args, cwd=ROOT)
            print(
                f"  {name}: {got.wall_s:.1f} s, peak {got.peak_rss_mb:,.0f} MB; {_load()}",
                file=sys.stderr,
                flush=True,
            )
            figures += [
                Figure(
                    "big_results",
                    f"{name}: wall time (s) of a {size:,.0f} MB results.jsonl",
                    got.wall_s,
                    f"<= {SECONDS:g}" if not quick else "",
                    f"{name} {got.wall_s:.1f} s",
                    what,
                ),
                Figure(
                    "big_results",
                    f"{name}: peak memory (MB) of a {size:,.0f} MB results.jsonl",
                    got.peak_rss_mb,
                    f"<= {MEGABYTES:g}" if not quick else "",
                    f"{name} peak RSS {got.peak_rss_mb:,.0f} MB",
                    what,
                ),
            ]
        figures += _wide(Path(tmp))
    return figures


def _wide(tmp: Path) -> list[Figure]:
    """`report` of a run of WIDE_TRIALS trials of 8 results each (about 30 MB): what its
    figures, table and importance cost with every trial drawn."""
    folder = make(tmp / "wide" / EXPERIMENT, 30.0, WIDE_TRIALS)
    size = (folder / RESULTS_FILE).stat().st_size / 1e6
    what = f"{WIDE_TRIALS:,} trials, results.jsonl {size:,.0f} MB"
    got = tune_app("report", str(folder), "--out", str(tmp / "wide.html"), cwd=ROOT)
    render = _render(folder, tmp / "rendered.html")
    print(
        f"  report of {what}: {got.wall_s:.1f} s, its render {render:.1f} s; {_load()}",
        file=sys.stderr,
        flush=True,
    )
    return [
        Figure(
            "big_results",
            f"report: render (s) of {WIDE_TRIALS:,} trials read already (a live page's rewrite)",
            render,
            f"<= {WIDE_SECONDS:g}",
            f"figures, importance, table and page {render:.1f} s",
            what,
        ),
        Figure(
            "big_results",
            f"report: wall time (s) of {WIDE_TRIALS:,} trials, command to exit",
            got.wall_s,
            "",
            f"report {got.wall_s:.1f} s, peak {got.peak_rss_mb:,.0f} MB",
            what,
        ),
    ]


def _render(folder: Path, out: Path) -> float:
    """Seconds `report` takes to write the page of the run at `folder` once it is read, as
    `report --watch` rewrites a live page: the best of two writes after a first that imports
    what the figures and the importance need."""
    from tune_app.readback import report
    from tune_app.rundir import read

    experiments = read.load(folder)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        report.write(experiments, out, str(folder))
        times.append(time.perf_counter() - start)
    return min(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.big_results", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a 50 MB file")
    sub = parser.add_subparsers(dest="command")
    made = sub.add_parser("make", help="only write the run folder")
    made.add_argument("folder", type=Path)
    made.add_argument("--mb", type=float, default=500.0, help="results.jsonl's size in MB")
    made.add_argument("--trials", type=int, default=TRIALS)
    args = parser.parse_args()
    if args.command == "make":
        folder = make(args.folder, args.mb, args.trials)
        print(f"{folder}: {(folder / RESULTS_FILE).stat().st_size / 1e6:,.0f} MB")
        return
    print(table(run(args.quick)))


if __name__ == "__main__":
    main()
