"""The run's own statistics, on synthetic rows, without Ray: each configuration's chance of being
the best and its bound (`rundir.noise`), the expected best against the number of trials
(`rundir.budget`), and whether early stopping's rungs predicted the final scores
(`rundir.rungs`)."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace

import numpy as np
import pytest

from tune_app import seeds
from tune_app.rundir import budget, noise, rungs
from tune_app.rundir.records import ERRORED, FINISHED, UNFINISHED, RunSummary, TrialOutcome


def _trial(i: int, score: float | None, iterations: int = 10, **more: object) -> TrialOutcome:
    return TrialOutcome(
        trial_id=f"t_{i:05d}", status=str(more.pop("status", FINISHED)), config={},
        score=score, iterations=iterations, params=dict(more.pop("params", {})),  # type: ignore[arg-type]
        stopped_early=bool(more.pop("stopped_early", False)),
    )  # fmt: skip


# ---- noise: chance of being best, the bound, select: lcb ---------------------------------------


def test_chance_best_sums_to_one_and_favours_the_clearly_better():
    scores = [[10.0, 10.5, 9.5, 10.2, 9.8], [5.0, 5.5, 4.5, 5.2, 4.8], [7.0]]
    chances = noise.chance_best(scores, "mean", "max")
    assert chances[0] == pytest.approx(1.0) and chances[1] == 0.0
    assert chances[2] is None  # one seed: no bootstrap of it
    flipped = noise.chance_best(scores, "mean", "min")
    assert flipped[1] == pytest.approx(1.0)


def test_chance_best_of_overlapping_configurations_is_split_and_reproducible():
    a, b = [1.0, 3.0, 2.0, 2.5, 1.5], [1.2, 2.9, 2.1, 2.4, 1.6]
    first = noise.chance_best([a, b], "iqm", "max")
    assert first == noise.chance_best([a, b], "iqm", "max")  # seeded
    assert 0.2 < first[0] < 0.8 and sum(first) == pytest.approx(1.0)  # type: ignore[arg-type]


def test_ties_share_a_draw():
    assert noise.chance_best([[1.0, 1.0], [1.0, 1.0]], "mean", "max") == [0.5, 0.5]


@pytest.mark.parametrize("how", seeds.AGGREGATES)
def test_vectorised_aggregate_matches_the_one_used_for_ranking(how):
    rows = np.random.default_rng(3).normal(size=(40, 7))
    expected = [seeds.aggregate(list(r), how) for r in rows]
    assert np.allclose(seeds.aggregate_rows(rows, how), expected)


def test_the_bound_is_pessimistic_on_the_side_of_the_mode():
    values = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    low, high = noise.lower_bound(values, "mean", "max"), noise.lower_bound(values, "mean", "min")
    assert low is not None and high is not None and low < 3.5 < high
    assert noise.lower_bound([1.0, 3.0], "mean", "max") >= 1.0  # type: ignore[operator]
    assert noise.lower_bound([1.0], "mean", "max") is None


def test_select_lcb_ranks_a_steady_configuration_over_a_lucky_one():
    # x=1: a high mean from one lucky seed; x=2: a lower mean, every seed close to it.
    lucky = [0.1, 0.1, 0.1, 0.1, 3.0]
    steady = [0.6, 0.62, 0.61, 0.59, 0.6]
    trials = [
        _trial(i * 5 + s, score, params={"x": x, "seed": s})
        for i, (x, values) in enumerate([(1, lucky), (2, steady)])
        for s, score in enumerate(values)
    ]
    summary = RunSummary("e", "m", "max", 1.0, trials=trials, seeds=list(range(5)))
    by_aggregate = summary.configurations()
    assert [c.params["x"] for c in by_aggregate] == [1, 2]
    assert all(c.chance_best is not None and c.bound is not None for c in by_aggregate)
    lcb = RunSummary("e", "m", "max", 1.0, trials=trials, seeds=list(range(5)), select="lcb")
    assert [c.params["x"] for c in lcb.configurations()] == [2, 1]
    assert lcb.best is not None and lcb.best.params["x"] == 2  # `best` follows the bound
    assert summary.best is not None and summary.best.params["x"] == 1
    assert RunSummary.from_json(lcb.to_json()).select == "lcb"
    written = lcb.to_json()["configurations"][0]
    assert written["bound"] == pytest.approx(lcb.configurations()[0].bound)
    assert 0 <= written["chance_best"] <= 1


# ---- budget: the expected best of n trials -----------------------------------------------------


def _brute(scores: list[float], n: int, mode: str) -> float:
    pick = max if mode == "max" else min
    subsets = list(itertools.combinations(scores, n))
    return sum(pick(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("mode", ["max", "min"])
def test_expected_best_is_the_mean_best_over_every_subset(mode):
    scores = [random.Random(n).uniform(0, 1) for n in range(9)] + [0.5, 0.5]  # ties too
    found = budget.expected_best(scores, mode)
    assert [p.n for p in found] == list(range(1, len(scores) + 1))
    for p in found:
        assert p.mean == pytest.approx(_brute(scores, p.n, mode))
    assert found[0].mean == pytest.approx(sum(scores) / len(scores))
    assert found[-1].mean == pytest.approx(max(scores) if mode == "max" else min(scores))
    assert found[-1].sd == pytest.approx(0.0, abs=1e-9)
    steps = [p.mean for p in found]
    assert steps == sorted(steps, reverse=(mode == "min"))


def test_expected_best_holds_on_a_thousand_trials():
    scores = list(np.random.default_rng(0).normal(size=1000))
    found = budget.expected_best(scores, "max")
    assert all(math.isfinite(p.mean) and math.isfinite(p.sd) for p in found)
    assert found[-1].mean == pytest.approx(max(scores))


def test_the_curve_uses_trials_or_configurations_and_says_which():
    trials = [_trial(i, float(i)) for i in range(6)] + [_trial(9, 99.0, status=ERRORED)]
    cut = [_trial(7, 98.0, status=UNFINISHED)]  # an early score, not a final one
    found = budget.curve(RunSummary("e", "m", "max", 1.0, trials=trials + cut))
    assert found is not None and found.unit == "trials" and found.count == 6  # both out
    assert found.points[-1].mean == 5.0 and found.gain() == pytest.approx(5.0 - 85 / 20)
    text = budget.compact_text(found)
    assert text.startswith("expected best of n trials: 1: 2.5, 2: 3.66667")
    assert text.endswith("6 (this run): 5")
    seeded = [_trial(i, float(i), params={"x": i // 2, "seed": i % 2}) for i in range(6)]
    seeded[5] = _trial(5, 5.0, params={"x": 2, "seed": 1}, status=UNFINISHED)
    by_config = budget.curve(RunSummary("e", "m", "max", 1.0, trials=seeded, seeds=[0, 1]))
    assert by_config is not None and by_config.unit == "configurations" and by_config.count == 2
    assert budget.curve(RunSummary("e", "m", "max", 1.0, trials=trials[:1])) is None


# ---- rungs: did the early scores predict the final ones? ---------------------------------------


def test_spearman_ranks_ties_by_their_mean_rank():
    a = [1.0, 2.0, 2.0, 4.0, 5.0, 3.0, 7.0]
    b = [2.0, 1.0, 4.0, 3.0, 6.0, 6.0, 5.0]
    ranks_a, ranks_b = [1, 2.5, 2.5, 5, 6, 4, 7], [2, 1, 4, 3, 6.5, 6.5, 5]
    assert rungs.spearman(a, b) == pytest.approx(np.corrcoef(ranks_a, ranks_b)[0, 1])
    assert rungs.spearman(a, b) == pytest.approx(7 / 11)  # scipy's spearmanr
    assert rungs.spearman([1.0, 2.0], [2.0, 1.0]) is None
    assert rungs.spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None


def _asha_run(predictive: bool) -> tuple[list[TrialOutcome], dict[str, dict[int, float | None]]]:
    """Six trials ran to iteration 10, four were stopped at 2; at iteration 2 the survivors
    rank as they end, or in reverse."""
    trials, curves = [], {}
    for i in range(10):
        final = float(i)
        at_two = final if predictive else -final
        ended = i >= 4
        trials.append(
            _trial(i, final if ended else at_two, 10 if ended else 2, stopped_early=not ended)
        )
        curves[f"t_{i:05d}"] = {1: 0.0, 2: at_two, **({10: final} if ended else {})}
    return trials, curves


def test_a_rung_that_ranks_the_survivors_as_they_end_predicts():
    trials, curves = _asha_run(predictive=True)
    found = rungs.checks(trials, curves, "asha")
    assert found == [rungs.RungCheck(rung=2, trials=6, spearman=pytest.approx(1.0))]
    assert found[0].predicts and rungs.warning(found, "asha") is None
    assert rungs.checks(trials, curves, "fifo") == []  # nothing stopped at rungs


@pytest.mark.parametrize(
    "scheduler, change",
    [
        ("asha", "raise the first rung (a grace_period above 2) or stop no trial early"),
        ("hyperband", "use scheduler asha with a grace_period above 2, or stop no trial early"),
    ],
)
def test_a_rung_that_did_not_predict_says_so_and_what_to_change(scheduler, change):
    trials, curves = _asha_run(predictive=False)
    found = rungs.checks(trials, curves, scheduler)
    assert found[0].spearman == pytest.approx(-1.0) and found[0].predicts is False
    text = rungs.warning(found, scheduler)
    assert text is not None and "early results did not predict late ones here" in text
    assert "iteration 2 (Spearman -1.00)" in text and change in text and "(under 0.5)" in text


def test_too_few_survivors_are_not_judged():
    trials, curves = _asha_run(predictive=False)
    few = [t for t in trials if t.stopped_early or int(t.trial_id[-1]) >= 6]  # 4 reached the end
    found = rungs.checks(few, curves, "asha")
    assert found == [rungs.RungCheck(2, 4, None)] and rungs.warning(found, "asha") is None


def test_curves_come_from_flat_rows_by_iteration():
    history = {"a": [{"training_iteration": 1, "m": 0.5}, {"training_iteration": 2, "m": None}]}
    assert rungs.curves_from(history, "m") == {"a": {1: 0.5, 2: None}}
    assert rungs.curves_from(history, None) == {}


# ---- where they show: analyze (table and JSON), report, the run's summary ----------------------


def _results(trials, curves, scheduler="asha", **summary):
    from pathlib import Path

    from tune_app.rundir.read import ExperimentResults

    history = {
        t: [{"training_iteration": k, "m": v} for k, v in sorted(points.items())]
        for t, points in curves.items()
    }
    return ExperimentResults(
        summary=RunSummary("e", "m", "max", 1.0, trials=trials, **summary),
        folder=Path("e"), searched=sorted({k for t in trials for k in t.params}),
        scheduler=scheduler, stop={}, history=history,
    )  # fmt: skip


def test_analyze_and_report_show_the_rungs_check_and_the_expected_best(tmp_path):
    import json

    from tune_app.readback import analyze, report

    exp = _results(*_asha_run(predictive=False))
    text = analyze.render([exp], "table")
    assert "expected best of n trials: 1: " in text and "10 (this run): 9" in text
    assert "iteration 2: -1.00 (6 trials)" in text
    assert "early results did not predict late ones here" in text
    data = json.loads(analyze.render([exp], "json"))[0]
    assert data["expected_best"]["count"] == 10 and len(data["expected_best"]["curve"]) == 10
    assert data["expected_best"]["curve"][-1]["mean"] == 9.0
    (rung,) = data["early_stopping"]
    assert rung == {"rung": 2, "trials": 6, "spearman": -1.0, "bound": 0.5, "predicts": False}
    page = report.write([exp], tmp_path / "report.html", "e").read_text()
    assert "Did early stopping judge well?" in page and "grace_period above 2" in page
    # What a rung at the bound keeps is said for the run's own reduction factor, where run.json
    # records it, and as an example of 3 where it does not.
    assert "with a reduction factor of 3, a rung at 0.5 keeps" in page
    halving = replace(exp, reduction_factor=2.0)
    page = report.write([halving], tmp_path / "halving.html", "e").read_text()
    assert "with this run&#39;s reduction factor of 2, a rung at 0.5 keeps the trial" in page
    assert "Enough trials?" in page and (tmp_path / "report_files" / "e-expected-best.png").exists()
    fifo = _results(*_asha_run(predictive=True), scheduler="fifo")
    assert "Spearman" not in analyze.render([fifo], "table")


def test_analyze_and_report_show_each_configurations_chance_and_the_lcb_ranking(tmp_path):
    import json

    from tune_app.readback import analyze, report

    lucky, steady = [0.1, 0.1, 0.1, 0.1, 3.0], [0.6, 0.62, 0.61, 0.59, 0.6]
    trials = [
        _trial(i * 5 + s, v, 3, params={"x": x, "seed": s})
        for i, (x, values) in enumerate([(1, lucky), (2, steady)])
        for s, v in enumerate(values)
    ]
    exp = _results(trials, {}, "fifo", seeds=list(range(5)), select="lcb")
    text = analyze.render([exp], "table")
    assert "best: x=2: m = 0.604 (mean of 5 seeds, P(best) " in text
    assert "ranked by its lcb 0.596" in text and "  1. x=2: 0.604" in text
    assert "expected best of n configurations: 1: " in text
    data = json.loads(analyze.render([exp], "json"))[0]
    assert data["select"] == "lcb" and data["configurations"][0]["params"] == {"x": 2}
    assert data["configurations"][1]["chance_best"] > data["configurations"][0]["chance_best"]
    page = report.write([exp], tmp_path / "report.html", "e").read_text()
    assert "<th>P(best)</th><th>lcb</th>" in page and "Ranked by lcb" in page


# ---- one small run each: select: lcb through `best`, the rungs' check at the run's end ---------

LCB_SPEC = """
metric: score
mode: max
select: lcb
experiments:
  lottery:
    run: seeded:train
    seeds: 3
    config: {x: {grid_search: [1, 3]}}
"""

# Trials x=1..6 climb at iterations 1 and 2, so ASHA (rungs at 1 and 2) keeps them all, then end
# in the reverse order; x=7 and x=8 fall below the median at iteration 1 and are stopped there.
REVERSING = """
from ray import tune


def train(config):
    x = config["x"]
    for i in range(1, 5):
        value = (-100.0 if x > 6 else float(x)) if i <= 2 else -float(x)
        tune.report({"score": value})
"""

ASHA_SPEC = """
metric: score
mode: max
scheduler: {type: asha, grace_period: 1, reduction_factor: 2, max_t: 4}
max_concurrent_trials: 1
experiments:
  e:
    run: reversing:train
    config: {x: {grid_search: [1, 2, 3, 4, 5, 6, 7, 8]}}
"""


def test_select_lcb_ranks_the_steady_configuration_first_and_best_exports_it(
    ray_session, cli, tmp_path
):
    import json

    import yaml

    from .conftest import user_module

    # x=1 scores 10, 0, 0 on seeds 0, 1, 2 (mean 3.33); x=3 scores 3 on every seed.
    user_module("seeded.py", tmp_path)
    (tmp_path / "spec.yaml").write_text(LCB_SPEC)
    assert cli("run", tmp_path / "spec.yaml", "--storage-path", tmp_path / "o", "-q").code == 0
    summary = json.loads((tmp_path / "o" / "lottery" / "summary.json").read_text())
    assert summary["select"] == "lcb" and summary["best"]["params"]["x"] == 3
    assert [c["params"]["x"] for c in summary["configurations"]] == [3, 1]
    assert summary["configurations"][1]["score"] > summary["configurations"][0]["score"]
    shown = json.loads(cli("analyze", tmp_path / "o", "--format", "json").out)[0]
    assert shown["configurations"][0]["params"] == {"x": 3}
    best = cli("best", tmp_path / "o" / "lottery").out
    assert yaml.safe_load(best)["experiments"]["lottery-best"]["config"] == {"x": 3}
    assert "ranked by its lcb 3" in best


def test_a_run_whose_rungs_did_not_predict_says_so_at_its_end(ray_session, cli, tmp_path):
    import json

    (tmp_path / "reversing.py").write_text(REVERSING)
    (tmp_path / "spec.yaml").write_text(ASHA_SPEC)
    result = cli("run", tmp_path / "spec.yaml", "--storage-path", tmp_path / "o")
    assert result.code == 0
    summary = json.loads((tmp_path / "o" / "e" / "summary.json").read_text())
    (rung,) = summary["early_stopping"]
    assert rung == {"rung": 1, "trials": 6, "spearman": -1.0, "bound": 0.5, "predicts": False}
    assert any("early results did not predict late ones here" in n for n in summary["notes"])
    assert "iteration 1: -1.00 (6 trials)" in result.out
    assert "note: early stopping: early results did not predict late ones" in result.out


# x=1 runs its 30 iterations; x=2 reports 9 and then waits, saying so in a file; x=3 starts once
# x=1 is done, waits for that file and raises, so `fail_fast` stops x=2 at iteration 9: the
# run's end, not a rung. ASHA stops neither: at the rung they share (5) they tie, whichever
# gets there first (x=2 first with a better score cut x=1 there), and x=1 is alone at 15.
CUT_BY_FAIL_FAST = """
import time
from pathlib import Path

from ray import tune


def train(config):
    x, said = config["x"], Path(config["folder"]) / "x2_at_9"
    if x == 3:
        while not said.exists():
            time.sleep(0.05)
        raise ValueError("stop the run")
    for i in range(1, 31 if x == 1 else 10):
        tune.report({"score": float(i if i <= 5 else x * i)})
    if x == 2:
        said.touch()
        time.sleep(600)
"""

FAIL_FAST_SPEC = """
metric: score
mode: max
scheduler: {type: asha, grace_period: 5, reduction_factor: 3, max_t: 30}
max_concurrent_trials: 2
experiments:
  e:
    run: cut:train
    fail_fast: true
    config: {x: {grid_search: [1, 2, 3]}, folder: FOLDER}
"""


@pytest.mark.slow  # three trials in turn, one of 30 iterations; the rules are checked below
def test_a_trial_the_run_end_stopped_is_no_rung(ray_session, cli, tmp_path):
    """Tune stops every live trial when `fail_fast` (or `time_budget_s`) ends the run, with no
    callback: such a trial is not a scheduler's stop, and its iteration is no rung."""
    import json

    from tune_app.rundir.layout import journaled_ends

    (tmp_path / "cut.py").write_text(CUT_BY_FAIL_FAST)
    (tmp_path / "spec.yaml").write_text(FAIL_FAST_SPEC.replace("FOLDER", str(tmp_path)))
    cli("run", tmp_path / "spec.yaml", "--storage-path", tmp_path / "o")
    summary = json.loads((tmp_path / "o" / "e" / "summary.json").read_text())
    by_x = {t["params"]["x"]: t for t in summary["trials"]}
    assert (by_x[2]["status"], by_x[2]["iterations"]) == ("TERMINATED", 9)  # cut mid-run
    assert by_x[3]["status"] == "ERROR" and by_x[1]["iterations"] == 30
    assert not any(t["stopped_early"] for t in summary["trials"])
    assert summary["early_stopping"] == []  # iteration 9 is no rung
    ended = journaled_ends(tmp_path / "o" / "e")
    assert ended == {by_x[1]["trial_id"], by_x[3]["trial_id"]}


@pytest.mark.parametrize(
    "stopped_by_tune, status, iterations, last, expected",
    [
        pytest.param(True, "TERMINATED", 2, {}, True, id="the-scheduler-stopped-it"),
        pytest.param(False, "TERMINATED", 2, {}, False, id="the-run-end-stopped-it"),
        pytest.param(True, "ERROR", 2, {}, False, id="it-failed"),
        pytest.param(True, "TERMINATED", 2, {"epoch": 2}, False, id="its-stop-criteria"),
        pytest.param(True, "TERMINATED", 10, {}, False, id="it-ran-to-the-end"),
    ],
)
def test_only_the_schedulers_stops_are_early_stops(
    stopped_by_tune, status, iterations, last, expected
):
    from tune_app.rundir.records import stopped_early

    found = stopped_early("asha", status, iterations, 10, last, {"epoch": 2}, stopped_by_tune)
    assert found is expected


def test_a_curve_of_many_trials_is_computed_at_log_spaced_n():
    scores = list(np.random.default_rng(1).normal(size=5000))
    found = budget.BudgetCurve("trials", budget.expected_best(scores, "max"))
    ns = [p.n for p in found.points]
    assert found.count == 5000 and len(ns) <= budget.EVERY_N + 20 and ns == sorted(set(ns))
    assert {1, 2, 5, 10, 100, 1000, 5000} <= set(ns)
    assert found.points[-1].mean == pytest.approx(max(scores))
    at_two = next(p for p in found.points if p.n == 2)
    # E[max of 2 draws without replacement] = mean over pairs of their max.
    ordered = np.sort(scores)
    pairs = sum(ordered[i] * i for i in range(len(ordered))) / (
        len(ordered) * (len(ordered) - 1) / 2
    )
    assert at_two.mean == pytest.approx(pairs)
    assert found.gain() is not None


@pytest.mark.parametrize("factor", [2, 3, 4])
def test_the_chance_a_rung_keeps_the_best_is_what_the_docs_say(factor):
    """At a Spearman of 0 a rung keeps the best as often as it keeps any trial (its share); with
    a factor of 3, about 3 times in 4 at 0.5 and 24 in 25 at 0.8 (docs/results.md)."""
    assert rungs.chance_best_kept(0.0, factor) == pytest.approx((27 // factor) / 27, abs=0.02)
    assert rungs.chance_best_kept(0.5, factor) > rungs.chance_best_kept(0.0, factor)
    if factor == 3:
        assert rungs.chance_best_kept(0.5, 3) == pytest.approx(0.75, abs=0.03)
        assert rungs.chance_best_kept(0.8, 3) == pytest.approx(0.96, abs=0.02)
