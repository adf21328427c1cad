"""At scale the driver stays light: many short trials through the app on the local Ray, in
trials per second against the ideal (cores / trial time) and against a hand-written Tuner, the
driver's peak memory against the same app's on a search a hundredth the size (its growth per
trial against a hand-written Tuner's, measured the same way), the rate as trials finish, and
`analyze` and `report` of the big run against their bounds."""

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

SPEC = """
metric: score
mode: max
search: {search}
experiments:
  e:
    run: benchmarks.workloads:busy
    num_samples: {trials}
    config: {{x: {{uniform: [0, 1]}}, seconds: {seconds}}}
"""
# The searchers the benchmark runs: the app's spec value, and the hand-written Tuner's search_alg
# with what it imports (TPE: Optuna's default sampler, both sides; the app keeps its study in
# the run folder's journal file, the hand-written OptunaSearch in memory).
SEARCHERS = {
    "random": ("random", "", ""),
    "optuna": (
        "{type: optuna}",
        "from ray.tune.search.optuna import OptunaSearch",
        ", search_alg=OptunaSearch()",
    ),
}


def _run(tmp: Path, trials: int, seconds: float, searcher: str):
    tmp.mkdir(parents=True, exist_ok=True)
    spec = tmp / f"scale{trials}.yaml"
    spec.write_text(SPEC.format(trials=trials, seconds=seconds, search=SEARCHERS[searcher][0]))
    measured = tune_app("run", str(spec), "--storage-path", str(tmp / f"s{trials}"), "-q", cwd=ROOT)
    summary = read_summary(tmp / f"s{trials}" / "e")
    assert summary["counts"] == {"TERMINATED": trials}, summary["counts"]
    measured.extra["ends"] = result_times(tmp / f"s{trials}" / "e")
    for reader in READERS:  # the run read back, as its user would
        read = tune_app(reader, str(tmp / f"s{trials}" / "e"), cwd=ROOT)
        assert read.returncode == 0, read.stderr[-2000:]
        measured.extra[reader] = read.wall_s
    return measured, summary["wall_time_s"]


READERS = {"analyze": 5.0, "report": 20.0}  # each reader's bound on the big run, seconds


def result_times(folder: Path) -> list[float]:
    """When the driver took each result of the run (results.jsonl's `logged_at`), in order: a
    trial of this benchmark reports once, as it ends."""
    with (folder / "results.jsonl").open() as lines:
        return sorted(json.loads(line)["logged_at"] for line in lines)


def end_rates(ends: list[float]) -> tuple[float, float]:
    """Trials per second over the first and over the last thousand ends (a tenth of them, in
    a search of under 10,000): whether the rate falls as trials finish."""
    k = max(2, min(1000, len(ends) // 10))
    first, last = ends[:k], ends[-k:]
    return (k - 1) / max(first[-1] - first[0], 1e-9), (k - 1) / max(last[-1] - last[0], 1e-9)


def _hand(tmp: Path, trials: int, seconds: float, cpus: int, searcher: str) -> Measured:
    """The same search as a hand-written Tuner script with Tune's defaults (and actor reuse,
    as the app): its fit time in `extra["fit_s"]`."""
    _, imports, search_alg = SEARCHERS[searcher]
    return hand_written(
        tmp,
        "benchmarks.workloads",
        "busy",
        f"{{'x': tune.uniform(0, 1), 'seconds': {seconds}}}",
        "score",
        cpus,
        tune_config=f", num_samples={trials}, reuse_actors=True{search_alg}",
        imports=imports,
    )


def run(
    quick: bool = False, trials: int | None = None, repeats: int = REPEATS, searcher: str = "random"
) -> list[Figure]:
    cpus = os.cpu_count() or 1
    seconds = 0.05
    trials = trials or (200 if quick else 1000)
    few = max(2, trials // 100)
    ideal = cpus / seconds
    big, small, hands, small_hands = [], [], [], []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for i in range(repeats):  # in turn: the big search, the small one, hand-written both
            big.append(_run(tmp / f"{i}", trials, seconds, searcher))
            small.append(_run(tmp / f"{i}", few, seconds, searcher))
            hands.append(_hand(tmp / f"hand{i}", trials, seconds, cpus, searcher))
            small_hands.append(_hand(tmp / f"small_hand{i}", few, seconds, cpus, searcher))
    hand = [h.extra["fit_s"] for h in hands]
    rates = Paired(tuple(trials / fit for _, fit in big), (ideal,) * repeats)
    versus = Paired(tuple(fit for _, fit in big), tuple(hand))
    peaks = Paired(tuple(m.peak_rss_mb for m, _ in big), tuple(m.peak_rss_mb for m, _ in small))
    growth = Paired(
        tuple(
            (b.peak_rss_mb - s.peak_rss_mb) * 1024 / (trials - few)
            for (b, _), (s, _) in zip(big, small, strict=True)
        ),
        (1.0,) * repeats,
    )
    hand_growth = tuple(
        (b.peak_rss_mb - s.peak_rss_mb) * 1024 / (trials - few)
        for b, s in zip(hands, small_hands, strict=True)
    )
    ends = [end_rates(m.extra["ends"]) for m, _ in big]
    k = max(2, min(1000, trials // 10))
    name = "scale" if searcher == "random" else f"scale ({searcher})"
    return [
        rates.figure(
            name,
            f"trials per second / ideal ({trials} trials of {seconds:g} s)",
            ">= 0.75",
            "{:.1f} trials/s",
            f"ideal {{:.0f}} trials/s ({cpus} cores / {seconds:g} s)",
            note="trials per second inside Tune (fit); a trial's own cost in Tune (actor "
            "reuse, result handling, the app's callbacks) bounds this",
        ),
        Paired(tuple(trials / fit for fit in hand), (ideal,) * repeats).figure(
            name,
            f"hand-written Tune defaults: trials per second / ideal ({trials} trials)",
            "",
            "{:.1f} trials/s",
            f"ideal {{:.0f}} trials/s ({cpus} cores / {seconds:g} s)",
            note="Tune's own loop, with actor reuse as the app: the bound the app runs under",
        ),
        versus.figure(
            name,
            f"app / hand-written Tune, fit time ({trials} trials)",
            "",
            "app fit {:.1f} s",
            "hand-written fit {:.1f} s",
        ),
        Paired(tuple(m.peak_rss_mb for m, _ in big), tuple(h.peak_rss_mb for h in hands)).figure(
            name,
            f"app / hand-written Tune, driver peak memory ({trials} trials)",
            "< 1",
            "app {:.0f} MB",
            "hand-written {:.0f} MB",
        ),
        Paired(tuple(last for _, last in ends), tuple(first for first, _ in ends)).figure(
            name,
            f"trials per second, last {k} / first {k} to end ({trials} trials)",
            ">= 0.8",
            "last {:.1f} trials/s",
            "first {:.1f} trials/s",
            note="from the times the driver took each trial's result (results.jsonl); a rate "
            "that falls as trials finish is a cost that grows with them",
        ),
        *(
            Paired(tuple(m.extra[reader] for m, _ in big), (bound,) * repeats).figure(
                name,
                f"`{reader}` of the {trials}-trial run / its bound, wall time",
                "<= 1",
                f"{reader} {{:.1f}} s",
                "bound {:.0f} s",
            )
            for reader, bound in READERS.items()
        ),
        peaks.figure(
            name,
            f"driver peak memory: {trials} trials / {few} trials",
            "",
            "{:.0f} MB",
            "{:.0f} MB",
        ),
        growth.figure(
            name,
            "driver memory growth per trial, KB",
            "",
            f"(peak at {trials} - peak at {few}) / {trials - few}: {{:.1f}} KB",
            "per trial",
        ),
        Paired(growth.a, hand_growth).figure(
            name,
            f"driver growth per trial ({few} -> {trials} trials), app / hand-written Tune",
            "",
            "app {:.1f} KB",
            "hand-written {:.1f} KB",
            note="the issue's bound: the app adds <= 5 KB a trial to what Tune's own loop "
            "grows by, measured the same way in the same run",
        ),
    ]


def main() -> None:
    """`python -m benchmarks.scale [--quick] [--trials N] [--repeats K]`."""
    sized_main(
        run,
        __doc__,
        "trials",
        "trials of the big search (10000: the issue's)",
        "200 trials, not 1,000",
        {"searcher": (tuple(SEARCHERS), "the searcher of both sides (optuna: TPE)")},
    )


if __name__ == "__main__":
    main()
