"""Statistics over seeds say what they are: under 5 seeds the interval is the seeds' range with
its count, not a "95% bootstrap interval"; a configuration whose seeds a scheduler stopped at
different budgets is marked so in `analyze`, `report` and the summary; one seed's score is not
called an aggregate."""

from __future__ import annotations

from pathlib import Path

from tune_app import analyze, report, seeds
from tune_app.rundir.read import ExperimentResults
from tune_app.rundir.records import FINISHED, RunSummary, TrialOutcome


def _trial(i: int, x: int, seed: int, score: float | None, iterations: int) -> TrialOutcome:
    return TrialOutcome(
        trial_id=f"aaaaa_{i:05d}", status=FINISHED, config={"x": x, "seed": seed}, score=score,
        iterations=iterations, params={"x": x, "seed": seed},
    )  # fmt: skip


def _experiment(trials: list[TrialOutcome], n_seeds: int) -> ExperimentResults:
    summary = RunSummary(
        "e", "score", "max", 1.0, trials=trials, seeds=list(range(n_seeds)), aggregate="iqm"
    )
    return ExperimentResults(
        summary=summary, folder=Path("e"), searched=["x", "seed"], scheduler="asha", stop={},
        history={t.trial_id: [] for t in trials},
    )  # fmt: skip


def test_under_five_seeds_the_interval_is_the_range_and_says_so():
    two = seeds.group([_trial(0, 1, 0, 3.0, 6), _trial(1, 1, 1, 7.0, 6)], "mean")[0]
    assert two.interval == (3.0, 7.0) and two.interval_is_range
    assert two.interval_text() == "[3, 7] (range of 2 seeds)"
    five = seeds.group([_trial(i, 1, i, float(i), 6) for i in range(5)], "mean")[0]
    assert not five.interval_is_range and five.interval_text().endswith("(95% bootstrap)")


def test_mixed_budgets_are_marked_in_analyze_report_and_the_summary(capsys):
    trials = [_trial(0, 1, 0, 0.9, 6), _trial(1, 1, 1, 0.4, 1), _trial(2, 2, 0, 0.5, 6)]
    trials.append(_trial(3, 2, 1, None, 0))  # never started: not a budget
    exp = _experiment(trials, 2)
    top = exp.summary.configurations()[0]
    assert top.mixed_budgets and top.budgets_text == "mixed budgets: 1-6 iterations"
    assert not exp.summary.configurations()[1].mixed_budgets
    text = analyze.render([exp], "table")
    # x=2 has one scored seed: no chance of its own, so x=1 is best in every draw
    assert "(iqm of 2 seeds, mixed budgets: 1-6 iterations, P(best) 100%)" in text
    assert "[0.4, 0.9] (range of 2 seeds)" in text and "95% bootstrap interval:" not in text
    assert analyze.configuration_cells(exp)[0]["seeds"] == "2, mixed budgets: 1-6 iterations"
    header = report._best(exp)
    assert header is not None and "mixed budgets: 1-6 iterations" in header.scope

    from tune_app.console import print_summaries
    from tune_app.plan import make_plan
    from tune_app.spec.resolve import loads

    spec = "e:\n  run: my_func\n  config: {alpha: 1, beta: 1}\n"
    plan = make_plan(loads(spec, Path("s.yaml")), cpus=2)
    print_summaries(plan, [exp.summary], width=200)
    assert "iqm of 2 seeds, mixed budgets: 1-6 iterations" in capsys.readouterr().out


def test_one_seeds_score_is_not_called_an_aggregate():
    exp = _experiment([_trial(0, 1, 0, 0.9, 6), _trial(1, 1, 1, None, 0)], 2)
    text = analyze.render([exp], "table")
    assert "(1 seed only)" in text and "of 1 seeds" not in text
    header = report._best(exp)
    assert header is not None and header.scope.startswith("1 seed only")


def test_trials_that_never_started_are_no_made_up_configuration():
    started = [_trial(0, 1, 0, 0.9, 6), _trial(1, 1, 1, 0.7, 6)]
    waiting = [
        TrialOutcome(
            trial_id=f"aaaaa_{i:05d}",
            status="UNFINISHED",
            config={},
            score=None,
            iterations=0,
            params={"x": None, "seed": None},
        )  # fmt: skip
        for i in range(2, 24)
    ]
    exp = _experiment(started + waiting, 2)
    (only,) = exp.summary.configurations()
    assert only.params == {"x": 1}
    text = analyze.render([exp], "table")
    assert "x=-" not in text and "None: -" not in text
    assert "(22 trials never started: no configuration was drawn for them)" in text
