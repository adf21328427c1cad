"""Results at full rate: a few trials that report as fast as they can, through the app with
every output on (results.jsonl, TensorBoard, Tune's CSV and JSON logs, the progress line) and
`result_buffer: BUFFER` (Tune's result buffering: up to that many results per actor call),
against a hand-written Tuner with Tune's default loggers, in results per second that the
driver takes in. The app without the buffer, and Tune alone (the hand-written script, its
loggers off), run in turn with them: the most any set of outputs can reach while Tune hands
the driver one result per actor call.

Every result is checked: each trial's results.jsonl rows and its TensorBoard steps are its
indices in order, none lost, none twice. The driver's peak memory grows with the results; what
it grows by from a run of a quarter of the results is set against Tune alone's growth over the
same: outputs that fell behind, or kept what they wrote, would hold results on top of Tune's.
`python -m benchmarks.full_rate [--quick] [--results N] [--repeats K]`.
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
    read_summary,
    sized_main,
    tune_app,
)
from benchmarks.overhead import hand_written

TRIALS = 2  # one per core of the smallest machine: the driver, not the trials, is the bound
BUFFER = 1000  # the app's result_buffer: results a trial hands the driver per call

SPEC = """
e:
  run: benchmarks.workloads:flood
  metric: score
  mode: max
  num_samples: {trials}
  result_buffer: {buffer}
  config: {{x: {{uniform: [0, 1]}}, results: {results}}}
"""


def _app(tmp: Path, results: int, buffer: int = BUFFER) -> tuple[Measured, float]:
    """The app with its outputs on (the progress line too: not `-q`); its fit time. `buffer`:
    its result_buffer (1: one result per call)."""
    tmp.mkdir(parents=True, exist_ok=True)
    spec = tmp / f"flood{results}.yaml"
    spec.write_text(SPEC.format(trials=TRIALS, results=results, buffer=buffer))
    measured = tune_app("run", str(spec), "--storage-path", str(tmp / f"s{results}"), cwd=ROOT)
    folder = tmp / f"s{results}" / "e"
    summary = read_summary(folder)
    assert summary["counts"] == {"TERMINATED": TRIALS}, summary["counts"]
    check_every_result(folder, results)
    return measured, summary["wall_time_s"]


def check_every_result(folder: Path, results: int) -> None:
    """Each trial's rows in results.jsonl, and its scalars in TensorBoard, are its `index`
    0 .. results-1 in order, at iterations 1 .. results: nothing lost, reordered or twice."""
    from tensorboard.backend.event_processing import event_accumulator

    rows: dict[str, list[tuple[int, int]]] = {}
    with (folder / "results.jsonl").open() as lines:
        for line in lines:
            row = json.loads(line)
            if "index" in row:
                rows.setdefault(row["trial_id"], []).append(
                    (row["training_iteration"], row["index"])
                )
    expected = [(i + 1, i) for i in range(results)]
    assert len(rows) == TRIALS, sorted(rows)
    for trial_id, seen in rows.items():
        assert seen == expected, f"{trial_id}: results.jsonl does not hold every result in order"
    boards = [p.parent for p in folder.glob("*/events.out.tfevents.*")]
    assert len(set(boards)) == TRIALS, boards
    for board in set(boards):
        events = event_accumulator.EventAccumulator(
            str(board), size_guidance={event_accumulator.SCALARS: 0}
        )
        events.Reload()
        steps = [e.step for e in events.Scalars("metrics/index")]
        values = [int(e.value) for e in events.Scalars("metrics/index")]
        assert steps == [i + 1 for i in range(results)], f"{board.name}: steps lost or reordered"
        assert values == list(range(results)), f"{board.name}: values lost or reordered"


def _hand(tmp: Path, results: int, cpus: int, loggers: bool) -> Measured:
    """The same search as a hand-written Tuner script; with `loggers` off, Tune's switch for
    its default loggers (`TUNE_DISABLE_AUTO_CALLBACK_LOGGERS`) is set. Fit time in extra."""
    return hand_written(
        tmp,
        "benchmarks.workloads",
        "flood",
        f"{{'x': tune.uniform(0, 1), 'results': {results}}}",
        "score",
        cpus,
        tune_config=f", num_samples={TRIALS}",
        env=None if loggers else {"TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1"},
    )


def run(quick: bool = False, results: int | None = None, repeats: int = REPEATS) -> list[Figure]:
    cpus = max(TRIALS, os.cpu_count() or 1)
    results = results or (1000 if quick else 5000)
    few = max(10, results // 4)
    total = TRIALS * results
    apps, singles, smalls, hands, bares, small_bares = [], [], [], [], [], []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for i in range(repeats):  # in turn: the app, unbuffered, hand-written, Tune alone, small
            apps.append(_app(tmp / f"app{i}", results))
            singles.append(_app(tmp / f"single{i}", results, buffer=1))
            hands.append(_hand(tmp / f"hand{i}", results, cpus, loggers=True))
            bares.append(_hand(tmp / f"bare{i}", results, cpus, loggers=False))
            smalls.append(_app(tmp / f"small{i}", few))
            small_bares.append(_hand(tmp / f"small_bare{i}", few, cpus, loggers=False))
    app_rate = tuple(total / fit for _, fit in apps)
    single_rate = tuple(total / fit for _, fit in singles)
    hand_rate = tuple(total / h.extra["fit_s"] for h in hands)
    bare_rate = tuple(total / b.extra["fit_s"] for b in bares)
    what = f"{TRIALS} trials x {results} results"

    def per_result(big_mb: float, small_mb: float) -> float:
        """KB the driver's peak grew by per result, from the small run to the big."""
        return (big_mb - small_mb) * 1024 / (TRIALS * (results - few))

    return [
        Paired(app_rate, hand_rate).figure(
            "full_rate",
            f"app / hand-written Tune defaults, results per second ({what})",
            ">= 3",
            "app {:.0f} results/s",
            "hand-written {:.0f} results/s",
            note=f"every output of the app on, result_buffer: {BUFFER}; each result checked in "
            "results.jsonl and TensorBoard, in order",
        ),
        Paired(app_rate, single_rate).figure(
            "full_rate",
            f"app with result_buffer: {BUFFER} / app one result per call, results per second",
            "",
            "buffered {:.0f} results/s",
            "one per call {:.0f} results/s",
            note="what Tune's result buffering gives the app",
        ),
        Paired(bare_rate, hand_rate).figure(
            "full_rate",
            "Tune alone (no loggers) / hand-written Tune defaults, results per second",
            "",
            "Tune alone {:.0f} results/s",
            "hand-written {:.0f} results/s",
            note="the most any outputs reach while Tune hands over one result per actor call",
        ),
        Paired(single_rate, bare_rate).figure(
            "full_rate",
            "app one result per call / Tune alone (no loggers), results per second",
            "",
            "app {:.0f} results/s",
            "Tune alone {:.0f} results/s",
            note="what the app's outputs cost the driver, at one result per call",
        ),
        Paired(
            tuple(
                per_result(a.peak_rss_mb, s.peak_rss_mb)
                for (a, _), (s, _) in zip(apps, smalls, strict=True)
            ),
            tuple(
                per_result(b.peak_rss_mb, s.peak_rss_mb)
                for b, s in zip(bares, small_bares, strict=True)
            ),
        ).figure(
            "full_rate",
            f"driver peak growth per result, app / Tune alone ({few} -> {results} a trial)",
            "<= 1.5",
            "app {:.2f} KB",
            "Tune alone {:.2f} KB",
            note="Tune's own growth is its loop's and Ray's per actor call; outputs that lagged "
            "or kept what they wrote would add theirs",
        ),
    ]


def main() -> None:
    sized_main(run, __doc__, "results", "results per trial", "1,000 results per trial, not 5,000")


if __name__ == "__main__":
    main()
